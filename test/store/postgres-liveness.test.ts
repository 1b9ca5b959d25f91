/**
 * Issue 25 (after the one-batch-in-flight review): a process's heartbeat and its lease renewals do not wait for a
 * connection of the store's pool. The pool can be held for seconds — result chunks written while their task row is
 * locked, large reads, a stalled batch — and a heartbeat that waited past the registration's TTL (3 s at the
 * defaults) got the process reaped by the others, and its running tasks claimed while they still ran.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { openPostgresTaskStore } from '../../src/store/postgres/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

/** Whether `promise` has settled within `ms`. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let waited = 0; waited < ms && !settled; waited += 25) await new Promise((resolve) => setTimeout(resolve, 25));
  return settled;
}

describe('liveness writes with the pool held (issue 25)', () => {
  it('every connection of the pool held: the heartbeat and a lease renewal are answered, a read waits for the pool (control)', async () => {
    const poolSize = 2;
    const store = await openPostgresTaskStore({ url: database.url, poolSize, applicationName: 'mcp-tasks-pool-held' });
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      const locked = await store.create(newTaskInput());
      const running = await store.create(newTaskInput());
      expect(await store.claimRunnable('w-p', 30_000, 10)).toHaveLength(2);
      const entry = { instanceId: 'w-p', role: 'worker' as const, token: 't-p', host: 'h', pid: 1, settingsDigest: 'd' };
      expect(await store.registerProcess(entry, 3_000)).toMatchObject({ registered: true });

      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR UPDATE', [locked.taskId]);
      // Each chunk write holds a pooled connection in its own transaction while it waits for the row lock.
      const chunkWrites = Array.from({ length: poolSize }, () =>
        store.putResultChunks(locked.taskId, [new Uint8Array([1])]).then(
          (stored) => stored,
          (error: unknown) => error,
        ),
      );
      const waiting = async (): Promise<number> => {
        // pg_stat_activity is read once per transaction (the holder is in one): clear that snapshot each time.
        await holder.query('SELECT pg_stat_clear_snapshot()');
        return (
          await holder.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'mcp-tasks-pool-held' AND wait_event_type = 'Lock'",
          )
        ).rows[0]!.n;
      };
      for (let i = 0; i < 200 && (await waiting()) < poolSize; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await waiting()).toBe(poolSize);

      const read = store.getUnscoped(running.taskId);
      const heartbeat = store.heartbeatProcess('w-p', 't-p', 3_000);
      const renewal = store.renewLeases('w-p', [running.taskId], 30_000);
      expect(await settledWithin(heartbeat, 1_000)).toBe(true);
      expect(await settledWithin(renewal, 1_000)).toBe(true);
      expect(await heartbeat).toBe(true);
      expect(await renewal).toEqual([running.taskId]);
      // Control: the pool was held the whole time.
      expect(await settledWithin(read, 0)).toBe(false);

      await holder.query('ROLLBACK');
      expect(await Promise.all(chunkWrites)).toEqual([true, true]);
      expect((await read)?.taskId).toBe(running.taskId);
    } finally {
      await holder.end();
      await store.close();
    }
  });
});
