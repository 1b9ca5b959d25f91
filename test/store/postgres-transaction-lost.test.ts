/**
 * Non-negotiable 4 (a database that goes away: a precise error, no crash): a connection lost in the middle of one of
 * the store's own transactions (`PostgresContext.inTransaction`, e.g. writing a result's chunks) rejects that write as
 * `unavailable`. A checked-out pg client has no listener of the pool: without one of ours, the client's 'error'
 * event for the lost socket is unhandled and ends the process.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { openPostgresTaskStore } from '../../src/store/postgres/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { createTestDatabase, lockWaiter, type TestDatabase } from '../helpers/postgres.js';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

describe('a connection lost inside a store transaction (issue 25 review)', () => {
  it('rejects the write as unavailable, raises no unhandled error, and the store goes on', async () => {
    const store = await openPostgresTaskStore({ url: database.url });
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    const unhandled: unknown[] = [];
    const onUncaught = (error: unknown): void => void unhandled.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      const task = await store.create(newTaskInput());
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR UPDATE', [task.taskId]);
      // The handler is attached at once: the write's rejection can arrive before the terminating query has answered,
      // and a rejection without a handler by then is an unhandled rejection of its own (CI saw one).
      const write = store.putResultChunks(task.taskId, [new Uint8Array([1, 2, 3])]).then(
        () => 'resolved',
        (error: unknown) => error,
      );
      const pid = await lockWaiter(holder, 'the chunk write');
      await holder.query('SELECT pg_terminate_backend($1)', [pid]);
      expect(await write).toMatchObject({ code: 'unavailable' });
      await holder.query('ROLLBACK');
      // Let the lost socket's events run out.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(unhandled).toEqual([]);
      expect(await store.putResultChunks(task.taskId, [new Uint8Array([4])])).toBe(true);
    } finally {
      process.off('uncaughtException', onUncaught);
      await holder.end();
      await store.close();
    }
  });
});
