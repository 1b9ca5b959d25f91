import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { openPostgresTaskStore, type PostgresTaskStore } from '../../src/store/postgres/index.js';
import { crossesGrowthMark, FIRST_GROWTH_MARK } from '../../src/store/postgres/table-statistics.js';
import { newTaskInput } from '../helpers/new-task.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

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
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ index_tuples: number; seq_tuples: number; analyzed: boolean }>(
        `SELECT COALESCE(idx_tup_fetch, 0)::int AS index_tuples, COALESCE(seq_tup_read, 0)::int AS seq_tuples,
                last_analyze IS NOT NULL AS analyzed
         FROM pg_stat_user_tables WHERE schemaname = 'mcp_tasks' AND relname = 'tasks'`,
      );
      const row = rows[0];
      if (!row) throw new Error('no statistics row for mcp_tasks.tasks');
      return { indexTuples: row.index_tuples, seqTuples: row.seq_tuples, analyzed: row.analyzed };
    } finally {
      await client.end();
    }
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

describe('PostgreSQL store: generic plans for the write batches (issue 25)', () => {
  let database: TestDatabase;
  let store: PostgresTaskStore | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it('a batch of creates is never planned for its values: its connection uses the generic plan; reads keep custom plans', async () => {
    // The pg clients that ran each kind of statement (the batcher's creates, the pool's reads).
    const clients = { create: new Set<pg.Client>(), read: new Set<pg.Client>() };
    const query = pg.Client.prototype.query;
    const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      const text = String(typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text);
      if (text.includes('INSERT INTO mcp_tasks.tasks')) clients.create.add(this);
      if (text.startsWith('SELECT t.task_id')) clients.read.add(this);
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    });
    try {
      store = await openPostgresTaskStore({ url: database.url, poolSize: 3, maxInFlightBatches: 1 });
      // Batches of 1 to 4 creates, one after another: arrays of every length, on the one write connection.
      for (let round = 0; round < 12; round++)
        await Promise.all(Array.from({ length: (round % 4) + 1 }, () => (store as PostgresTaskStore).create(newTaskInput())));
      const task = await store.create(newTaskInput());
      for (let i = 0; i < 8; i++) await store.getWithOutcome(task.taskId, { ownerKey: 'anonymous', generation: 'v2' }, 1_000);
    } finally {
      spy.mockRestore();
    }
    expect(clients.create.size).toBe(1);
    const plans = async (client: pg.Client, like: string) => {
      const { rows } = await client.query<{ generic: number; custom: number }>(
        'SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE statement LIKE $1',
        [like],
      );
      return rows.reduce((sum, row) => ({ generic: sum.generic + row.generic, custom: sum.custom + row.custom }), { generic: 0, custom: 0 });
    };
    const [writer] = [...clients.create];
    const creates = await plans(writer as pg.Client, '%INSERT INTO mcp_tasks.tasks%');
    expect(creates.custom).toBe(0);
    expect(creates.generic).toBeGreaterThanOrEqual(12);
    // Negative control: on a read connection PostgreSQL's default applies, and this measure sees its custom plans.
    const reads = { generic: 0, custom: 0 };
    for (const reader of clients.read) {
      const counted = await plans(reader, 'SELECT t.task_id%');
      reads.generic += counted.generic;
      reads.custom += counted.custom;
    }
    expect(reads.custom).toBeGreaterThanOrEqual(5);
  });
});
