import { describe, expect, it } from 'vitest';

import type { OutcomeWrittenListener } from '../../src/core/hand-off.js';
import { newTaskId } from '../../src/core/ids.js';
import type { TaskStore } from '../../src/core/store.js';
import type { NewTask, TaskOutcome, TaskRecord } from '../../src/core/task.js';
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
 * A {@link TaskReads} over `store` with its task and outcome reads counted, and the worker's side of its hand-off:
 * the outcome writes in flight (`writes`, by task id) and who hears the ends as they commit (`listeners`).
 */
function readerWithHandOff(store: TaskStore, clock: FakeClock) {
  const reads = { tasks: 0, outcomes: 0 };
  const counted = new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (key === 'get' || key === 'getWithOutcome') reads.tasks += 1;
        if (key === 'getOutcome') reads.outcomes += 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const listeners = new Set<OutcomeWrittenListener>();
  const writes = new Map<string, Promise<unknown>>();
  const reader = new TaskReads(counted, clock, {
    pendingOutcome: (taskId) => writes.get(taskId),
    onOutcomeWritten: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  });
  return { reader, reads, listeners, writes };
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

  it("an outcome committed by this process's worker is served as the store would serve it, without a read; a read during the commit waits for it (issue 25)", async () => {
    const clock = new FakeClock(T0);
    const store = await backend.open(clock);
    const { reader, reads, listeners, writes } = readerWithHandOff(store, clock);
    const created = await store.create(task(clock));
    // What a tool may hand back in process: fields JSON drops or turns into strings.
    const outcome: TaskOutcome = { kind: 'result', result: { content: [], structuredContent: { at: new Date(T0), gone: undefined, n: 1 } } as never };
    let commit: () => void = () => {};
    const committed = new Promise<void>((resolve) => (commit = resolve));
    const write = committed
      .then(() => store.transition(created.taskId, { to: 'completed', outcome, now: T0 + 1 }))
      .then((written) => {
        for (const listener of listeners) if (written) listener(written, outcome);
        return written;
      });
    writes.set(created.taskId, write);
    const scope = { ownerKey: ALICE, generation: 'v2' as const };
    const during = reader.get(created.taskId, scope);
    commit();
    expect((await during)?.status).toBe('completed');
    writes.delete(created.taskId);
    const stored = await store.getOutcome(created.taskId);
    expect(await reader.outcome(created.taskId)).toEqual(stored);
    expect(stored).toEqual({ kind: 'result', result: { content: [], structuredContent: { at: new Date(T0).toISOString(), n: 1 } } });
    expect(await reader.get(created.taskId, scope)).toEqual(await store.get(created.taskId, scope));
    expect(reads).toEqual({ tasks: 0, outcomes: 0 });
    // The same scope rules as a read of the store: another owner or generation finds nothing.
    expect(await reader.get(created.taskId, { ...scope, ownerKey: 'someone else' })).toBeUndefined();
    expect(await reader.get(created.taskId, { ...scope, generation: 'v1' })).toBeUndefined();
    // Negative control: a task ended without this worker (another process) is read from the store.
    const elsewhere = await store.create(task(clock));
    await store.transition(elsewhere.taskId, { to: 'completed', outcome, now: T0 + 2 });
    expect((await reader.get(elsewhere.taskId, scope))?.status).toBe('completed');
    expect(reads.tasks).toBe(1);
  });

  it('ends nobody reads are kept a few hundred at most and small ones only; a commit that stalls holds a read 100 ms at most (issue 25)', async () => {
    const clock = new FakeClock(T0);
    const store = await backend.open(clock);
    const { reader, reads, listeners, writes } = readerWithHandOff(store, clock);
    const scope = { ownerKey: ALICE, generation: 'v2' as const };
    const outcome: TaskOutcome = { kind: 'result', result: { content: [] } };
    const end = async (overrides: Partial<NewTask> = {}): Promise<string> => {
      const created = await store.create(task(clock, overrides));
      const written = await store.transition(created.taskId, { to: 'completed', outcome, now: T0 + 1 });
      for (const listener of listeners) listener(written as TaskRecord, outcome);
      return created.taskId;
    };
    // 300 ends nobody reads: the oldest 44 are gone (read from the store), the newest 256 answer without a read.
    const ended: string[] = [];
    for (let i = 0; i < 300; i++) ended.push(await end());
    expect((await reader.get(ended[0] as string, scope))?.status).toBe('completed');
    expect(reads.tasks).toBe(1);
    expect((await reader.get(ended[299] as string, scope))?.status).toBe('completed');
    expect(reads.tasks).toBe(1);
    // A task with large arguments is not kept on its end.
    const large = await end({ arguments: { text: 'x'.repeat(20_000) } });
    expect((await reader.get(large, scope))?.status).toBe('completed');
    expect(reads.tasks).toBe(2);
    // An end whose commit never settles: the read waits briefly, then answers what the store has.
    const working = await store.create(task(clock));
    writes.set(working.taskId, new Promise(() => {}));
    const asked = Date.now();
    expect((await reader.get(working.taskId, scope))?.status).toBe('working');
    expect(Date.now() - asked).toBeLessThan(5_000);
    expect(reads.tasks).toBe(3);
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
