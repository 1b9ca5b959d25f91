/**
 * A worker killed (kill -9) after it stored the chunks of a large result and before its outcome committed: recovery
 * fails the task (`interrupted` for a tool not safe to re-run, `attempts_exhausted` for one out of runs) and nothing
 * will ever serve those chunks — they are deleted then, as a run deletes the chunks of an outcome it could not store
 * (`TaskResults.discardUnservedResultChunks`), instead of staying in the store until the task's TTL (or for good,
 * with `--default-ttl-ms unlimited`). `serve --no-worker` and `mcp-tasks worker` processes on one PostgreSQL
 * database; the dead run's chunks are written through the store port under its own lease, as the run writes them.
 */
import { join, resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { apiAndWorkersOnPostgres } from '../helpers/api-and-workers.js';
import { eventually } from '../helpers/run-notes.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/recovery-tools.mjs');
const LEASE_MS = 1_500;
const CHUNKS = Array.from({ length: 4 }, (_, i) => new TextEncoder().encode(`chunk ${i} `.repeat(1_000)));

describe('kill -9 of a worker between its result chunks and its outcome (PostgreSQL, serve --no-worker + workers)', () => {
  // One run per task: an idempotent tool whose run died is out of runs (attempts_exhausted).
  const rig = apiAndWorkersOnPostgres(
    'mcp-tasks-recovery-chunks-',
    () => ['--no-builtins', '--tools', TOOLS, '--lease-ms', String(LEASE_MS), '--max-attempts', '1'],
    'kill9',
  );
  const { temp, startWorker } = rig;

  for (const [tool, reason] of [
    ['fragile_job', 'interrupted'],
    ['idempotent_job', 'attempts_exhausted'],
  ] as const) {
    it(`${tool}: the task fails ${reason} and the chunks its dead run stored are deleted`, async () => {
      // Only this test's workers take its task.
      await rig.endWorkers();
      const id = `${tool}-first`;
      const first = await startWorker(id);
      const created = await postModern(rig.api.url, 'tools/call', { name: tool, arguments: { log: join(temp.dir, `${tool}.log`) } });
      const taskId = created.body.result?.taskId;
      if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
      await eventually('the run to hold the lease', async () => (await rig.observer.getUnscoped(taskId))?.leaseOwner === id);
      // What the run does as it ends with a large result: its chunks first, under its lease, then its outcome.
      expect(await rig.observer.putResultChunks(taskId, CHUNKS, id)).toBe(true);
      await first.kill9();
      await startWorker(`${tool}-second`);
      const ended = await pollModernTask(rig.api.url, taskId, { timeoutMs: 15_000 });
      expect(ended).toMatchObject({ status: 'failed', error: { data: { reason } } });
      // Before the fix chunk 0 was still there, kept until the task's TTL.
      await eventually('the dead run chunks to be deleted', async () => (await rig.observer.readResultChunk(taskId, 0)) === undefined, 5_000);
    }, 60_000);
  }

  it('cancelled before any recovery: the cancel deletes the chunks its dead run stored (recovery passes a cancelled task by)', async () => {
    await rig.endWorkers();
    const id = 'cancel-first';
    const first = await startWorker(id);
    const created = await postModern(rig.api.url, 'tools/call', { name: 'fragile_job', arguments: { log: join(temp.dir, 'cancelled.log') } });
    const taskId = created.body.result?.taskId;
    if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
    await eventually('the run to hold the lease', async () => (await rig.observer.getUnscoped(taskId))?.leaseOwner === id);
    expect(await rig.observer.putResultChunks(taskId, CHUNKS, id)).toBe(true);
    await first.kill9();
    // No worker runs now: only the cancel can see to them.
    const cancelled = await postModern(rig.api.url, 'tasks/cancel', { taskId });
    expect(cancelled.body.error).toBeUndefined();
    expect(await rig.observer.getUnscoped(taskId)).toMatchObject({ status: 'cancelled' });
    // Deleted just after the answer (the cancel does not wait for it); before the fix they stayed until the task's TTL.
    await eventually('the dead run chunks to be deleted', async () => (await rig.observer.readResultChunk(taskId, 0)) === undefined, 5_000);
  }, 60_000);
});
