/**
 * Issue 25 (review of the one-batch-in-flight default): a write batch that waits on a row lock — another process's,
 * an operator's — holds up the writes queued behind it, but never a process's heartbeat or its lease renewals. A
 * heartbeat held up past the registration's TTL gets the process reaped by the others, and its running tasks claimed
 * while they still run.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { silentLogger } from '../../src/core/logger.js';
import { registerProcess } from '../../src/execution/process-registration.js';
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

/** Whether `promise` has settled by the time the event loop has run a few turns (it is then `true` for good). */
async function settledSoon(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 20 && !settled; i++) await new Promise((resolve) => setTimeout(resolve, 25));
  return settled;
}

describe('a write batch stalled on a row lock (issue 25)', () => {
  it("holds up the process's queued writes (control) but not its heartbeat nor its lease renewals", async () => {
    const store = await openPostgresTaskStore({ url: database.url });
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      const locked = await store.create(newTaskInput());
      const running = await store.create(newTaskInput());
      await store.claimRunnable('w-a', 30_000, 10);
      const entry = { instanceId: 'w-a', role: 'worker' as const, token: 't-1', host: 'h', pid: 1, settingsDigest: 'd' };
      expect(await store.registerProcess(entry, 3_000)).toMatchObject({ registered: true });

      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR UPDATE', [locked.taskId]);
      const cancel = store.transition(locked.taskId, { to: 'cancelled', now: Date.now() });
      await lockWaiter(holder, 'the cancel');
      // Control: a write queued behind the stalled batch waits for it.
      const queued = store.create(newTaskInput());
      const heartbeat = store.heartbeatProcess('w-a', 't-1', 3_000);
      const renewal = store.renewLeases('w-a', [running.taskId], 30_000);
      expect(await settledSoon(heartbeat)).toBe(true);
      expect(await settledSoon(renewal)).toBe(true);
      expect(await settledSoon(queued)).toBe(false);
      expect(await heartbeat).toBe(true);
      expect(await renewal).toEqual([running.taskId]);

      await holder.query('ROLLBACK');
      expect((await cancel)?.status).toBe('cancelled');
      expect((await queued).status).toBe('working');
    } finally {
      await holder.end();
      await store.close();
    }
  });

  it('a lease renewal that deadlocks with another transaction (rolled back by PostgreSQL) is sent again and renews', async () => {
    const store = await openPostgresTaskStore({ url: database.url });
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      const [v, w] = (await Promise.all([store.create(newTaskInput()), store.create(newTaskInput())])).sort((a, b) => (a.taskId < b.taskId ? -1 : 1));
      await store.claimRunnable('w-d', 30_000, 10);
      const deadlocks = async (): Promise<number> =>
        (await holder.query<{ n: number }>('SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()')).rows[0]!.n;
      const before = await deadlocks();
      // The holder outwaits the renewal's deadlock check, so the renewal is the statement PostgreSQL rolls back.
      await holder.query("SET deadlock_timeout = '10s'");
      await holder.query('BEGIN');
      await holder.query("UPDATE mcp_tasks.tasks SET status_message = 'held' WHERE task_id = $1", [w!.taskId]);
      // The renewal locks its rows in task-id order: v, then it waits for w.
      const renewal = store.renewLeases('w-d', [w!.taskId, v!.taskId], 30_000);
      await lockWaiter(holder, 'the renewal');
      // Now the holder waits for v: a deadlock, which PostgreSQL breaks by rolling the renewal back after 1 s.
      await holder.query("UPDATE mcp_tasks.tasks SET status_message = 'held' WHERE task_id = $1", [v!.taskId]);
      await holder.query('COMMIT');
      expect((await renewal).sort()).toEqual([v!.taskId, w!.taskId].sort());
      // The scenario did deadlock (the renewal locks in task-id order), so the renewal above is the retry's.
      for (let i = 0; i < 50 && (await deadlocks()) === before; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await deadlocks()).toBeGreaterThan(before);
    } finally {
      await holder.end();
      await store.close();
    }
  });

  it("a process's heartbeat goes on while its write batch stalls: the reap each beat also sends waits apart from it", async () => {
    const store = await openPostgresTaskStore({ url: database.url });
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    const heartbeatMs = 100;
    const registration = await registerProcess({
      store,
      instanceId: 'w-stalled',
      role: 'worker',
      settingsDigest: 'd',
      heartbeatMs,
      logger: silentLogger,
      onLost() {},
    });
    const live = async (): Promise<boolean> => (await store.listProcesses()).find((p) => p.instanceId === 'w-stalled')?.live ?? false;
    try {
      const locked = await store.create(newTaskInput());
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR UPDATE', [locked.taskId]);
      const cancel = store.transition(locked.taskId, { to: 'cancelled', now: Date.now() });
      await lockWaiter(holder, 'the cancel');
      // Three registration lifetimes (each three beats) with the batch stalled: a beat waiting on its reap would send
      // no heartbeat meanwhile, and the registration would lapse (control: the queued create below does wait).
      const queued = store.create(newTaskInput());
      await new Promise((resolve) => setTimeout(resolve, 9 * heartbeatMs));
      expect(await live()).toBe(true);
      expect(await settledSoon(queued)).toBe(false);
      await holder.query('ROLLBACK');
      expect((await cancel)?.status).toBe('cancelled');
      await queued;
    } finally {
      await holder.end();
      await registration.close();
      await store.close();
    }
  });
});
