import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { openPostgresTaskStore, type PostgresTaskStore } from '../../src/store/postgres/index.js';
import { migrate } from '../../src/store/postgres/migrations.js';
import { SQL } from '../../src/store/postgres/sql.js';
import { crossesGrowthMark, FIRST_GROWTH_MARK } from '../../src/store/postgres/table-statistics.js';
import { newTaskInput } from '../helpers/new-task.js';
import { createTestDatabase, type TestDatabase, withClient } from '../helpers/postgres.js';

// Issue 25: generic plans that PostgreSQL caches for our prepared statements while the tables are empty must not
// outlive the growth of the tables. The store analyzes its tables when the event feed crosses a growth mark, which
// invalidates every cached plan; measured here as index tuples a scoped task read walks.

describe('growth marks of the event feed', () => {
  it('are crossed by exactly the commit whose seqs include 1,024 · 2^k', () => {
    expect(FIRST_GROWTH_MARK).toBe(1024);
    expect(crossesGrowthMark(1, 1023)).toBe(false);
    expect(crossesGrowthMark(1, 1024)).toBe(true);
    expect(crossesGrowthMark(1024, 1024)).toBe(true);
    expect(crossesGrowthMark(1025, 2047)).toBe(false);
    expect(crossesGrowthMark(2040, 2050)).toBe(true);
    expect(crossesGrowthMark(2 ** 30 + 1, 2 ** 31 - 1)).toBe(false);
    expect(crossesGrowthMark(2 ** 31 - 5, 2 ** 31)).toBe(true);
    // Every seq up to 2^20 lies in exactly one commit; one-event commits cross exactly the 11 marks up to 2^20.
    let crossings = 0;
    for (let seq = 1; seq <= 2 ** 20; seq++) if (crossesGrowthMark(seq, seq)) crossings++;
    expect(crossings).toBe(11);
  });
});

describe('PostgreSQL store on a growing database (issue 25)', () => {
  let database: TestDatabase;
  let store: PostgresTaskStore | undefined;
  const scope = { ownerKey: 'anonymous', generation: 'v2' as const };

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  /** A fresh connection's view of the statistics of `mcp_tasks.tasks` (tuples its indexes and scans have read). */
  async function tasksTableStatistics(): Promise<{ indexTuples: number; seqTuples: number; analyzed: boolean }> {
    const { rows } = await withClient(database.url, (client) =>
      client.query<{ index_tuples: number; seq_tuples: number; analyzed: boolean }>(
        `SELECT COALESCE(idx_tup_fetch, 0)::int AS index_tuples, COALESCE(seq_tup_read, 0)::int AS seq_tuples,
                last_analyze IS NOT NULL AS analyzed
         FROM pg_stat_user_tables WHERE schemaname = 'mcp_tasks' AND relname = 'tasks'`,
      ),
    );
    const row = rows[0];
    if (!row) throw new Error('no statistics row for mcp_tasks.tasks');
    return { indexTuples: row.index_tuples, seqTuples: row.seq_tuples, analyzed: row.analyzed };
  }

  /**
   * Table tuples fetched per scoped read of `taskId`, over `reads` reads on the store's one connection. PostgreSQL
   * (15+) flushes a backend's counters at the end of a statement once a second has passed since its last flush, so
   * one more statement after a 1.1 s pause makes them visible to the fresh connection that reads them.
   */
  async function tuplesPerRead(taskId: string, reads: number): Promise<number> {
    const open = store as PostgresTaskStore;
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await open.now();
    const before = await tasksTableStatistics();
    for (let i = 0; i < reads; i++) expect(await open.getWithOutcome(taskId, scope, 1_000)).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await open.now();
    const after = await tasksTableStatistics();
    return (after.indexTuples - before.indexTuples + after.seqTuples - before.seqTuples) / reads;
  }

  async function createMany(count: number): Promise<void> {
    const open = store as PostgresTaskStore;
    for (let done = 0; done < count; done += 100) await Promise.all(Array.from({ length: Math.min(100, count - done) }, () => open.create(newTaskInput())));
  }

  it('reads a task through its key once the tables grew past a mark, not through every task of its owner', async () => {
    // One connection, so the plans cached on the tiny table are the ones every later read uses.
    store = await openPostgresTaskStore({ url: database.url, poolSize: 1 });
    // Autovacuum's own analyze would refresh the plans too, at a time of its choosing: the store's must be the one seen.
    await adminQuery(database.url, 'ALTER TABLE mcp_tasks.tasks SET (autovacuum_enabled = off)');
    const first = await store.create(newTaskInput());
    for (let i = 0; i < 8; i++) await store.getWithOutcome(first.taskId, scope, 1_000); // past PostgreSQL's 5 custom plans

    // Negative control: below the first mark nothing was analyzed, and the plan made for one row walks the owner's
    // ~900 tasks on every read: this measure sees the defect.
    await createMany(900);
    expect((await tasksTableStatistics()).analyzed).toBe(false);
    const stale = await tuplesPerRead(first.taskId, 10);
    expect(stale).toBeGreaterThan(100);

    // Crossing the first mark (seq 1,024) analyzes the tables, which invalidates the cached plans.
    await createMany(200);
    const deadline = Date.now() + 10_000;
    while (!(await tasksTableStatistics()).analyzed) {
      if (Date.now() > deadline) throw new Error('mcp_tasks.tasks was not analyzed within 10 s of crossing seq 1,024');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const fresh = await tuplesPerRead(first.taskId, 10);
    expect(fresh).toBeLessThanOrEqual(2);
  }, 60_000);
});

/** One statement on a connection of its own to `url`. */
async function adminQuery(url: string, sql: string): Promise<void> {
  await withClient(url, (client) => client.query(sql));
}

/** Custom and generic plans made so far for the prepared statements of `client`'s session whose text matches `like`. */
async function preparedPlans(client: pg.Client, like: string): Promise<{ generic: number; custom: number }> {
  const { rows } = await client.query<{ generic: number; custom: number }>(
    'SELECT COALESCE(SUM(generic_plans), 0)::int AS generic, COALESCE(SUM(custom_plans), 0)::int AS custom FROM pg_prepared_statements WHERE statement LIKE $1',
    [like],
  );
  return rows[0] ?? { generic: 0, custom: 0 };
}

describe('PostgreSQL store: the batch of creates keeps its generic plan (issue 25)', () => {
  let database: TestDatabase;
  let control: TestDatabase;
  let store: PostgresTaskStore | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
    control = await createTestDatabase();
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
    await control?.drop();
  });

  it('the store analyzes its one-row feed counter when it opens, so PostgreSQL stops planning each batch of creates anew', async () => {
    // The pg client that ran the batches of creates, and each batch's parameters (replayed in the control below).
    const writers = new Set<pg.Client>();
    const batches: unknown[][] = [];
    const query = pg.Client.prototype.query;
    const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      const config = args[0] as { text?: string; values?: unknown[] };
      if (config?.text === SQL.createTasksAlone) {
        writers.add(this);
        batches.push(config.values as unknown[]);
      }
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    });
    try {
      store = await openPostgresTaskStore({ url: database.url, poolSize: 1 });
      // Batches of 1 to 4 creates, one after another: arrays of every length, on the one connection.
      for (let round = 0; round < 13; round++)
        await Promise.all(Array.from({ length: (round % 4) + 1 }, () => (store as PostgresTaskStore).create(newTaskInput())));
    } finally {
      spy.mockRestore();
    }
    expect(writers.size).toBe(1);
    expect(batches).toHaveLength(13);
    // PostgreSQL's five custom plans, then the generic one kept.
    const plans = await preparedPlans([...writers][0] as pg.Client, 'WITH n AS%ins AS%');
    expect(plans.custom).toBeLessThanOrEqual(5);
    expect(plans.generic).toBeGreaterThanOrEqual(1);

    // Negative control: the same schema without the store's analyze, the same 13 batches: a custom plan each time.
    await withClient(control.url, async (client) => {
      await migrate(client);
      for (const values of batches) await client.query({ name: 'creates', text: SQL.createTasksAlone, values });
      expect(await preparedPlans(client, 'WITH n AS%ins AS%')).toEqual({ generic: 0, custom: 13 });
    });
  });
});

describe('PostgreSQL store: closing while it analyzes (issue 25)', () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase();
    // Every ANALYZE on this database sleeps 20 ms per page it reads: seconds for the tables of a thousand tasks.
    await adminQuery(database.url, `ALTER DATABASE ${database.name} SET vacuum_cost_delay = '20ms'`);
    await adminQuery(database.url, `ALTER DATABASE ${database.name} SET vacuum_cost_limit = 1`);
  });
  afterAll(async () => {
    await database?.drop();
  });

  /** Backends of the test database running an ANALYZE now. */
  async function analyzing(): Promise<number> {
    const { rows } = await withClient(database.url, (client) =>
      client.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'ANALYZE%' AND state = 'active'",
      ),
    );
    return rows[0]?.n ?? 0;
  }

  it('close cancels the analyze in flight instead of waiting for it', async () => {
    const store = await openPostgresTaskStore({ url: database.url });
    for (let done = 0; done < 1_100; done += 100) await Promise.all(Array.from({ length: 100 }, () => store.create(newTaskInput())));
    // Seq 1,024 was crossed: the growth analyze runs, slowly.
    for (let i = 0; i < 200 && (await analyzing()) === 0; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(await analyzing()).toBe(1);
    const closing = Date.now();
    await store.close();
    const closeMs = Date.now() - closing;
    expect(await analyzing()).toBe(0);
    // Negative control: the same analyze, not cancelled, on the same tables and settings, takes much longer.
    const started = Date.now();
    await adminQuery(database.url, 'ANALYZE mcp_tasks.tasks');
    const analyzeMs = Date.now() - started;
    expect(analyzeMs).toBeGreaterThan(2 * closeMs);
  }, 60_000);
});
