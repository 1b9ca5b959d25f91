/**
 * Issue 25: a `tools/call`'s `call` audit entry is written with the task it creates (`NewTask.audit`), on both
 * stores — and only when the task is inserted: a taken idempotency key, a quota refusal, a deleted session or a
 * failing insert write no entry.
 */
import { expect, it } from 'vitest';

import type { AuditEntry } from '../../src/core/ledger.js';
import type { TaskStore } from '../../src/core/store.js';
import type { NewTask } from '../../src/core/task.js';
import { describeOnBothStores } from '../helpers/both-stores.js';
import { newTaskInput } from '../helpers/new-task.js';

/** A create carrying the `call` entry of its request, as `TaskCreator` makes it. */
function audited(overrides: Partial<NewTask> = {}): NewTask {
  const task = { ...newTaskInput(), ...overrides };
  const audit: AuditEntry = {
    at: task.createdAt,
    kind: 'call',
    ownerKey: task.ownerKey,
    scopes: 'tasks:write',
    tool: task.toolName,
    taskId: task.taskId,
    argumentsDigest: 'digest-of-' + task.taskId,
    outcome: 'task working',
    detail: null,
  };
  return { ...task, audit };
}

async function callEntries(store: TaskStore, taskId: string) {
  return (await store.listAudit({ limit: 10_000 })).filter((entry) => entry.kind === 'call' && entry.taskId === taskId);
}

describeOnBothStores('the call entry written with its task (issue 25)', (backend) => {
  it('a plain create writes its entry once, with every field; a create without one writes none', async () => {
    const store = await backend.open();
    const task = audited();
    await store.create(task);
    expect(await callEntries(store, task.taskId)).toEqual([expect.objectContaining({ ...task.audit, seq: expect.any(Number) })]);
    const plain = newTaskInput();
    await store.create(plain);
    expect(await callEntries(store, plain.taskId)).toEqual([]);
  });

  it('creates issued together each write their own entry; one that fails (an id taken) writes none and the others stand', async () => {
    const store = await backend.open();
    const existing = await store.create(newTaskInput());
    const tasks = [audited(), audited(), audited({ taskId: existing.taskId }), audited()];
    const results = await Promise.allSettled(tasks.map((task) => store.create(task)));
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    for (const i of [0, 1, 3]) expect(await callEntries(store, tasks[i]!.taskId)).toHaveLength(1);
    // The failed create's entry names the existing task's id: that task got none from it.
    expect(await callEntries(store, existing.taskId)).toEqual([]);
  });

  it('a taken idempotency key replays the earlier task and writes nothing for the new one', async () => {
    const store = await backend.open();
    const first = audited({ ownerKey: 'alice', idempotencyKey: 'k-1', requestDigest: 'd' });
    const claim = { ownerKey: 'alice', generation: first.generation, key: 'k-1', toolName: first.toolName, requestDigest: 'd', windowMs: 60_000 };
    const created = await store.claimIdempotencyKey({ ...claim, taskId: first.taskId }, first);
    expect(created.claimed).toBe(true);
    const second = audited({ ownerKey: 'alice', idempotencyKey: 'k-1', requestDigest: 'd' });
    const replayed = await store.claimIdempotencyKey({ ...claim, taskId: second.taskId }, second);
    expect(replayed.claimed).toBe(false);
    expect(await callEntries(store, first.taskId)).toHaveLength(1);
    expect(await callEntries(store, second.taskId)).toEqual([]);
  });

  it('a create the quota refuses, or whose session was deleted, writes no entry', async () => {
    const store = await backend.open();
    const quota = { maxActive: 1, maxCreates: null, windowMs: 60_000 };
    const admitted = audited({ ownerKey: 'bob' });
    expect((await store.admitCreate(admitted, quota)).admitted).toBe(true);
    const refused = audited({ ownerKey: 'bob' });
    expect((await store.admitCreate(refused, quota)).admitted).toBe(false);
    expect(await callEntries(store, admitted.taskId)).toHaveLength(1);
    expect(await callEntries(store, refused.taskId)).toEqual([]);
    const orphan = audited({ sessionId: 'no-such-session', requireSession: true });
    await expect(store.create(orphan)).rejects.toMatchObject({ code: 'gone' });
    expect(await callEntries(store, orphan.taskId)).toEqual([]);
  });
});
