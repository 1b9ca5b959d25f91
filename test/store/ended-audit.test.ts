/**
 * a run's end and its task.ended audit entry in one write (cdafc4f), on both stores: batches that fail and
 * are re-run item by item under savepoints, a transition alone in its batch, transitions that do not apply (lost
 * lease, terminal meanwhile), several ends of one task in one batch.
 */
import { expect, it } from 'vitest';

import type { AuditEntry } from '../../src/core/ledger.js';
import type { TaskStore } from '../../src/core/store.js';
import type { TaskOutcome } from '../../src/core/task.js';
import { describeOnBothStores } from '../helpers/both-stores.js';
import { newTaskInput } from '../helpers/new-task.js';

const RESULT: TaskOutcome = { kind: 'result', result: { content: [{ type: 'text', text: 'done' }] } };
const ERROR: TaskOutcome = { kind: 'error', error: { code: -32603, message: 'boom', data: { reason: 'runtime_limit' } } };

async function ended(store: TaskStore, taskId: string) {
  return (await store.listAudit({ limit: 10_000 })).filter((entry) => entry.taskId === taskId && entry.kind === 'task.ended');
}

/** An audit entry the audit_log table refuses (owner_key NOT NULL): its write fails inside the batch. */
const BAD: AuditEntry = {
  at: 1,
  kind: 'call',
  ownerKey: null as unknown as string,
  scopes: null,
  tool: null,
  taskId: null,
  argumentsDigest: null,
  outcome: null,
  detail: null,
};

describeOnBothStores('task.ended in the transition (issue 25)', (backend) => {
  it('a batch re-run under savepoints after another write failed: each applied end has exactly one entry, a discarded one none', async () => {
    const store = await backend.open();
    const tasks = await Promise.all(Array.from({ length: 12 }, () => store.create(newTaskInput({ leaseOwner: 'i-a', leaseMs: 60_000 }))));
    const now = Date.now();
    // One tick: every write shares a batch; the bad audit entry makes the first run of the batch fail.
    const writes = tasks.flatMap((task, i) => [
      store.transition(task.taskId, { to: 'completed', outcome: RESULT, leaseOwner: i % 3 === 0 ? 'i-b' : 'i-a', releaseLease: true, now, endedAudit: {} }),
      // A second end of the same task in the same batch (the runtime limit's failure racing the run's completion).
      store.transition(task.taskId, { to: 'failed', outcome: ERROR, releaseLease: true, now, endedAudit: { reason: 'runtime_limit' } }),
    ]);
    const bad = store.appendAudit([BAD]).then(
      () => 'written',
      () => 'refused',
    );
    const results = await Promise.all(writes);
    expect(await bad).toBe('refused');
    for (const [i, task] of tasks.entries()) {
      const [completion, failure] = [results[2 * i], results[2 * i + 1]];
      const entries = await ended(store, task.taskId);
      const final = (await store.getUnscoped(task.taskId))?.status;
      expect({ i, entries: entries.map((entry) => [entry.outcome, entry.detail]) }).toEqual({
        i,
        entries: [[final, final === 'failed' ? { reason: 'runtime_limit' } : null]],
      });
      expect(completion === undefined || failure === undefined).toBe(true);
      if (i % 3 === 0) expect(completion).toBeUndefined();
    }
  });

  it('a transition alone in its batch writes its entry once; alone and not applying (terminal already, lease lost) writes none', async () => {
    const store = await backend.open();
    const task = await store.create(newTaskInput({ leaseOwner: 'i-a', leaseMs: 60_000 }));
    expect(
      await store.transition(task.taskId, { to: 'completed', outcome: RESULT, leaseOwner: 'i-b', releaseLease: true, now: Date.now(), endedAudit: {} }),
    ).toBeUndefined();
    expect(await ended(store, task.taskId)).toEqual([]);
    expect(
      await store.transition(task.taskId, { to: 'completed', outcome: RESULT, leaseOwner: 'i-a', releaseLease: true, now: Date.now(), endedAudit: {} }),
    ).toMatchObject({
      status: 'completed',
    });
    expect(
      await store.transition(task.taskId, { to: 'failed', outcome: ERROR, releaseLease: true, now: Date.now(), endedAudit: { reason: 'input_timeout' } }),
    ).toBeUndefined();
    const entries = await ended(store, task.taskId);
    expect(entries).toEqual([
      {
        seq: expect.any(Number),
        at: expect.any(Number),
        kind: 'task.ended',
        ownerKey: 'anonymous',
        scopes: null,
        tool: 'test',
        taskId: task.taskId,
        argumentsDigest: null,
        outcome: 'completed',
        detail: null,
      },
    ]);
  });

  it('cancel racing completion, 40 rounds: exactly one wins; task.ended exactly when the completion won', async () => {
    const store = await backend.open();
    for (let round = 0; round < 40; round += 1) {
      const task = await store.create(newTaskInput({ leaseOwner: 'i-a', leaseMs: 60_000 }));
      const now = Date.now();
      const [completed, cancelled] = await Promise.all([
        store.transition(task.taskId, { to: 'completed', outcome: RESULT, leaseOwner: 'i-a', releaseLease: true, now, endedAudit: {} }),
        store.transition(task.taskId, { to: 'cancelled', releaseLease: true, now }),
      ]);
      expect([completed, cancelled].filter(Boolean)).toHaveLength(1);
      expect((await ended(store, task.taskId)).length).toBe(completed ? 1 : 0);
    }
  });
});
