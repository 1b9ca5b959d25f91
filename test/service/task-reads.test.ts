import { describe, expect, it } from 'vitest';

import { newTaskId } from '../../src/core/ids.js';
import type { NewTask } from '../../src/core/task.js';
import { jsonCharsUpTo, TaskReads } from '../../src/service/task-reads.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { describeOnBothStores } from '../helpers/both-stores.js';

const T0 = Date.UTC(2026, 0, 1);
const ALICE = 'https://issuer.example|alice|acme';

function task(clock: FakeClock, overrides: Partial<NewTask> = {}): NewTask {
  return {
    taskId: newTaskId(),
    ownerKey: ALICE,
    generation: 'v2',
    protocolVersion: '2026-07-28',
    toolName: 'echo',
    arguments: {},
    clientCapabilities: {},
    progressToken: null,
    statusMessage: null,
    createdAt: clock.now(),
    ttlMs: 60_000,
    pollIntervalMs: 500,
    leaseOwner: null,
    leaseMs: null,
    ...overrides,
  };
}

/**
 * Expiry visibility and the terminal-task cache live above the store (issue 11: backend-neutral rules leave the
 * stores), so they are proven here on both backends: the cases the store contract suite used to carry.
 */
describeOnBothStores('requestor reads', (backend) => {
  it('R20/C-V2-23 hide a task once expiresAt <= now, before the sweeper ran', async () => {
    const clock = new FakeClock(T0);
    const store = await backend.open(clock);
    const reads = new TaskReads(store, clock);
    const record = await store.create(task(clock, { ttlMs: 1_000 }));
    clock.set(T0 + 999);
    expect(await reads.get(record.taskId, { ownerKey: ALICE })).toEqual(record);
    clock.set(T0 + 1_000);
    expect(await reads.get(record.taskId, { ownerKey: ALICE })).toBeUndefined();
    expect(await store.getUnscoped(record.taskId)).toEqual(record);
  });

  it('R37 list pages leave out expired tasks, and the cursor moves past them', async () => {
    const clock = new FakeClock(T0);
    const store = await backend.open(clock);
    const reads = new TaskReads(store, clock);
    const mine = [];
    for (let i = 0; i < 5; i += 1) mine.push(await store.create(task(clock, { ttlMs: i === 2 || i === 3 ? 500 : 60_000 })));
    await store.create(task(clock, { ownerKey: 'someone else' }));
    clock.set(T0 + 500);
    const scope = { ownerKey: ALICE, generation: 'v2' as const };
    const first = await reads.list(scope, 0, 2);
    expect(first.tasks.map((t) => t.taskId)).toEqual([mine[0]!.taskId, mine[1]!.taskId]);
    // A page whose rows all expired is empty but still points on.
    const second = await reads.list(scope, first.nextAfterSeq!, 2);
    expect(second.tasks).toEqual([]);
    expect(second.nextAfterSeq).toBe(mine[3]!.seq);
    const third = await reads.list(scope, second.nextAfterSeq!, 2);
    expect(third).toEqual({ tasks: [mine[4]], nextAfterSeq: undefined });
  });

  it('serve a terminal task from the cache under the same owner, generation and expiry rules, also after another instance swept it', async () => {
    const clock = new FakeClock(T0);
    const store = await backend.open(clock);
    const other = await backend.open(clock);
    const reads = new TaskReads(store, clock);
    const created = await store.create(task(clock, { ttlMs: 10_000, generation: 'v1', protocolVersion: '2025-11-25' }));
    await store.transition(created.taskId, { to: 'completed', outcome: { kind: 'result', result: { content: [] } }, now: T0 + 1 });
    const scope = { ownerKey: ALICE, generation: 'v1' as const };
    expect((await reads.get(created.taskId, scope))?.status).toBe('completed');
    expect(await reads.outcome(created.taskId)).toEqual({ kind: 'result', result: { content: [] } });
    // Deleted behind the cache's back: cached answers are the database's answers.
    clock.set(T0 + 9_999);
    await store.expireDue(10).then((ids) => expect(ids).toEqual([]));
    expect((await reads.get(created.taskId, scope))?.status).toBe('completed');
    expect(await reads.get(created.taskId, { ...scope, ownerKey: 'someone else' })).toBeUndefined();
    expect(await reads.get(created.taskId, { ...scope, generation: 'v2' })).toBeUndefined();
    clock.set(T0 + 10_000);
    expect(await other.expireDue(10)).toEqual([created.taskId]);
    expect(await reads.get(created.taskId, scope)).toBeUndefined();
    expect(await reads.outcome(created.taskId)).toBeUndefined();
  });
});

describe('outcome size for the cache', () => {
  it('counts JSON characters up to the cap and stops there', () => {
    const value = { content: [{ type: 'text', text: 'abc' }], n: 12 };
    expect(jsonCharsUpTo(value, 10_000)).toBeGreaterThanOrEqual(JSON.stringify(value).length - 4);
    expect(jsonCharsUpTo(value, 10_000)).toBeLessThanOrEqual(JSON.stringify(value).length + 8);
    expect(jsonCharsUpTo({ big: 'x'.repeat(100_000), list: Array.from({ length: 1_000_000 }, () => 1) }, 1_000)).toBe(1_000);
  });
});
