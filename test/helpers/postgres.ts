import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, vi } from 'vitest';

import { openPostgresTaskStore, type PostgresTaskStore, type PostgresTaskStoreOptions } from '../../src/store/postgres/index.js';

/**
 * PostgreSQL for tests: the server comes from `MCP_TASKS_TEST_PG_URL` (set by `.ci/run`) or from the state file
 * that `npm run pg:start` writes. Without either, a test that needs PostgreSQL FAILS with instructions; it never
 * skips. Every caller (a test file, usually in `beforeAll`) gets its own database, copied from `template0`, so
 * files never share state; {@link emptyTaskStore} empties it between the tests of one file.
 */

const STATE_FILE = resolve(import.meta.dirname, '../../.pg-test.json');

const HOW_TO_START =
  'start a private cluster with `npm run pg:start` (needs the PostgreSQL server binaries: apt-get install -y postgresql), ' +
  'or set MCP_TASKS_TEST_PG_URL=postgres://user@host:port/db to a server where that user may CREATE DATABASE';

/**
 * URL of the PostgreSQL server the tests use (any database on it; they create their own).
 * @throws Error saying how to start one when none is configured.
 */
export function testPostgresUrl(): string {
  const fromEnv = process.env.MCP_TASKS_TEST_PG_URL;
  if (fromEnv) return fromEnv;
  try {
    const state = JSON.parse(readFileSync(STATE_FILE, 'utf8')) as { url?: unknown };
    if (typeof state.url === 'string') return state.url;
  } catch {
    // fall through to the instructions
  }
  throw new Error(`This test needs PostgreSQL and none is configured: ${HOW_TO_START}.`);
}

/** A database of its own for one test or file. */
export interface TestDatabase {
  /** Database name (`mcp_tasks_t_<random>`). */
  name: string;
  /** Connection URL of that database. */
  url: string;
  /** Drop it, ending any connection still open to it. */
  drop(): Promise<void>;
}

/** Run one statement on the server's maintenance database. */
async function admin(sql: string): Promise<void> {
  const url = testPostgresUrl();
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(`PostgreSQL at ${redact(url)} is not reachable (${(error as Error).message}): ${HOW_TO_START}.`, { cause: error });
  }
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}

/** `url` pointing at `database` instead. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/**
 * Create a fresh, empty database (`CREATE DATABASE … TEMPLATE template0`). Unless `durable`, its sessions commit
 * with `synchronous_commit = off`: a commit is still a commit (visible, ordered, atomic) but does not wait for the
 * WAL flush, which only matters if the test server crashes. Benchmarks ask for `durable`.
 */
export async function createTestDatabase(options: { durable?: boolean } = {}): Promise<TestDatabase> {
  const name = `mcp_tasks_t_${randomBytes(6).toString('hex')}`;
  await admin(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8'`);
  if (options.durable !== true) await admin(`ALTER DATABASE ${name} SET synchronous_commit = off`);
  return {
    name,
    url: withDatabase(testPostgresUrl(), name),
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/**
 * Empty the task store schema of `url` (every task, event and child row; the sequences of their identity columns
 * and the feed counter back to zero), as if freshly migrated. A no-op before the first store opened the database.
 *
 * Rows are deleted, children before parents, in one transaction: on tables of a few rows that takes milliseconds,
 * where TRUNCATE (new files for every table, on a durable cluster) took ~100 ms, once per test of the PostgreSQL
 * contract suite.
 */
export async function emptyTaskStore(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // Every data table of the schema (tasks, events, the process registry, and whatever later migrations add), the
    // tables each one references, and the sequences their columns own (what TRUNCATE … RESTART IDENTITY restarts).
    const { rows } = await client.query<{ name: string; parents: string[]; sequences: string[] }>(`
      SELECT t.relname AS name,
        ARRAY(SELECT p.relname FROM pg_constraint c JOIN pg_class p ON p.oid = c.confrelid WHERE c.contype = 'f' AND c.conrelid = t.oid AND c.confrelid <> t.oid)::text[] AS parents,
        ARRAY(SELECT q.oid::regclass::text FROM pg_depend d JOIN pg_class q ON q.oid = d.objid AND q.relkind = 'S' WHERE d.refobjid = t.oid AND d.deptype IN ('a', 'i'))::text[] AS sequences
      FROM pg_class t
      WHERE t.relnamespace = to_regnamespace('mcp_tasks') AND t.relkind IN ('r', 'p') AND t.relname NOT IN ('schema_migrations', 'task_feed')`);
    if (rows.length === 0) return;
    const ordered: string[] = [];
    const visit = (name: string, path: string[]): void => {
      if (ordered.includes(name) || path.includes(name)) return;
      // Children first: every table that references this one is emptied before it.
      for (const child of rows.filter((row) => row.parents.includes(name))) visit(child.name, [...path, name]);
      ordered.push(name);
    };
    for (const row of rows) visit(row.name, []);
    const statements = [
      ...ordered.map((name) => `DELETE FROM mcp_tasks.${name}`),
      ...rows.flatMap((row) => row.sequences).map((sequence) => `ALTER SEQUENCE ${sequence} RESTART`),
      'UPDATE mcp_tasks.task_feed SET last_seq = 0',
    ];
    await client.query(`BEGIN; ${statements.join('; ')}; COMMIT`);
  } finally {
    await client.end();
  }
}

/** A PostgreSQL server of one test's own, for outages: stop and start it, or freeze it, without touching others. */
export interface PrivateCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`. */
  url: string;
  /** Stop the server (fast shutdown), keeping its data: connections are refused. */
  halt(): void;
  /** Start it again on the same port. */
  resume(): void;
  /** SIGSTOP the server and every backend: connections and queries hang (a partition or a frozen host). */
  freeze(): void;
  /** SIGCONT what {@link freeze} stopped. */
  thaw(): void;
  /** Stop it and delete its files. */
  destroy(): void;
}

const SCRIPT = resolve(import.meta.dirname, '../../scripts/test-postgres.mjs');

/** Start a private cluster with `scripts/test-postgres.mjs` (needs the PostgreSQL server binaries). */
export function startPrivateCluster(): PrivateCluster {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-tasks-pgstate-'));
  const stateFile = join(dir, 'state.json');
  const script = (command: string): string => {
    const result = spawnSync(process.execPath, [SCRIPT, command, '--state', stateFile], { encoding: 'utf8', timeout: 120_000 });
    if (result.status !== 0) {
      throw new Error(`test-postgres.mjs ${command} failed: ${result.stderr.trim()} (this test starts its own PostgreSQL: ${HOW_TO_START})`);
    }
    return result.stdout.trim();
  };
  const url = script('start');
  const state = JSON.parse(readFileSync(stateFile, 'utf8')) as { data: string };
  let frozen: number[] = [];
  const signal = (pids: number[], name: NodeJS.Signals) => {
    for (const pid of pids) {
      try {
        process.kill(pid, name);
      } catch {
        // gone already
      }
    }
  };
  return {
    url,
    halt: () => void script('halt'),
    resume: () => void script('resume'),
    freeze() {
      const postmaster = Number(readFileSync(join(state.data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      const children = spawnSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' })
        .stdout.split('\n')
        .map(Number)
        .filter((pid) => pid > 0);
      frozen = [postmaster, ...children];
      signal(frozen, 'SIGSTOP');
    },
    thaw() {
      signal(frozen, 'SIGCONT');
      frozen = [];
    },
    destroy() {
      if (frozen.length > 0) signal(frozen, 'SIGCONT');
      spawnSync(process.execPath, [SCRIPT, 'stop', '--state', stateFile], { encoding: 'utf8', timeout: 120_000 });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Plain node-postgres clients a test opens (to hold locks, watch `pg_stat_activity`, inspect tables). */
export function rawClients(): { connect(url: string): Promise<pg.Client>; endAll(): Promise<void> } {
  const open: pg.Client[] = [];
  return {
    async connect(url) {
      const client = new pg.Client({ connectionString: url });
      // A database dropped WITH (FORCE) under an open client ends it; that is expected, not an error of the test.
      client.on('error', () => undefined);
      await client.connect();
      open.push(client);
      return client;
    },
    async endAll() {
      for (const client of open.splice(0)) await client.end().catch(() => undefined);
    },
  };
}

/** Run `work` on a plain client of its own to `url` (connected first, ended after, whatever happens). */
export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** What {@link postgresStoresPerFile} gives a test file. */
export interface PostgresStoresPerFile {
  /** The file's database URL (after `beforeAll`). */
  url(): string;
  /** Open a store on the file's database (more options than the URL: batch sizes, a cipher …); closed after the test. */
  open(options?: Omit<PostgresTaskStoreOptions, 'url'>): Promise<PostgresTaskStore>;
  /** Plain clients the test opens (to hold locks, …); ended after the test. */
  clients: ReturnType<typeof rawClients>;
}

/**
 * The fixture most PostgreSQL store test files share: a database of the file's own (created before its tests,
 * dropped after them), emptied before each test; the stores and raw clients a test opens are closed after it, and
 * spies restored. Registers the vitest hooks, so call it at the top level of the file.
 */
export function postgresStoresPerFile(): PostgresStoresPerFile {
  let database: TestDatabase | undefined;
  const stores: PostgresTaskStore[] = [];
  const clients = rawClients();
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  beforeEach(async () => {
    await emptyTaskStore((database as TestDatabase).url);
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await clients.endAll();
    await Promise.all(stores.splice(0).map((store) => store.close()));
  });
  afterAll(async () => {
    await database?.drop();
  });
  return {
    url: () => (database as TestDatabase).url,
    async open(options = {}) {
      const store = await openPostgresTaskStore({ ...options, url: (database as TestDatabase).url });
      stores.push(store);
      return store;
    },
    clients,
  };
}

/**
 * Wait until a backend of `client`'s database (other than `client`'s own) waits on a lock, and answer its pid: a
 * test that holds a row lock knows its statement is queued behind it. Throws after `timeoutMs` with `what`.
 */
/**
 * How many backends of `applicationName` wait on a lock (row, transaction or advisory), once `count` do or after
 * `timeoutMs`: read through `client`, clearing the per-transaction snapshot of `pg_stat_activity` each look.
 */
export async function lockWaitersOf(client: pg.Client, applicationName: string, count: number, timeoutMs = 2_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await client.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
      [applicationName],
    );
    const waiting = rows[0]!.n;
    if (waiting >= count || Date.now() > deadline) return waiting;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export async function lockWaiter(client: pg.Client, what: string, timeoutMs = 10_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // pg_stat_activity is read once per transaction (the holder usually is in one): clear that snapshot each time.
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await client.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> pg_backend_pid()",
    );
    if (rows[0] !== undefined) return rows[0].pid;
    if (Date.now() > deadline) throw new Error(`${what} never waited on a lock`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
