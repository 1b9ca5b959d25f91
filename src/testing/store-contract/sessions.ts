import { beforeEach, describe, expect, it } from 'vitest';

import type { TaskStore } from '../../core/store.js';
import type { FakeClock } from '../fake-clock.js';
import { expectStoreError, RESULT, type StoreContractContext } from './harness.js';

/**
 * The sessions part of the TaskStore contract (port `SessionTables`, `core/ports/sessions.ts`): v1 sessions kept
 * next to the tasks and the tasks of a session. Registered inside `describeTaskStoreContract`, which owns the
 * store's lifecycle.
 */
export function describeSessionsContract(ctx: StoreContractContext): void {
  const { t0: T0, create, eventsSince, complete, moveTo } = ctx;
  let store: TaskStore;
  let clock: FakeClock;
  beforeEach(() => {
    store = ctx.store();
    clock = ctx.clock();
  });

  describe('session tasks', () => {
    it("a task of a v1 session names it in its created event; openSessionTasks lists the session's non-terminal tasks, oldest first, until they settle or are deleted", async () => {
      const before = await store.lastEventSeq();
      const first = await create({ generation: 'v1', sessionId: 's-1', ttlMs: 5_000 });
      const second = await create({ generation: 'v1', sessionId: 's-1' });
      const other = await create({ generation: 'v1', sessionId: 's-2' });
      const none = await create();
      const created = (await eventsSince(before)).filter((event) => event.kind === 'created');
      expect(created.map((event) => [event.taskId, event.payload])).toEqual([
        [first.taskId, { sessionId: 's-1' }],
        [second.taskId, { sessionId: 's-1' }],
        [other.taskId, { sessionId: 's-2' }],
        [none.taskId, null],
      ]);
      expect(await store.sessions.openSessionTasks('s-1', 10)).toEqual([first.taskId, second.taskId]);
      expect(await store.sessions.openSessionTasks('s-1', 1)).toEqual([first.taskId]);
      expect(await store.sessions.openSessionTasks('s-2', 10)).toEqual([other.taskId]);
      expect(await store.sessions.openSessionTasks('unknown', 10)).toEqual([]);
      await moveTo(first.taskId, 'input_required');
      await complete(second.taskId);
      expect(await store.sessions.openSessionTasks('s-1', 10)).toEqual([first.taskId]);
      clock.advance(5_001);
      expect(await store.expireDue(10)).toContain(first.taskId);
      expect(await store.sessions.openSessionTasks('s-1', 10)).toEqual([]);
    });
  });

  describe('sessions', () => {
    const session = (sessionId: string, lastSeenAt = T0) => ({
      sessionId,
      ownerKey: 'owner-a',
      protocolVersion: '2025-11-25',
      initialize: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'c', version: '1' } },
      createdAt: T0,
      lastSeenAt,
    });

    it('the server secret: the first record claimed holds for every later claim; a candidate function is called only while no record exists', async () => {
      let made = 0;
      const first = { mode: 'verifier' as const, salt: 'c2FsdA', verifier: 'dmVyaWZpZXI', createdAt: T0 };
      expect(
        await store.serverSecret.claimServerSecret(() => {
          made += 1;
          return first;
        }),
      ).toEqual(first);
      expect(made).toBe(1);
      // Every later start finds the record: its candidate (a slow hash) is never made.
      expect(
        await store.serverSecret.claimServerSecret(() => {
          made += 1;
          return { ...first, salt: 'b3RoZXI' };
        }),
      ).toEqual(first);
      expect(made).toBe(1);
      expect(await store.serverSecret.claimServerSecret({ mode: 'kept', secret: 'c2VjcmV0', createdAt: T0 + 1 })).toEqual(first);
    });

    it('keeps a session record verbatim and answers undefined for an unknown id', async () => {
      await store.sessions.putSession(session('s-1'));
      expect(await store.sessions.getSession('s-1')).toEqual(session('s-1'));
      expect(await store.sessions.getSession('s-unknown')).toBeUndefined();
    });

    it('existingSessions answers, in one call, which of the ids have a record', async () => {
      await store.sessions.putSession(session('s-a'));
      await store.sessions.putSession(session('s-b'));
      expect(await store.sessions.existingSessions(['s-a', 's-gone', 's-b', 's-\'quoted"'])).toEqual(new Set(['s-a', 's-b']));
      await store.sessions.deleteSession('s-a');
      expect(await store.sessions.existingSessions(['s-a', 's-b'])).toEqual(new Set(['s-b']));
      expect(await store.sessions.existingSessions([])).toEqual(new Set());
    });

    it('touch moves lastSeenAt forward only', async () => {
      await store.sessions.putSession(session('s-2'));
      await store.sessions.touchSession('s-2', T0 + 5_000);
      await store.sessions.touchSession('s-2', T0 + 1_000);
      expect((await store.sessions.getSession('s-2'))?.lastSeenAt).toBe(T0 + 5_000);
    });

    it("a create that requires its session (NewTask.requireSession) is written while the session's record exists, and refused with `gone` — nothing written — once it is deleted", async () => {
      await store.sessions.putSession(session('s-live'));
      const live = await create({ generation: 'v1', sessionId: 's-live', requireSession: true });
      expect(await store.getUnscoped(live.taskId)).toMatchObject({ taskId: live.taskId, status: 'working' });
      expect(await store.sessions.openSessionTasks('s-live', 10)).toEqual([live.taskId]);
      expect(await store.sessions.deleteSession('s-live')).toBe(true);
      const before = await store.lastEventSeq();
      const refused = ctx.newTask({ generation: 'v1', sessionId: 's-live', requireSession: true });
      await expectStoreError(store.create(refused), 'gone');
      expect(await store.getUnscoped(refused.taskId)).toBeUndefined();
      expect(await eventsSince(before)).toEqual([]);
      // Without requireSession the record is not consulted (a task of a session that was never recorded).
      expect(await create({ generation: 'v1', sessionId: 's-live' })).toMatchObject({ status: 'working' });
      // Also inside a batch of creates: only the one whose session is gone is refused.
      await store.sessions.putSession(session('s-other'));
      const [kept, gone] = await Promise.allSettled([
        create({ generation: 'v1', sessionId: 's-other', requireSession: true }),
        create({ generation: 'v1', sessionId: 's-live', requireSession: true }),
      ]);
      expect(kept).toMatchObject({ status: 'fulfilled', value: { status: 'working' } });
      expect(gone).toMatchObject({ status: 'rejected', reason: { code: 'gone' } });
    });

    it('a taken idempotency key is still a conflict for a create that requires its (existing) session', async () => {
      await store.sessions.putSession(session('s-key'));
      await create({ generation: 'v1', sessionId: 's-key', requireSession: true, idempotencyKey: 'k-1' });
      await expectStoreError(create({ generation: 'v1', sessionId: 's-key', requireSession: true, idempotencyKey: 'k-1' }), 'conflict');
    });

    it("a read that requires a session (TaskScope.requireSession) sees the task only while the session's record exists, terminal or not", async () => {
      await store.sessions.putSession(session('s-read'));
      const task = await create({ generation: 'v1', sessionId: 's-read' });
      const done = await create({ generation: 'v1', sessionId: 's-read' });
      await complete(done.taskId);
      const scope = { ownerKey: task.ownerKey, generation: 'v1' as const, requireSession: 's-read' };
      expect(await store.get(task.taskId, scope)).toMatchObject({ taskId: task.taskId });
      expect((await store.getWithOutcome(done.taskId, scope, 1_000))?.outcome?.outcome).toEqual(RESULT);
      await store.sessions.deleteSession('s-read');
      expect(await store.get(task.taskId, scope)).toBeUndefined();
      expect(await store.getWithOutcome(task.taskId, scope, 1_000)).toBeUndefined();
      expect(await store.getWithOutcome(done.taskId, scope, 1_000)).toBeUndefined();
      // The same reads without it are unchanged.
      expect(await store.getWithOutcome(done.taskId, { ownerKey: task.ownerKey, generation: 'v1' }, 1_000)).toMatchObject({ record: { status: 'completed' } });
    });

    it('reads issued together answer each one as it would alone: owner, generation, outcome limit and session are per read (issue 25: PostgreSQL merges them into one statement)', async () => {
      await store.sessions.putSession(session('s-live'));
      await store.sessions.putSession(session('s-gone'));
      const working = await create({ generation: 'v1', sessionId: 's-live' });
      const done = await create({ generation: 'v1', sessionId: 's-live' });
      await complete(done.taskId);
      const v2 = await create();
      await store.sessions.deleteSession('s-gone');
      const owner = working.ownerKey;
      const chars = (await store.getWithOutcome(done.taskId, { ownerKey: owner }, 1_000))?.outcome?.chars ?? 0;
      expect(chars).toBeGreaterThan(0);
      const reads: Array<[string, Parameters<TaskStore['getWithOutcome']>[1], number]> = [
        [working.taskId, { ownerKey: owner, generation: 'v1', requireSession: 's-live' }, 1_000],
        [done.taskId, { ownerKey: owner, generation: 'v1', requireSession: 's-live' }, 1_000],
        [done.taskId, { ownerKey: owner }, chars - 1],
        [done.taskId, { ownerKey: owner, generation: 'v1', requireSession: 's-gone' }, 1_000],
        [done.taskId, { ownerKey: 'someone-else' }, 1_000],
        [done.taskId, { ownerKey: owner, generation: 'v2' }, 1_000],
        [v2.taskId, { ownerKey: v2.ownerKey, generation: 'v2' }, 1_000],
        ['no-such-task', { ownerKey: owner }, 1_000],
        [done.taskId, { ownerKey: owner, generation: 'v1', requireSession: 's-live' }, 1_000],
      ];
      const alone = [];
      for (const [taskId, scope, limit] of reads) alone.push(await store.getWithOutcome(taskId, scope, limit));
      // What each read answers alone: the test's expectations, so a merged read that mixed up scopes cannot pass.
      expect(alone.map((read) => (read === undefined ? 'none' : read.outcome ? `${read.record.taskId}+outcome` : read.record.taskId))).toEqual([
        working.taskId,
        `${done.taskId}+outcome`,
        done.taskId,
        'none',
        'none',
        'none',
        v2.taskId,
        'none',
        `${done.taskId}+outcome`,
      ]);
      expect(await Promise.all(reads.map(([taskId, scope, limit]) => store.getWithOutcome(taskId, scope, limit)))).toEqual(alone);
    });

    it('delete ends a session once; pruning takes only sessions idle since before the cutoff', async () => {
      await store.sessions.putSession(session('s-3'));
      expect(await store.sessions.deleteSession('s-3')).toBe(true);
      expect(await store.sessions.deleteSession('s-3')).toBe(false);
      expect(await store.sessions.getSession('s-3')).toBeUndefined();
      await store.sessions.putSession(session('s-old', T0));
      await store.sessions.putSession(session('s-new', T0 + 10_000));
      expect(await store.sessions.deleteIdleSessions(T0 + 1, 100)).toBe(1);
      expect(await store.sessions.getSession('s-old')).toBeUndefined();
      expect(await store.sessions.getSession('s-new')).toBeDefined();
    });
  });
}
