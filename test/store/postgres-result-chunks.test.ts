/**
 * Large-result chunks on PostgreSQL (issue 10 §2, stop 40): a chunk write runs in its own transaction with the task
 * row key-share locked only (a 64 MiB result must not hold the write batch back), so two writers of one task — a run
 * that lost its lease and the run that holds it, finishing together — ran side by side: each deleted the chunks the
 * other had not committed yet, and the second insert failed on the primary key (23505, the holder's result lost).
 * An advisory lock of the task's chunk writers serializes them; the lease condition decides which one writes.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { openPostgresTaskStore } from '../../src/store/postgres/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { createTestDatabase, lockWaitersOf, type TestDatabase } from '../helpers/postgres.js';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

const bytes = (length: number, fill: number): Uint8Array => new Uint8Array(length).fill(fill);

describe('result chunk writers of one task (stop 40)', () => {
  it('two writers released together: both end without an error, and the chunks are one write whole (negative control: the lost lease writes nothing)', async () => {
    const store = await openPostgresTaskStore({ url: database.url, applicationName: 'mcp-tasks-chunk-writers' });
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      const task = await store.create(newTaskInput());
      expect((await store.claimRunnable('w-holds', 60_000, 1)).map((claimed) => claimed.taskId)).toEqual([task.taskId]);
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR UPDATE', [task.taskId]);
      const first = store.putResultChunks(task.taskId, [bytes(1000, 1), bytes(1000, 1), bytes(10, 1)], 'w-holds').then(
        (stored) => stored,
        (error: unknown) => error,
      );
      const second = store.putResultChunks(task.taskId, [bytes(2000, 2), bytes(20, 2)], 'w-holds').then(
        (stored) => stored,
        (error: unknown) => error,
      );
      // One writer waits on the row lock, the other on the writers' lock (without it both wait on the row lock, and
      // once it is released they run side by side: whether the second then fails on the key depends on who is first).
      expect(await lockWaitersOf(holder, 'mcp-tasks-chunk-writers', 2)).toBe(2);
      const advisory = await holder.query(
        "SELECT 1 FROM pg_stat_activity WHERE application_name = 'mcp-tasks-chunk-writers' AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
      );
      expect(advisory.rowCount).toBe(1);
      await holder.query('ROLLBACK');
      expect(await Promise.all([first, second])).toEqual([true, true]);
      const stored: number[][] = [];
      for (let index = 0; ; index++) {
        const chunk = await store.readResultChunk(task.taskId, index);
        if (chunk === undefined) break;
        stored.push([chunk.length, chunk[0]!]);
      }
      expect([
        [
          [1000, 1],
          [1000, 1],
          [10, 1],
        ],
        [
          [2000, 2],
          [20, 2],
        ],
      ]).toContainEqual(stored);
      // Control: a writer that does not hold the lease writes nothing.
      expect(await store.putResultChunks(task.taskId, [bytes(5, 9)], 'w-lost')).toBe(false);
      expect((await store.readResultChunk(task.taskId, 0))![0]).not.toBe(9);
    } finally {
      await holder.end();
      await store.close();
    }
  });

  it('a cancel of a task whose result is being written applies at once, and the run that wrote it then cannot complete it (negative control: a transition still waits for another transition)', async () => {
    const store = await openPostgresTaskStore({ url: database.url, applicationName: 'mcp-tasks-chunk-cancel' });
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      const task = await store.create(newTaskInput());
      await store.claimRunnable('w-runs', 60_000, 1);
      expect(await store.putResultChunks(task.taskId, [bytes(10, 1)], 'w-runs')).toBe(true);
      // Stall the next chunk write after it took its key-share lock on the task row: it waits to delete a chunk row
      // locked here, as a 64 MiB write is still inserting when a cancel comes.
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM mcp_tasks.result_chunks WHERE task_id = $1 FOR UPDATE', [task.taskId]);
      const writing = store.putResultChunks(task.taskId, [bytes(20, 2)], 'w-runs').then(
        (stored) => stored,
        (error: unknown) => error,
      );
      expect(await lockWaitersOf(holder, 'mcp-tasks-chunk-cancel', 1)).toBe(1);
      const started = Date.now();
      const cancelled = await Promise.race([
        store.transition(task.taskId, { to: 'cancelled', now: Date.now(), releaseLease: true }),
        new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 3_000)),
      ]);
      expect(cancelled === 'waited' ? `the cancel waited for the chunk write (${Date.now() - started} ms)` : cancelled?.status).toBe('cancelled');
      await holder.query('ROLLBACK');
      // The write then sees the cancel and keeps nothing (see the next test).
      expect(await writing).toBe(false);
      expect(await store.readResultChunk(task.taskId, 0)).toBeUndefined();
      // The run's own end is conditional on the lease and status: the cancel stands.
      expect(
        await store.transition(task.taskId, { to: 'completed', now: Date.now(), leaseOwner: 'w-runs', outcome: { kind: 'result', result: { content: [] } } }),
      ).toBeUndefined();
      expect((await store.getUnscoped(task.taskId))?.status).toBe('cancelled');

      // Control: a transition holding the row (FOR NO KEY UPDATE, as the UPDATE takes) still queues the next one.
      const other = await store.create(newTaskInput());
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR NO KEY UPDATE', [other.taskId]);
      const queued = store.transition(other.taskId, { to: 'cancelled', now: Date.now() });
      expect(await lockWaitersOf(holder, 'mcp-tasks-chunk-cancel', 1)).toBe(1);
      await holder.query('ROLLBACK');
      expect((await queued)?.status).toBe('cancelled');
    } finally {
      await holder.end();
      await store.close();
    }
  });

  it('a cancel whose transaction is open while the chunks are written wins: the write waits for it at its end, reports false and leaves no chunk (control: with no cancel it writes)', async () => {
    const store = await openPostgresTaskStore({ url: database.url, applicationName: 'mcp-tasks-chunk-after-cancel' });
    const canceller = new pg.Client({ connectionString: database.url });
    await canceller.connect();
    const chunkRows = async (taskId: string): Promise<number> =>
      Number((await canceller.query('SELECT count(*) AS n FROM mcp_tasks.result_chunks WHERE task_id = $1', [taskId])).rows[0].n);
    try {
      const task = await store.create(newTaskInput());
      await store.claimRunnable('w-runs', 60_000, 1);
      // A cancel under way in another process: its row lock taken, its update not committed yet.
      await canceller.query('BEGIN');
      await canceller.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR NO KEY UPDATE', [task.taskId]);
      await canceller.query(`UPDATE mcp_tasks.tasks SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL WHERE task_id = $1`, [task.taskId]);
      const writing = store.putResultChunks(task.taskId, [bytes(30, 3), bytes(5, 3)], 'w-runs');
      // The write does its work beside the open cancel, then waits for it before committing.
      expect(await lockWaitersOf(canceller, 'mcp-tasks-chunk-after-cancel', 1)).toBe(1);
      await canceller.query('COMMIT');
      expect(await writing).toBe(false);
      expect(await chunkRows(task.taskId)).toBe(0);

      // Control: the same write with no cancel writes.
      const other = await store.create(newTaskInput());
      await store.claimRunnable('w-runs', 60_000, 1);
      expect(await store.putResultChunks(other.taskId, [bytes(30, 3), bytes(5, 3)], 'w-runs')).toBe(true);
      expect(await chunkRows(other.taskId)).toBe(2);
    } finally {
      await canceller.end();
      await store.close();
    }
  });

  it('a chunk write that is the victim of a deadlock (its final FOR SHARE closing a cycle with two batches) is sent again and stores the chunks', async () => {
    const store = await openPostgresTaskStore({ url: database.url, applicationName: 'mcp-tasks-chunk-deadlock' });
    const [a, b, watcher] = [
      new pg.Client({ connectionString: database.url }),
      new pg.Client({ connectionString: database.url }),
      new pg.Client({ connectionString: database.url }),
    ];
    for (const client of [a, b, watcher]) await client.connect();
    const settled = <T>(promise: Promise<T>) =>
      promise.then(
        () => 'done',
        (error: unknown) => String(error),
      );
    try {
      const target = await store.create(newTaskInput());
      const other = await store.create(newTaskInput());
      await store.claimRunnable('w-runs', 60_000, 2);
      expect(await store.putResultChunks(target.taskId, [bytes(10, 1)], 'w-runs')).toBe(true);
      // The two batches leave the deadlock to the chunk write to find (theirs would be checked 10 s later), and give
      // up their waits after 3 s so that its second try can finish.
      for (const client of [a, b]) await client.query("BEGIN; SET LOCAL deadlock_timeout = '10s'; SET LOCAL lock_timeout = '3s'");
      await a.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR NO KEY UPDATE', [other.taskId]);
      // Hold the write after its key-share lock on the target (it waits to delete the chunk row locked here).
      await watcher.query('BEGIN');
      await watcher.query('SELECT 1 FROM mcp_tasks.result_chunks WHERE task_id = $1 FOR UPDATE', [target.taskId]);
      const writing = store.putResultChunks(target.taskId, [bytes(40, 4)], 'w-runs').then(
        (stored) => stored,
        (error: unknown) => error,
      );
      expect(await lockWaitersOf(watcher, 'mcp-tasks-chunk-deadlock', 1)).toBe(1);
      // b: a batch that locks the target (its FOR NO KEY UPDATE does not wait for the key share).
      await b.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR NO KEY UPDATE', [target.taskId]);
      await watcher.query('ROLLBACK');
      // The write now waits for b at its final FOR SHARE; a (an answer, FOR UPDATE) waits for the write's key share;
      // b waits for a's row: a cycle through the write.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const aWaits = settled(a.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR UPDATE', [target.taskId]));
      const bWaits = settled(b.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR NO KEY UPDATE', [other.taskId]));
      await Promise.all([aWaits, bWaits]);
      for (const client of [a, b]) await client.query('ROLLBACK');
      expect(await writing).toBe(true);
      expect((await store.readResultChunk(target.taskId, 0))?.length).toBe(40);
    } finally {
      for (const client of [a, b, watcher]) await client.end();
      await store.close();
    }
  });
});
