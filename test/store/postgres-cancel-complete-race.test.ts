/**
 * Review 37: cancel-vs-complete races across two store instances with mixed batches (creates, claims, transitions,
 * audits, single writes) and two batches in flight; local publication order and exactly-once.
 */
import { describe, expect, it } from 'vitest';

import type { TaskEvent } from '../../src/core/ports/feed.js';
import type { TaskOutcome, TaskRecord } from '../../src/core/task.js';
import type { PostgresTaskStore } from '../../src/store/postgres/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { postgresStoresPerFile } from '../helpers/postgres.js';

const RESULT: TaskOutcome = { kind: 'result', result: { content: [{ type: 'text', text: 'done' }] } };

const pgStores = postgresStoresPerFile();

async function open(options: { maxBatchSize?: number } = {}): Promise<{ store: PostgresTaskStore; published: TaskEvent[] }> {
  const store = await pgStores.open({ maxInFlightBatches: 2, ...options });
  const published: TaskEvent[] = [];
  store.onEvent((event) => published.push(event));
  return { store, published };
}

describe('review 37: cancel vs complete across two instances, mixed batches', () => {
  it('each task ends exactly once; events gap-free, published locally once, in seq order, before the promise settles', async () => {
    const a = await open({ maxBatchSize: 7 });
    const b = await open({ maxBatchSize: 5 });
    const N = 100;
    const tasks = await Promise.all(Array.from({ length: N }, () => a.store.create(newTaskInput({ leaseOwner: 'i-b', leaseMs: 60_000 }))));
    const before = await a.store.lastEventSeq();
    const violations: string[] = [];
    const seen = (published: TaskEvent[], taskId: string, kind: TaskEvent['kind']) => published.some((e) => e.taskId === taskId && e.kind === kind);
    const check = (side: typeof a, what: string, taskId: string, kind: TaskEvent['kind']) => (r: TaskRecord | undefined) => {
      if (r && !seen(side.published, taskId, kind)) violations.push(`${what} ${taskId} settled before its ${kind} event was published`);
      return r;
    };
    const ops: Array<Promise<unknown>> = [];
    const cancels: Array<Promise<TaskRecord | undefined>> = [];
    const completes: Array<Promise<TaskRecord | undefined>> = [];
    for (const [i, task] of tasks.entries()) {
      const now = Date.now();
      // Interleave other kinds so the batches mix one-statement units and transactions.
      if (i % 3 === 0) {
        const t = newTaskInput();
        ops.push(a.store.create(t).then((r) => check(a, 'create', t.taskId, 'created')(r)));
      }
      if (i % 4 === 0) ops.push(b.store.claimRunnable('i-c', 60_000, 2));
      if (i % 5 === 0) ops.push(a.store.writeStatusMessages([{ taskId: task.taskId, statusMessage: `m${i}`, now }]));
      if (i % 7 === 0)
        ops.push(
          b.store.appendAudit([
            { at: now, kind: 'call', ownerKey: 'x', scopes: null, tool: 't', taskId: null, argumentsDigest: null, outcome: 'o', detail: null },
          ]),
        );
      const cancel = a.store
        .transition(task.taskId, { to: 'cancelled', statusMessage: 'cancelled', now, endedAudit: {} })
        .then(check(a, 'cancel', task.taskId, 'status'));
      const complete = b.store
        .transition(task.taskId, { to: 'completed', outcome: RESULT, leaseOwner: 'i-b', releaseLease: true, now, endedAudit: {} })
        .then(check(b, 'complete', task.taskId, 'status'));
      cancels.push(cancel);
      completes.push(complete);
      if (i % 10 === 9) await new Promise((resolve) => setImmediate(resolve));
    }
    const [c, d] = await Promise.all([Promise.all(cancels), Promise.all(completes), Promise.all(ops)]);
    expect(violations).toEqual([]);
    const audit = await a.store.listAudit({ limit: 10_000 });
    for (const [i, task] of tasks.entries()) {
      const won = [c[i], d[i]].filter((r) => r !== undefined);
      expect(won, task.taskId).toHaveLength(1);
      const row = await a.store.getUnscoped(task.taskId);
      expect(row?.status).toBe(won[0]?.status);
      expect(audit.filter((e) => e.kind === 'task.ended' && e.taskId === task.taskId)).toHaveLength(1);
      const outcome = await a.store.getOutcome(task.taskId);
      if (row?.status === 'completed') expect(outcome).toEqual(RESULT);
      else expect(outcome).toBeUndefined();
    }
    const events = await a.store.readEventsAfter(before, 10_000);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => before + 1 + i));
    for (const task of tasks) {
      const status = events.filter((e) => e.taskId === task.taskId && e.kind === 'status');
      expect(status).toHaveLength(1);
      expect(status[0]?.payload).toMatchObject({ from: 'working' });
    }
    // Local publication: each store published exactly its own events, once, in seq order.
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (const side of [a, b]) {
      const seqs = side.published.map((e) => e.seq);
      expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
      expect(new Set(seqs).size).toBe(seqs.length);
      const inDb = new Map(events.map((e) => [e.seq, e]));
      for (const e of side.published.filter((e) => e.seq > before)) expect(inDb.get(e.seq)).toEqual(e);
    }
    const local = new Set([...a.published, ...b.published].map((e) => e.seq));
    expect(events.filter((e) => !local.has(e.seq)).map((e) => [e.seq, e.kind])).toEqual([]);
  }, 60_000);
});
