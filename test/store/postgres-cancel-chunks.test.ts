/**
 * A cancel answers without waiting for the deletion of the result chunks its task's dead run left (review of
 * 648e97a): on PostgreSQL a transaction that holds those rows — a re-run rewriting its own large result — blocks the
 * deletion, which runs after the answer, and never the cancel. Once the rows are free the chunks go.
 */
import { randomBytes } from 'node:crypto';

import { afterEach, describe, expect, it } from 'vitest';

import { createTasksServer } from '../../src/server/create-tasks-server.js';
import { noopTool } from '../helpers/api-only.js';
import { anonymousV2Caller } from '../helpers/callers.js';
import { newTaskInput } from '../helpers/new-task.js';
import { lockWaiter, postgresStoresPerFile } from '../helpers/postgres.js';
import { eventually } from '../helpers/run-notes.js';

const pgStores = postgresStoresPerFile();
const CHUNKS = Array.from({ length: 3 }, (_, i) => new TextEncoder().encode(`chunk ${i} `.repeat(500)));

describe('tasks/cancel and the result chunks of a dead run (PostgreSQL)', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('answers while another transaction holds the chunks; they are deleted once it lets go', async () => {
    const store = await pgStores.open();
    const api = await createTasksServer({ tools: [noopTool], store, secret: randomBytes(32), worker: false });
    cleanups.push(() => api.close());
    // A task whose run (lease owner `dead`) stored its chunks and died before its outcome.
    const task = await store.create(newTaskInput({ toolName: 'noop', leaseOwner: 'dead', leaseMs: 60_000, startNow: true }));
    expect(await store.putResultChunks(task.taskId, CHUNKS, 'dead')).toBe(true);
    const holder = await pgStores.clients.connect(pgStores.url());
    await holder.query('BEGIN');
    await holder.query('DELETE FROM mcp_tasks.result_chunks WHERE task_id = $1', [task.taskId]);

    let answered = false;
    const cancel = api.service.tasks.cancel(anonymousV2Caller(), task.taskId).then((answer) => {
      answered = true;
      return answer;
    });
    // The deletion waits on the held rows; by then the cancel has answered (awaited, it would still be pending).
    await lockWaiter(await pgStores.clients.connect(pgStores.url()), 'the chunk deletion');
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(true);
    expect(await cancel).toMatchObject({ cancelled: true, task: { status: 'cancelled' } });

    // Control: the chunks were there all along, and go once the other transaction ends.
    expect(await store.readResultChunk(task.taskId, 0)).toBeDefined();
    await holder.query('ROLLBACK');
    await eventually('the dead run chunks to be deleted', async () => (await store.readResultChunk(task.taskId, 0)) === undefined, 5_000);
  }, 30_000);
});
