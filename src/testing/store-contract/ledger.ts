import { describe, expect, it } from 'vitest';

import { newTaskId } from '../../core/ids.js';
import type { IdempotencyClaim, NewOperation } from '../../core/ledger.js';
import type { TaskStore } from '../../core/store.js';
import type { NewTask } from '../../core/task.js';
import type { FakeClock } from '../fake-clock.js';

/** What the ledger part of the contract suite needs from the suite around it. */
export interface LedgerContractContext {
  store(): TaskStore;
  clock(): FakeClock;
  /** A new task of the default owner (not yet written), `overrides` applied. */
  newTask(overrides?: Partial<NewTask>): NewTask;
}

const ALICE = 'https://issuer.example|alice|acme';
const BOB = 'https://issuer.example|bob|acme';

/**
 * The idempotency-key and operation-ledger part of the {@link TaskStore} contract (issue 12): claims are atomic with
 * the task they create, scoped per owner and generation, lapse after their window on the store's clock and
 * outlive their task; operations open once per task and key and settle conditionally.
 */
export function describeLedgerContract(ctx: LedgerContractContext): void {
  const claimOf = (overrides: Partial<IdempotencyClaim> = {}): IdempotencyClaim => ({
    ownerKey: ALICE,
    generation: 'v2',
    key: 'key-1',
    toolName: 'slow_tool',
    requestDigest: 'digest-1',
    taskId: null,
    windowMs: 60_000,
    ...overrides,
  });

  describe('idempotency keys', () => {
    it('claims a key with its task in one write; a second claim gets the first one, and no second task', async () => {
      const first = ctx.newTask();
      const won = await ctx.store().claimIdempotencyKey(claimOf({ taskId: first.taskId }), first);
      expect(won.claimed).toBe(true);
      expect(won.claimed && won.task?.taskId).toBe(first.taskId);
      const second = ctx.newTask();
      const lost = await ctx.store().claimIdempotencyKey(claimOf({ taskId: second.taskId, requestDigest: 'other' }), second);
      expect(lost).toMatchObject({ claimed: false, existing: { taskId: first.taskId, requestDigest: 'digest-1', toolName: 'slow_tool' } });
      expect(await ctx.store().getUnscoped(second.taskId)).toBeUndefined();
      expect(await ctx.store().findIdempotencyKey({ ownerKey: ALICE, generation: 'v2' }, 'key-1')).toMatchObject({
        taskId: first.taskId,
        expiresAt: ctx.clock().now() + 60_000,
      });
    });

    it('of concurrent claims of one key exactly one wins', async () => {
      const tasks = Array.from({ length: 8 }, () => ctx.newTask());
      const results = await Promise.all(tasks.map((task) => ctx.store().claimIdempotencyKey(claimOf({ taskId: task.taskId }), task)));
      expect(results.filter((r) => r.claimed)).toHaveLength(1);
      const created = await Promise.all(tasks.map((task) => ctx.store().getUnscoped(task.taskId)));
      expect(created.filter(Boolean)).toHaveLength(1);
    });

    it('scopes keys per owner and per generation', async () => {
      expect((await ctx.store().claimIdempotencyKey(claimOf())).claimed).toBe(true);
      expect((await ctx.store().claimIdempotencyKey(claimOf({ ownerKey: BOB }))).claimed).toBe(true);
      expect((await ctx.store().claimIdempotencyKey(claimOf({ generation: 'v1' }))).claimed).toBe(true);
      expect((await ctx.store().claimIdempotencyKey(claimOf())).claimed).toBe(false);
      expect(await ctx.store().findIdempotencyKey({ ownerKey: BOB, generation: 'v1' }, 'key-1')).toBeUndefined();
    });

    it('lapses after its window on the store clock and may then be claimed again; it outlives its task', async () => {
      const task = ctx.newTask({ ttlMs: 1_000 });
      await ctx.store().claimIdempotencyKey(claimOf({ taskId: task.taskId }), task);
      ctx.clock().advance(2_000);
      await ctx.store().expireDue(100);
      expect(await ctx.store().getUnscoped(task.taskId)).toBeUndefined();
      expect(await ctx.store().findIdempotencyKey({ ownerKey: ALICE, generation: 'v2' }, 'key-1')).toMatchObject({ taskId: task.taskId });
      ctx.clock().advance(60_000);
      expect(await ctx.store().findIdempotencyKey({ ownerKey: ALICE, generation: 'v2' }, 'key-1')).toBeUndefined();
      const again = await ctx.store().claimIdempotencyKey(claimOf({ requestDigest: 'digest-2' }));
      expect(again.claimed).toBe(true);
      expect(await ctx.store().findIdempotencyKey({ ownerKey: ALICE, generation: 'v2' }, 'key-1')).toMatchObject({ requestDigest: 'digest-2', taskId: null });
    });
  });

  describe('operation ledger', () => {
    const opOf = (overrides: Partial<NewOperation> = {}): NewOperation => ({
      operationId: newTaskId(),
      key: 'publish:reports/a.md',
      taskId: 'task-1',
      ownerKey: ALICE,
      toolName: 'publish_report',
      effect: 'git.commit',
      target: 'repo:reports/a.md',
      objectVersion: null,
      createdAt: ctx.clock().now(),
      ...overrides,
    });

    it('opens pending once per task and key (a re-run finds the first operation)', async () => {
      const first = await ctx.store().openOperation(opOf());
      expect(first).toMatchObject({ status: 'pending', receipt: null, effect: 'git.commit', objectVersion: null });
      const again = await ctx.store().openOperation(opOf({ objectVersion: 'abc' }));
      expect(again.operationId).toBe(first.operationId);
      expect(await ctx.store().getOperation(first.operationId)).toEqual(first);
    });

    it('settles conditionally: confirmed with a receipt is never reopened', async () => {
      const op = await ctx.store().openOperation(opOf());
      const confirmed = await ctx
        .store()
        .settleOperation(op.operationId, { status: 'confirmed', from: ['pending', 'unknown'], receipt: { commit: 'c0ffee' }, now: ctx.clock().now() + 5 });
      expect(confirmed).toMatchObject({ status: 'confirmed', receipt: { commit: 'c0ffee' }, updatedAt: ctx.clock().now() + 5 });
      expect(
        await ctx.store().settleOperation(op.operationId, { status: 'unknown', from: ['pending'], detail: 'late', now: ctx.clock().now() }),
      ).toBeUndefined();
      expect((await ctx.store().getOperation(op.operationId))?.status).toBe('confirmed');
      expect(await ctx.store().settleOperation('missing', { status: 'failed', from: ['pending'], now: 0 })).toBeUndefined();
    });

    it('lists by owner, task and status, oldest first', async () => {
      const a = await ctx.store().openOperation(opOf({ key: 'a' }));
      ctx.clock().advance(1);
      const b = await ctx.store().openOperation(opOf({ key: 'b', createdAt: ctx.clock().now() }));
      await ctx.store().openOperation(opOf({ key: 'c', ownerKey: BOB, taskId: 'task-2' }));
      await ctx.store().settleOperation(a.operationId, { status: 'unknown', from: ['pending'], detail: 'timeout', now: ctx.clock().now() });
      expect((await ctx.store().listOperations({ ownerKey: ALICE, limit: 10 })).map((o) => o.key)).toEqual(['a', 'b']);
      expect((await ctx.store().listOperations({ ownerKey: ALICE, statuses: ['unknown'], limit: 10 })).map((o) => o.operationId)).toEqual([a.operationId]);
      expect((await ctx.store().listOperations({ taskId: 'task-2', limit: 10 })).map((o) => o.ownerKey)).toEqual([BOB]);
      expect((await ctx.store().listOperations({ ownerKey: ALICE, statuses: ['pending'], limit: 1 })).map((o) => o.operationId)).toEqual([b.operationId]);
    });
  });

  describe('audit log', () => {
    const entry = (at: number, tool: string, ownerKey = ALICE) => ({
      at,
      kind: 'call' as const,
      ownerKey,
      scopes: 'tasks:write',
      tool,
      taskId: 't',
      argumentsDigest: 'd',
      outcome: 'task working',
      detail: { n: 1 },
    });

    it('appends in order, filters by time, tool and owner, and purges only entries older than its retention', async () => {
      const t = ctx.clock().now();
      await ctx.store().appendAudit([entry(t, 'a'), entry(t + 10, 'b')]);
      await ctx.store().appendAudit([entry(t + 20, 'a', BOB)]);
      const all = await ctx.store().listAudit({ limit: 10 });
      expect(all.map((e) => [e.tool, e.ownerKey])).toEqual([
        ['a', ALICE],
        ['b', ALICE],
        ['a', BOB],
      ]);
      expect(all[0]).toMatchObject({ scopes: 'tasks:write', detail: { n: 1 }, at: t });
      expect(all[1]!.seq).toBeGreaterThan(all[0]!.seq);
      expect((await ctx.store().listAudit({ since: t + 10, limit: 10 })).map((e) => e.tool)).toEqual(['b', 'a']);
      expect((await ctx.store().listAudit({ tool: 'a', ownerKey: BOB, limit: 10 })).length).toBe(1);
      expect(await ctx.store().purgeAudit(t + 10, 100)).toBe(1);
      expect((await ctx.store().listAudit({ limit: 10 })).map((e) => e.at)).toEqual([t + 10, t + 20]);
    });
  });
}
