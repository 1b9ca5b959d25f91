import type pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { registerCliProcess } from '../../src/cli/registration.js';
import { StartupError } from '../../src/cli/usage-error.js';
import { silentLogger } from '../../src/core/logger.js';
import { StoreError } from '../../src/core/store-error.js';
import { registerProcess } from '../../src/execution/process-registration.js';
import { checkReadiness } from '../../src/ops/probes.js';
import { KillSwitchCache } from '../../src/ops/rollout/kill-switch.js';
import { openPostgresTaskStore, type PostgresTaskStore } from '../../src/store/postgres/index.js';
import { MIGRATION_LOCK_ATTEMPTS, MIGRATION_LOCK_KEY, MIGRATION_LOCK_TIMEOUT_MS, MIGRATION_RETRY_DELAY_MS } from '../../src/store/postgres/migration-locks.js';
import { migrate, type MigrateOptions, POSTGRES_MIGRATIONS, type PostgresMigration } from '../../src/store/postgres/migrations.js';
import { expectStoreError } from '../../src/testing/store-contract.js';
import { captureLogger } from '../helpers/capture-logger.js';
import { newTaskInput } from '../helpers/new-task.js';
import { BREAKING_REFUSAL, NEWER_ADDITIVE, NEWER_BREAKING } from '../helpers/newer-postgres-migrations.js';
import { createTestDatabase, rawClients, type TestDatabase } from '../helpers/postgres.js';
import { migrateAsPreviousPostgres, PREVIOUS_POSTGRES_VERSION, previousPostgresView } from '../helpers/previous-version.js';

// Migrations on PostgreSQL while other sessions use the database: older processes on a schema newer code migrated
// (compatibility marks), and migrations that wait for a table lock (lock_timeout, retries). The
// upgrade of each earlier version stays in postgres-task-store.test.ts. Every test has a database of its own.

const KNOWN = POSTGRES_MIGRATIONS.length;
const databases: TestDatabase[] = [];
const stores: PostgresTaskStore[] = [];
const clients = rawClients();

afterEach(async () => {
  await clients.endAll();
  await Promise.all(stores.splice(0).map((store) => store.close()));
});
afterAll(async () => {
  await Promise.all(databases.splice(0).map((database) => database.drop()));
});

async function database(): Promise<TestDatabase> {
  const created = await createTestDatabase();
  databases.push(created);
  return created;
}

async function open(url: string): Promise<PostgresTaskStore> {
  const store = await openPostgresTaskStore({ url });
  stores.push(store);
  return store;
}

const marks = async (client: pg.Client): Promise<Array<{ version: number; breaking: boolean | null }>> =>
  (await client.query('SELECT version, breaking FROM mcp_tasks.schema_migrations ORDER BY version')).rows;

const ADDITIVE = NEWER_ADDITIVE;
const BREAKING = NEWER_BREAKING;

describe('the compatibility marks column (no numbered migration: defect, a marks migration 15 made every process of the previous version 503)', () => {
  it('a process of the previous version stays ready, and would start, on the database after this code starts on it; marks are written from then on', async () => {
    const fresh = await database();
    const previous = await clients.connect(fresh.url);
    await migrateAsPreviousPostgres(previous);
    expect(await previousPostgresView(previous)).toEqual({ ready: true, startsOn: true, applied: PREVIOUS_POSTGRES_VERSION });
    const store = await open(fresh.url);
    // The previous version's statements, prepared before this code started, still run and still find it current.
    expect(await previousPostgresView(previous)).toEqual({ ready: true, startsOn: true, applied: PREVIOUS_POSTGRES_VERSION });
    expect(store.appliedMigrations).toEqual([]);
    expect(await store.schemaStatus()).toMatchObject({ state: 'current' });
    expect(await marks(previous)).toEqual(POSTGRES_MIGRATIONS.map((m) => ({ version: m.version, breaking: null })));
    // The next migration this code's successors apply carries its mark; the rows before it stay unmarked.
    expect(await migrate(previous, [...POSTGRES_MIGRATIONS, ADDITIVE])).toEqual([ADDITIVE.version]);
    expect((await marks(previous)).slice(-2)).toEqual([
      { version: KNOWN, breaking: null },
      { version: ADDITIVE.version, breaking: false },
    ]);
  });

  it('the column is added once: a later start does not wait for a session that holds schema_migrations (no ACCESS EXCLUSIVE when the column exists)', async () => {
    const fresh = await database();
    await (await open(fresh.url)).close();
    const holder = await holdTable(fresh.url, 'schema_migrations');
    const { ms, value, error } = await settledIn(open(fresh.url));
    expect(error).toBeUndefined();
    expect(value?.appliedMigrations).toEqual([]);
    expect(ms).toBeLessThan(2_000);
    await holder.client.query('ROLLBACK');
  });
});

describe('rolling deploy: an older process on a newer schema', () => {
  it('stays ready and keeps working while newer code applies a compatible migration, and starts again on it; a breaking one makes it unready and refuses its start (negative control)', async () => {
    const shared = await database();
    // The older process: this code, running before the newer code's first process migrates.
    const older = await open(shared.url);
    const readiness = () => checkReadiness({ role: 'api', store: older, draining: () => false, killSwitch: new KillSwitchCache(older, silentLogger) });
    expect((await readiness()).checks.migrations).toEqual({ ok: true, applied: KNOWN, expected: KNOWN });

    // The newer code's first process migrates (this code's migrate with the newer list, as that code would).
    const newer = await clients.connect(shared.url);
    expect(await migrate(newer, [...POSTGRES_MIGRATIONS, ADDITIVE])).toEqual([ADDITIVE.version]);
    const compatible = await readiness();
    expect(compatible.ready).toBe(true);
    expect(compatible.checks.migrations).toEqual({ ok: true, applied: ADDITIVE.version, expected: KNOWN, newer: 'compatible' });
    const task = await older.create(newTaskInput());
    expect((await older.getUnscoped(task.taskId))?.status).toBe('working');
    // A crashed older pod comes back, and a rollback starts: nothing applied, nothing refused.
    expect((await open(shared.url)).appliedMigrations).toEqual([]);

    expect(await migrate(newer, [...POSTGRES_MIGRATIONS, ADDITIVE, BREAKING])).toEqual([BREAKING.version]);
    expect((await marks(newer)).slice(-2)).toEqual([
      { version: ADDITIVE.version, breaking: false },
      { version: BREAKING.version, breaking: true },
    ]);
    const breaking = await readiness();
    expect(breaking.ready).toBe(false);
    const refusal = BREAKING_REFUSAL;
    expect(breaking.checks.migrations).toEqual({ ok: false, applied: BREAKING.version, expected: KNOWN, newer: 'breaking', reason: refusal });
    const refused = await expectStoreError(openPostgresTaskStore({ url: shared.url }), 'schema_mismatch');
    expect(refused.message).toBe(`task store ${refusal}`);
  });

  it('control: code that knows the breaking migration starts on the same rows; code one version short of it is refused', async () => {
    const shared = await database();
    const newer = await clients.connect(shared.url);
    await migrate(newer, [...POSTGRES_MIGRATIONS, ADDITIVE, BREAKING]);
    expect(await migrate(newer, [...POSTGRES_MIGRATIONS, ADDITIVE, BREAKING])).toEqual([]);
    await expectStoreError(migrate(newer, [...POSTGRES_MIGRATIONS, ADDITIVE]), 'schema_mismatch');
  });
});

describe('a breaking migration while processes of older code are live (reviewer F8 of stop 45: it was applied under them)', () => {
  it('is refused, naming them, with nothing applied; once they stop it applies; a compatible one never waits (control)', async () => {
    const shared = await database();
    const older = await open(shared.url);
    const newer = await clients.connect(shared.url);
    // A process of another host, registered (its row as a registration writes it): older code, running there.
    await newer.query(
      `INSERT INTO mcp_tasks.processes VALUES ('older-worker', 'worker', 't', 'another-host', 4242, 'd', 0, 0, (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 600000)`,
    );
    // Control: the additive one goes through under the live process.
    expect(await migrate(newer, [...POSTGRES_MIGRATIONS, ADDITIVE])).toEqual([ADDITIVE.version]);
    const refused = await expectStoreError(migrate(newer, [...POSTGRES_MIGRATIONS, ADDITIVE, BREAKING]), 'unavailable');
    expect(refused.message).toContain(
      `task store migration ${BREAKING.version} ("${BREAKING.name}") is breaking for older code, and 1 process is live on the store: worker older-worker (pid 4242 on another-host)`,
    );
    expect(refused.message).toMatch(/stop them .*Nothing was migrated$/);
    expect((await marks(newer)).at(-1)).toEqual({ version: ADDITIVE.version, breaking: false });
    // The older code keeps working on the schema it was written for.
    expect((await older.getUnscoped((await older.create(newTaskInput())).taskId))?.status).toBe('working');
    // It stops (a clean stop deletes its registration).
    await newer.query("DELETE FROM mcp_tasks.processes WHERE instance_id = 'older-worker'");
    expect(await migrate(newer, [...POSTGRES_MIGRATIONS, ADDITIVE, BREAKING])).toEqual([BREAKING.version]);
  });

  it('a process that opened the store before the breaking migration and registers after it is refused at registration (review: the guard counts registered processes only)', async () => {
    const shared = await database();
    const older = await open(shared.url);
    const newer = await clients.connect(shared.url);
    expect(await migrate(newer, [...POSTGRES_MIGRATIONS, ADDITIVE, BREAKING])).toEqual([ADDITIVE.version, BREAKING.version]);
    const settings = { settingsDigest: 'd', heartbeatMs: 1_000, store: { kind: 'postgres', url: shared.url }, encryption: undefined } as never;
    const refused = await registerCliProcess(older, settings, 'api', 'api-started-before', silentLogger).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StartupError);
    expect((refused as Error).message).toBe(`the task store's schema changed while this process started: task store ${BREAKING_REFUSAL}`);
    // Its registration went with the refusal, not left to lapse.
    expect(await older.listProcesses()).toEqual([]);
  });
});

/** A migration of newer code that needs `ACCESS EXCLUSIVE` on the busiest table, as adding a column does. */
const ALTER_TASKS: PostgresMigration = {
  version: KNOWN + 1,
  name: 'test: a column on tasks',
  sql: 'ALTER TABLE mcp_tasks.tasks ADD COLUMN newer_note text;',
  breaking: false,
};

/** A session in a transaction that read `table` and stays open: it holds `ACCESS SHARE` on it until it ends. */
async function holdTable(url: string, table: string): Promise<{ client: pg.Client; pid: number }> {
  const client = await clients.connect(url);
  const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  await client.query('BEGIN');
  await client.query(`SELECT count(*) FROM mcp_tasks.${table}`);
  return { client, pid };
}

/**
 * Run `sql` on `client` again and again (50 ms apart) until `done` settles: the longest one took how long (ms). The
 * other traffic on a table: while a migration waits for its lock there, each such statement queues behind it.
 */
async function longestWhile(done: Promise<unknown>, client: pg.Client, sql: string): Promise<number> {
  let settled = false;
  void done.finally(() => (settled = true)).catch(() => undefined);
  let longest = 0;
  while (!settled) {
    const started = performance.now();
    await client.query(sql);
    longest = Math.max(longest, performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return longest;
}

const settledIn = async <T>(work: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> => {
  const started = performance.now();
  try {
    const value = await work;
    return { ms: performance.now() - started, value };
  } catch (error) {
    return { ms: performance.now() - started, error };
  }
};

describe('a migration that waits for a table lock (defect: migrations on PostgreSQL waited for locks without a bound)', () => {
  const FAST: MigrateOptions = { lockTimeoutMs: 1_000, attempts: 3, retryDelayMs: 200 };

  it('waits at most lock_timeout per try, rolls back between tries, then fails typed naming the table and its holder; the table’s readers queue at most about lock_timeout', async () => {
    const shared = await database();
    const migrator = await clients.connect(shared.url);
    await migrate(migrator);
    const holder = await holdTable(shared.url, 'tasks');
    const reader = await clients.connect(shared.url);
    const migration = settledIn(migrate(migrator, [...POSTGRES_MIGRATIONS, ALTER_TASKS], FAST));
    const longestRead = await longestWhile(migration, reader, 'SELECT count(*) FROM mcp_tasks.tasks');
    const { ms, error } = await migration;
    // Three tries of 1 s with two pauses of 0.2–0.4 s (jittered) between them.
    expect(ms).toBeGreaterThanOrEqual(3 * 1_000 + 2 * 200 - 50);
    expect(ms).toBeLessThan(3 * 1_000 + 2 * 400 + 1_500);
    // Readers did queue behind the waiting ALTER (the classic outage; without this the bound below proves nothing),
    // but never longer than about one lock_timeout.
    expect(longestRead).toBeGreaterThan(300);
    expect(longestRead).toBeLessThan(1_000 + 500);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe('unavailable');
    expect((error as StoreError).message).toMatch(
      new RegExp(
        `^task store migration ${ALTER_TASKS.version} \\("test: a column on tasks"\\) could not take its lock within 1000 ms on 3 tries: ` +
          `mcp_tasks\\.tasks is locked by pid ${holder.pid} \\(in a transaction for \\d+ s\\); end that transaction \\(let it commit or roll back, ` +
          `or SELECT pg_terminate_backend\\(${holder.pid}\\)\\) and start again\\. Nothing was migrated$`,
      ),
    );
    expect((await migrator.query('SELECT max(version)::int AS v FROM mcp_tasks.schema_migrations')).rows).toEqual([{ v: KNOWN }]);
    // Once the holder ends, the same migration goes through.
    await holder.client.query('ROLLBACK');
    expect(await migrate(migrator, [...POSTGRES_MIGRATIONS, ALTER_TASKS], FAST)).toEqual([ALTER_TASKS.version]);
  });

  it('a lock released between tries: the next try applies the migration', async () => {
    const shared = await database();
    const migrator = await clients.connect(shared.url);
    await migrate(migrator);
    const holder = await holdTable(shared.url, 'tasks');
    setTimeout(() => void holder.client.query('ROLLBACK'), 1_500);
    const { ms, value, error } = await settledIn(migrate(migrator, [...POSTGRES_MIGRATIONS, ALTER_TASKS], FAST));
    expect(error).toBeUndefined();
    expect(value).toEqual([ALTER_TASKS.version]);
    // The first try gave up at 1 s, the second (from 1.2–1.4 s) got the lock when the holder ended at 1.5 s.
    expect(ms).toBeGreaterThan(1_400);
    expect(ms).toBeLessThan(3_000);
  });

  it('control: without lock_timeout (lockTimeoutMs 0, how migrate ran before) the migration and the table’s readers wait as long as the holder lives', async () => {
    const shared = await database();
    const migrator = await clients.connect(shared.url);
    await migrate(migrator);
    const holder = await holdTable(shared.url, 'tasks');
    const reader = await clients.connect(shared.url);
    const migration = settledIn(migrate(migrator, [...POSTGRES_MIGRATIONS, ALTER_TASKS], { ...FAST, lockTimeoutMs: 0 }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const read = settledIn(reader.query('SELECT count(*) FROM mcp_tasks.tasks'));
    // Past everything the bounded migration above takes in all (3.4–3.8 s), both are still waiting for locks.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const waiting = await holder.client.query<{ waiting: number }>(
      "SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    );
    expect(waiting.rows).toEqual([{ waiting: 2 }]);
    await holder.client.query('ROLLBACK');
    expect((await migration).value).toEqual([ALTER_TASKS.version]);
    expect((await read).ms).toBeGreaterThan(4_000);
  });

  it('at start, with the production settings: an older process’s probe of schema_migrations waits at most about 0.5 s while a held lock keeps the marks column out (a database of the previous version); open then fails typed (about 15–23 s)', async () => {
    expect([MIGRATION_LOCK_TIMEOUT_MS, MIGRATION_LOCK_ATTEMPTS, MIGRATION_RETRY_DELAY_MS]).toEqual([500, 10, 1_000]);
    const shared = await database();
    const older = await clients.connect(shared.url);
    await migrateAsPreviousPostgres(older);
    // A long transaction that read the version table (a doctor run, a psql session left open).
    const holder = await holdTable(shared.url, 'schema_migrations');
    const opening = settledIn(openPostgresTaskStore({ url: shared.url }));
    // The status probe of the older process (its readiness) during the upgrade.
    const longestProbe = await longestWhile(opening, older, 'SELECT COALESCE(MAX(version), 0) AS v FROM mcp_tasks.schema_migrations');
    const { ms, error } = await opening;
    expect(longestProbe).toBeGreaterThan(200);
    expect(longestProbe).toBeLessThan(MIGRATION_LOCK_TIMEOUT_MS + 700);
    // Ten tries of 0.5 s, nine pauses of 1–2 s.
    expect(ms).toBeGreaterThanOrEqual(10 * 500 + 9 * 1_000 - 100);
    expect(ms).toBeLessThan(10 * 500 + 9 * 2_000 + 3_000);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe('unavailable');
    expect((error as StoreError).message).toMatch(
      new RegExp(
        `^task store migration \\(adding schema_migrations\\.breaking\\) could not take its lock within 500 ms on 10 tries: mcp_tasks\\.schema_migrations is locked by pid ${holder.pid} `,
      ),
    );
    expect((await older.query('SELECT max(version)::int AS v FROM mcp_tasks.schema_migrations')).rows).toEqual([{ v: 14 }]);
  }, 40_000);
});

/**
 * A migration of newer code on `processes`, which every process heartbeats into: a compatible one that needs a lock on `processes` its heartbeats conflict with (`SHARE`, as an index built
 * without `CONCURRENTLY` takes). Not a breaking one: a breaking migration is refused outright while processes are
 * live (reviewer F8 of stop 45), before it takes any lock.
 */
const ALTER_PROCESSES: PostgresMigration = {
  version: KNOWN + 1,
  name: 'test: an index on processes',
  sql: 'CREATE INDEX processes_host_test ON mcp_tasks.processes (host);',
  breaking: false,
};

describe('a migration that waits for the lock of processes while processes heartbeat (defect: a 3 s lock_timeout, the whole registration lifetime, got live processes reaped)', () => {
  /**
   * Four registered processes on two stores (each heartbeating every 1000 ms: lifetime 3000 ms, and reaping the
   * others) while two processes start together and migrate against a session holding ROW EXCLUSIVE on `processes`.
   * Returns the registrations' warnings of a reap or a lapsed registration, the longest time any registration went
   * without a heartbeat that renewed it (ms: from the last one before the migrations to the last one after), and how
   * each migration ended.
   */
  async function migrateWhileRegistered(options: MigrateOptions): Promise<{ lapses: string[]; longestGapMs: number; errors: unknown[] }> {
    const shared = await database();
    const { logger, lines } = captureLogger();
    const beats = new Map<string, number[]>();
    /** The store as a registration sees it, noting when each of its heartbeats renewed it. */
    const noting = (store: PostgresTaskStore): PostgresTaskStore =>
      new Proxy(store, {
        get(target, property) {
          if (property === 'heartbeatProcess')
            return async (instanceId: string, token: string, ttlMs: number) => {
              const renewed = await target.heartbeatProcess(instanceId, token, ttlMs);
              if (renewed) beats.set(instanceId, [...(beats.get(instanceId) ?? []), performance.now()]);
              return renewed;
            };
          const value: unknown = Reflect.get(target, property, target);
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        },
      });
    const storeA = await open(shared.url);
    const storeB = await open(shared.url);
    const registrations = await Promise.all(
      [storeA, storeA, storeB, storeB].map((store, i) =>
        registerProcess({
          store: noting(store),
          instanceId: `w-${i}`,
          role: 'worker',
          settingsDigest: 'd',
          heartbeatMs: 1_000,
          logger,
          onLost: () => undefined,
        }),
      ),
    );
    try {
      // Every registration has beaten at least once before the migrations start.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const holder = await clients.connect(shared.url);
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE mcp_tasks.processes IN ROW EXCLUSIVE MODE');
      const [first, second] = [await clients.connect(shared.url), await clients.connect(shared.url)];
      const started = performance.now();
      const results = await Promise.all([first, second].map((client) => settledIn(migrate(client, [...POSTGRES_MIGRATIONS, ALTER_PROCESSES], options))));
      // One more lifetime: a reap queued late would land now.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await holder.query('ROLLBACK');
      const lapses = lines
        .filter((line) => line.level === 'warn' && /lapsed|stopped heartbeating/.test(line.message ?? ''))
        .map((line) => `${line.message} ${JSON.stringify(line.fields.instanceIds ?? line.fields.instanceId)}`);
      let longestGapMs = 0;
      for (const times of beats.values()) {
        const from = times.filter((at) => at < started).at(-1) ?? started;
        const after = [from, ...times.filter((t) => t >= started)];
        for (let i = 1; i < after.length; i += 1) longestGapMs = Math.max(longestGapMs, after[i]! - after[i - 1]!);
      }
      expect((await storeA.listProcesses()).map((p) => p.instanceId).sort()).toEqual(['w-0', 'w-1', 'w-2', 'w-3']);
      return { lapses, longestGapMs, errors: results.map((r) => r.error) };
    } finally {
      await Promise.all(registrations.map((registration) => registration.close()));
    }
  }

  it('with the production lock_timeout and pauses, two migrators starting together: every registration is renewed well within its lifetime, none is reaped', async () => {
    const { lapses, longestGapMs, errors } = await migrateWhileRegistered({ attempts: 3 });
    expect(errors.map((error) => (error as StoreError).code)).toEqual(['unavailable', 'unavailable']);
    // A beat interval plus one lock_timeout, and slack: well under the 3000 ms lifetime.
    expect(longestGapMs).toBeLessThan(2_500);
    expect(lapses).toEqual([]);
  }, 40_000);

  it('control: with the former 3 s lock_timeout a registration goes its whole lifetime without a heartbeat (lapsed: any reap then releases it)', async () => {
    const { longestGapMs } = await migrateWhileRegistered({ attempts: 2, lockTimeoutMs: 3_000 });
    expect(longestGapMs).toBeGreaterThanOrEqual(3_000);
  }, 40_000);
});

describe('waiting for the migration advisory lock (defect: the wait ran under the pool’s statement_timeout)', () => {
  /** Another session holding the migration advisory lock (a process migrating) for `ms`. */
  async function holdAdvisoryLock(url: string): Promise<{ client: pg.Client; pid: number }> {
    const client = await clients.connect(url);
    await client.query("SET application_name = 'another migrator'");
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await client.query('SELECT pg_advisory_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
    return { client, pid };
  }

  it('a store whose statement_timeout is shorter than the wait waits for the lock, then migrates', async () => {
    const fresh = await database();
    const holder = await holdAdvisoryLock(fresh.url);
    setTimeout(() => void holder.client.query('SELECT pg_advisory_unlock($1::bigint)', [MIGRATION_LOCK_KEY]), 2_500);
    const { ms, value, error } = await settledIn(openPostgresTaskStore({ url: fresh.url, statementTimeoutMs: 1_000 }));
    if (value) stores.push(value);
    expect(error).toBeUndefined();
    expect(value?.appliedMigrations).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version));
    expect(ms).toBeGreaterThan(2_400);
  });

  it('the wait is bounded: then a typed error names the session holding the lock; nothing migrated', async () => {
    const fresh = await database();
    const holder = await holdAdvisoryLock(fresh.url);
    const migrator = await clients.connect(fresh.url);
    const { ms, error } = await settledIn(migrate(migrator, POSTGRES_MIGRATIONS, { advisoryWaitMs: 600 }));
    expect(ms).toBeGreaterThanOrEqual(550);
    expect(ms).toBeLessThan(2_000);
    expect((error as StoreError).code).toBe('unavailable');
    expect((error as StoreError).message).toBe(
      `task store migrations are held by pid ${holder.pid} ("another migrator") for ${(error as StoreError).message.match(/for (\d+) s/)?.[1]} s ` +
        `(another process migrating, or a session holding advisory lock ${MIGRATION_LOCK_KEY}); waited 600 ms. ` +
        `Start again once it ends (or SELECT pg_terminate_backend(${holder.pid}) if it is stuck). Nothing was migrated`,
    );
    expect((await migrator.query("SELECT to_regclass('mcp_tasks.schema_migrations') AS t")).rows).toEqual([{ t: null }]);
  });
});
