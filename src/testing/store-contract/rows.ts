import { beforeEach, describe, expect, it } from 'vitest';

import { newTaskId } from '../../core/ids.js';
import type { TaskStore } from '../../core/store.js';
import type { TaskStatus } from '../../core/task.js';
import type { FakeClock } from '../fake-clock.js';
import { ALICE, BOB, ERROR, expectStoreError, RESULT, type StoreContractContext } from './harness.js';

/**
 * The rows part of the TaskStore contract (port `TaskRows`, `core/ports/rows.ts`): create, read, the conditional
 * status write and its events, statusMessage writes, the list and the browse. Registered inside
 * `describeTaskStoreContract`, which owns the store's lifecycle.
 */
export function describeRowsContract(ctx: StoreContractContext): void {
  const { t0: T0, newTask, create, eventsSince, complete, moveTo } = ctx;
  let store: TaskStore;
  let clock: FakeClock;
  beforeEach(() => {
    store = ctx.store();
    clock = ctx.clock();
  });

  describe('create', () => {
    it('stores a working task with attempt 0, seq and expiresAt = createdAt + ttlMs, readable at once', async () => {
      const input = newTask({ progressToken: 7, statusMessage: 'queued', idempotencyKey: 'k1', requestDigest: 'd1' });
      const record = await store.create(input);
      const { idempotencyKey, requestDigest, leaseMs: _leaseMs, ...rest } = input;
      expect(record).toMatchObject({ ...rest, idempotencyKey, requestDigest, status: 'working', attempt: 0, leaseExpiresAt: null });
      expect(record.lastUpdatedAt).toBe(input.createdAt);
      expect(record.expiresAt).toBe(input.createdAt + 60_000);
      expect(Number.isSafeInteger(record.seq) && record.seq > 0).toBe(true);
      expect(await store.get(input.taskId, { ownerKey: ALICE })).toEqual(record);
    });

    it('startNow counts the first run at creation: attempt 1 and an attempt event after the created one', async () => {
      const before = await store.lastEventSeq();
      const record = await create({ startNow: true, leaseOwner: 'i-a', leaseMs: 30_000 });
      expect(record).toMatchObject({ attempt: 1, leaseOwner: 'i-a', leaseExpiresAt: T0 + 30_000 });
      expect((await store.getUnscoped(record.taskId))?.attempt).toBe(1);
      const events = (await store.readEventsAfter(before, 10)).filter((event) => event.taskId === record.taskId);
      expect(events.map((event) => [event.kind, event.status, event.payload])).toEqual([
        ['created', 'working', null],
        ['attempt', 'working', { attempt: 1, leaseOwner: 'i-a' }],
      ]);
    });

    it('keeps JSON fields and the progress token type; ttlMs null never expires', async () => {
      const record = await create({ progressToken: 'tok-1', ttlMs: null, arguments: { deep: { a: [{ b: 'ü' }] } } });
      expect(record).toMatchObject({ progressToken: 'tok-1', ttlMs: null, expiresAt: null, arguments: { deep: { a: [{ b: 'ü' }] } } });
      expect(record.idempotencyKey).toBeNull();
      clock.set(Number.MAX_SAFE_INTEGER);
      expect(await store.expireDue(10)).toEqual([]);
      expect(await store.get(record.taskId, { ownerKey: ALICE })).toEqual(record);
    });

    it('assigns strictly increasing seq and appends one created event each', async () => {
      const start = await store.lastEventSeq();
      const records = [];
      for (let i = 0; i < 5; i += 1) records.push(await create());
      const seqs = records.map((r) => r.seq);
      expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
      expect(new Set(seqs).size).toBe(5);
      const events = await eventsSince(start);
      expect(events.map((e) => [e.taskId, e.kind, e.status])).toEqual(records.map((r) => [r.taskId, 'created', 'working']));
    });

    it('rejects a second idempotency key of the same owner as a conflict, not of another owner', async () => {
      await create({ idempotencyKey: 'same', requestDigest: 'a' });
      await expectStoreError(create({ idempotencyKey: 'same', requestDigest: 'b' }), 'conflict');
      await expect(create({ idempotencyKey: 'same', ownerKey: BOB })).resolves.toMatchObject({ ownerKey: BOB });
      await expect(Promise.all([create(), create()])).resolves.toHaveLength(2);
    });

    it('a failing create among concurrent ones rejects alone; the others commit, events stay gap-free', async () => {
      const start = await store.lastEventSeq();
      const inputs = Array.from({ length: 10 }, (_, i) => newTask({ idempotencyKey: i === 9 ? 'k0' : `k${i}` }));
      const settled = await Promise.allSettled(inputs.map((t) => store.create(t)));
      expect(settled.filter((s) => s.status === 'rejected')).toHaveLength(1);
      const rejected = settled[9] as PromiseRejectedResult;
      await expectStoreError(Promise.reject(rejected.reason), 'conflict');
      for (const t of inputs.slice(0, 9)) expect(await store.getUnscoped(t.taskId)).toBeDefined();
      expect(await store.getUnscoped(inputs[9]!.taskId)).toBeUndefined();
      const seqs = (await eventsSince(start)).map((e) => e.seq);
      expect(seqs).toEqual(Array.from({ length: 9 }, (_, i) => start + 1 + i));
    });
  });

  describe('get', () => {
    it('answers undefined for a missing id, another owner or another generation', async () => {
      const { taskId } = await create({ generation: 'v1', protocolVersion: '2025-11-25' });
      expect(await store.get(taskId, { ownerKey: ALICE })).toBeDefined();
      expect(await store.get(taskId, { ownerKey: ALICE, generation: 'v1' })).toBeDefined();
      expect(await store.get(taskId, { ownerKey: ALICE, generation: 'v2' })).toBeUndefined();
      expect(await store.get(taskId, { ownerKey: BOB })).toBeUndefined();
      expect(await store.get(newTaskId(), { ownerKey: ALICE })).toBeUndefined();
      expect(await store.getUnscoped(newTaskId())).toBeUndefined();
    });

    it('returns a task past its expiresAt until expireDue deletes it (read visibility is judged above the store)', async () => {
      const record = await create({ ttlMs: 1_000 });
      clock.set(T0 + 1_000);
      expect(await store.get(record.taskId, { ownerKey: ALICE })).toEqual(record);
      expect(await store.list({ ownerKey: ALICE, generation: 'v2' }, { afterSeq: 0, limit: 10 })).toEqual([record]);
      expect(await store.expireDue(10)).toEqual([record.taskId]);
      expect(await store.get(record.taskId, { ownerKey: ALICE })).toBeUndefined();
      expect(await store.getUnscoped(record.taskId)).toBeUndefined();
    });
  });

  describe('transition', () => {
    it('goes working ⇄ input_required → completed, storing the outcome verbatim with a {from, to} event', async () => {
      const { taskId } = await create();
      const start = await store.lastEventSeq();
      clock.advance(10);
      expect(await store.transition(taskId, { to: 'input_required', releaseLease: true, now: clock.now() })).toMatchObject({
        status: 'input_required',
        lastUpdatedAt: T0 + 10,
      });
      expect(await store.transition(taskId, { to: 'working', now: clock.now() })).toMatchObject({ status: 'working' });
      expect(await store.getOutcome(taskId)).toBeUndefined();
      expect(await complete(taskId)).toMatchObject({ status: 'completed' });
      expect(await store.getOutcome(taskId)).toEqual(RESULT);
      const events = await eventsSince(start);
      expect(events.map((e) => [e.kind, e.status, e.payload])).toEqual([
        ['status', 'input_required', { from: 'working', to: 'input_required' }],
        ['status', 'working', { from: 'input_required', to: 'working' }],
        ['status', 'completed', { from: 'working', to: 'completed' }],
      ]);
    });

    it('endedAudit: the task.ended entry is written in the same write, and only when the transition applies (issue 25)', async () => {
      const audited = async (taskId: string) => (await store.listAudit({ limit: 1000 })).filter((entry) => entry.taskId === taskId);
      const { taskId, ownerKey, toolName } = await create({ leaseOwner: 'i-a', leaseMs: 30_000 });
      // Negative control: a transition that does not apply (another lease holder) writes no entry.
      expect(
        await store.transition(taskId, { to: 'completed', outcome: RESULT, leaseOwner: 'i-b', releaseLease: true, now: clock.now(), endedAudit: {} }),
      ).toBeUndefined();
      expect(await audited(taskId)).toEqual([]);
      const at = clock.now();
      expect(
        await store.transition(taskId, { to: 'completed', outcome: RESULT, leaseOwner: 'i-a', releaseLease: true, now: at, endedAudit: {} }),
      ).toMatchObject({
        status: 'completed',
      });
      expect(await audited(taskId)).toEqual([
        {
          seq: expect.any(Number),
          at,
          kind: 'task.ended',
          ownerKey,
          scopes: null,
          tool: toolName,
          taskId,
          argumentsDigest: null,
          outcome: 'completed',
          detail: null,
        },
      ]);
      // A runtime failure's reason is the detail; a terminal task does not change again, so no second entry.
      const other = await create();
      await store.transition(other.taskId, { to: 'failed', outcome: ERROR, now: clock.now(), endedAudit: { reason: 'runtime_limit' } });
      await store.transition(other.taskId, { to: 'failed', outcome: ERROR, now: clock.now(), endedAudit: { reason: 'again' } });
      expect((await audited(other.taskId)).map((entry) => [entry.outcome, entry.detail])).toEqual([['failed', { reason: 'runtime_limit' }]]);
      // Without endedAudit nothing is audited.
      const plain = await create();
      await store.transition(plain.taskId, { to: 'cancelled', now: clock.now() });
      expect(await audited(plain.taskId)).toEqual([]);
    });

    it('stores a JSON-RPC error of a failed task verbatim', async () => {
      const { taskId } = await create();
      expect(await store.transition(taskId, { to: 'failed', outcome: ERROR, now: clock.now() })).toMatchObject({ status: 'failed' });
      expect(await store.getOutcome(taskId)).toEqual(ERROR);
    });

    it('keeps the statusMessage on undefined, clears it on null, replaces it on a string', async () => {
      const { taskId } = await create({ statusMessage: 'start' });
      const to = async (status: TaskStatus, statusMessage?: string | null) =>
        (await store.transition(taskId, { to: status, statusMessage, now: clock.now() }))?.statusMessage;
      expect(await to('input_required')).toBe('start');
      expect(await to('working', null)).toBeNull();
      expect(await to('input_required', 'need input')).toBe('need input');
    });

    it.each(['completed', 'failed', 'cancelled'] as const)('never changes a %s task, even when from lists it', async (terminal) => {
      const { taskId } = await create();
      const final = await moveTo(taskId, terminal);
      const outcome = await store.getOutcome(taskId);
      const start = await store.lastEventSeq();
      for (const to of ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const) {
        const attempt = { to, outcome: to === 'completed' ? RESULT : to === 'failed' ? ERROR : undefined, now: clock.now() };
        expect(await store.transition(taskId, attempt)).toBeUndefined();
        expect(await store.transition(taskId, { ...attempt, from: [terminal] })).toBeUndefined();
      }
      expect(await store.getUnscoped(taskId)).toEqual(final);
      expect(await store.getOutcome(taskId)).toEqual(outcome);
      expect(await store.lastEventSeq()).toBe(start);
    });

    it('applies only when the current status is in from; a missing task answers undefined', async () => {
      const { taskId } = await create();
      expect(await store.transition(taskId, { to: 'cancelled', from: ['input_required'], now: clock.now() })).toBeUndefined();
      expect((await store.getUnscoped(taskId))?.status).toBe('working');
      expect(await store.transition(taskId, { to: 'cancelled', from: ['working'], now: clock.now() })).toMatchObject({ status: 'cancelled' });
      expect(await store.getOutcome(taskId)).toBeUndefined();
      expect(await store.transition(newTaskId(), { to: 'cancelled', now: clock.now() })).toBeUndefined();
    });

    it('with leaseOwner applies only while that instance holds the lease; releaseLease clears it', async () => {
      const { taskId } = await create({ leaseOwner: 'i-a', leaseMs: 30_000 });
      expect(await complete(taskId, { leaseOwner: 'i-b' })).toBeUndefined();
      expect(await store.getOutcome(taskId)).toBeUndefined();
      expect(await complete(taskId, { leaseOwner: 'i-a' })).toMatchObject({ status: 'completed', leaseOwner: null, leaseExpiresAt: null });
    });

    it('lets exactly one of a concurrent cancel and completion win', async () => {
      for (let round = 0; round < 20; round += 1) {
        const { taskId } = await create({ leaseOwner: 'i-a', leaseMs: 30_000 });
        const cancel = store.transition(taskId, { to: 'cancelled', releaseLease: true, now: clock.now() });
        const done = complete(taskId, { leaseOwner: 'i-a' });
        const [cancelled, completed] = round % 2 === 0 ? await Promise.all([cancel, done]) : (await Promise.all([done, cancel])).reverse();
        expect([cancelled, completed].filter((r) => r !== undefined)).toHaveLength(1);
        const final = await store.getUnscoped(taskId);
        expect(final?.status).toBe(cancelled ? 'cancelled' : 'completed');
        expect(await store.getOutcome(taskId)).toEqual(cancelled ? undefined : RESULT);
      }
    });

    it('rejects an outcome that does not fit the target status without writing', async () => {
      const { taskId } = await create();
      await expectStoreError(store.transition(taskId, { to: 'completed', now: clock.now() }), 'invalid');
      await expectStoreError(store.transition(taskId, { to: 'cancelled', outcome: RESULT, now: clock.now() }), 'invalid');
      await expectStoreError(store.transition(taskId, { to: 'failed', now: clock.now() }), 'invalid');
      expect((await store.getUnscoped(taskId))?.status).toBe('working');
    });
  });

  describe('getWithOutcome (issue 25)', () => {
    it('a terminal task comes with its outcome when it is small enough; not for a working task, another owner, or a larger one', async () => {
      const { taskId } = await create();
      expect(await store.getWithOutcome(taskId, { ownerKey: ALICE }, 1_000)).toEqual({ record: await store.get(taskId, { ownerKey: ALICE }) });
      await store.transition(taskId, { to: 'completed', outcome: RESULT, now: clock.now() });
      const read = await store.getWithOutcome(taskId, { ownerKey: ALICE }, 1_000);
      expect(read?.record).toEqual(await store.get(taskId, { ownerKey: ALICE }));
      expect(read?.outcome?.outcome).toEqual(await store.getOutcome(taskId));
      expect(read?.outcome?.chars).toBeGreaterThan(0);
      expect(await store.getWithOutcome(taskId, { ownerKey: BOB }, 1_000)).toBeUndefined();
      const small = await store.getWithOutcome(taskId, { ownerKey: ALICE }, (read?.outcome?.chars ?? 1) - 1);
      expect(small).toEqual({ record: read?.record });
      expect(await store.getWithOutcome('no-such-task', { ownerKey: ALICE }, 1_000)).toBeUndefined();
    });
  });

  describe('writeStatusMessages', () => {
    it('updates non-terminal tasks with one message event each and ignores terminal or missing ones', async () => {
      const [a, b, c] = await Promise.all([create(), create(), create()]);
      await store.transition(b!.taskId, { to: 'input_required', now: clock.now() });
      await moveTo(c!.taskId, 'cancelled');
      const start = await store.lastEventSeq();
      await store.writeStatusMessages([
        { taskId: a!.taskId, statusMessage: '50%', now: T0 + 5 },
        { taskId: b!.taskId, statusMessage: null, now: T0 + 6 },
        { taskId: c!.taskId, statusMessage: 'late', now: T0 + 7 },
        { taskId: newTaskId(), statusMessage: 'ghost', now: T0 + 8 },
      ]);
      expect(await store.getUnscoped(a!.taskId)).toMatchObject({ status: 'working', statusMessage: '50%', lastUpdatedAt: T0 + 5 });
      expect(await store.getUnscoped(b!.taskId)).toMatchObject({ status: 'input_required', statusMessage: null });
      expect((await store.getUnscoped(c!.taskId))?.statusMessage).toBeNull();
      const events = await eventsSince(start);
      expect(events.map((e) => [e.taskId, e.kind, e.status])).toEqual([
        [a!.taskId, 'message', 'working'],
        [b!.taskId, 'message', 'input_required'],
      ]);
    });
  });

  describe('list', () => {
    it('pages one owner’s tasks of one generation by seq; a row past its expiresAt stays until it is deleted', async () => {
      const mine = [];
      for (let i = 0; i < 5; i += 1) mine.push(await create({ ttlMs: i === 2 ? 500 : 60_000 }));
      await create({ ownerKey: BOB });
      await create({ generation: 'v1', protocolVersion: '2025-11-25' });
      clock.set(T0 + 500);
      const scope = { ownerKey: ALICE, generation: 'v2' as const };
      const ids = (page: readonly { taskId: string }[]) => page.map((t) => t.taskId);
      const first = await store.list(scope, { afterSeq: 0, limit: 2 });
      expect(ids(first)).toEqual([mine[0]!.taskId, mine[1]!.taskId]);
      const second = await store.list(scope, { afterSeq: first[1]!.seq, limit: 2 });
      expect(ids(second)).toEqual([mine[2]!.taskId, mine[3]!.taskId]);
      expect(ids(await store.list(scope, { afterSeq: second[1]!.seq, limit: 2 }))).toEqual([mine[4]!.taskId]);
      expect(await store.expireDue(10)).toEqual([mine[2]!.taskId]);
      expect(ids(await store.list(scope, { afterSeq: first[1]!.seq, limit: 2 }))).toEqual([mine[3]!.taskId, mine[4]!.taskId]);
      expect(await store.list({ ...scope, generation: 'v1' }, { afterSeq: 0, limit: 10 })).toHaveLength(1);
    });

    it('a walk returns every task exactly once while tasks are created during it', async () => {
      const created = [];
      for (let i = 0; i < 5; i += 1) created.push((await create()).taskId);
      const seen: string[] = [];
      let afterSeq = 0;
      for (;;) {
        const page = await store.list({ ownerKey: ALICE, generation: 'v2' }, { afterSeq, limit: 2 });
        if (page.length === 0) break;
        seen.push(...page.map((t) => t.taskId));
        afterSeq = page[page.length - 1]!.seq;
        if (created.length < 9) created.push((await create()).taskId, (await create()).taskId);
      }
      expect(seen).toEqual(created);
    });
  });

  describe('browse', () => {
    it('filters by owner, status, tool, creation time and text across generations, newest first, keyset-paged', async () => {
      const a = await create({ toolName: 'analyze_logs', statusMessage: 'Scanning <script>' });
      clock.set(T0 + 1_000);
      const b = await create({ generation: 'v1', protocolVersion: '2025-11-25' });
      const c = await create({ ownerKey: BOB });
      await complete(b.taskId);
      const ids = (page: readonly { taskId: string }[]) => page.map((t) => t.taskId);
      expect(ids(await store.browse({ ownerKey: ALICE, limit: 10 }))).toEqual([b.taskId, a.taskId]);
      expect(ids(await store.browse({ limit: 10 }))).toEqual([c.taskId, b.taskId, a.taskId]);
      expect(ids(await store.browse({ ownerKey: ALICE, statuses: ['completed'], limit: 10 }))).toEqual([b.taskId]);
      expect(ids(await store.browse({ ownerKey: ALICE, statuses: ['working', 'cancelled'], limit: 10 }))).toEqual([a.taskId]);
      expect(ids(await store.browse({ toolName: 'analyze_logs', limit: 10 }))).toEqual([a.taskId]);
      expect(ids(await store.browse({ createdFrom: T0 + 1_000, limit: 10 }))).toEqual([c.taskId, b.taskId]);
      expect(ids(await store.browse({ createdTo: T0 + 1_000, limit: 10 }))).toEqual([a.taskId]);
      expect(ids(await store.browse({ text: 'SCANNING <scr', limit: 10 }))).toEqual([a.taskId]);
      expect(ids(await store.browse({ text: c.taskId.slice(3, 12), limit: 10 }))).toEqual([c.taskId]);
      expect(ids(await store.browse({ text: '%', limit: 10 }))).toEqual([]);
      const first = await store.browse({ limit: 2 });
      await create();
      expect(ids(await store.browse({ beforeSeq: first[1]!.seq, limit: 2 }))).toEqual([a.taskId]);
    });
  });
}
