import { spawn, spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { silentLogger } from '../../src/core/logger.js';
import { StoreError } from '../../src/core/store-error.js';
import { checkReadiness } from '../../src/ops/probes.js';
import { KillSwitchCache } from '../../src/ops/rollout/kill-switch.js';
import { openSessionTasksSql } from '../../src/store/session-table.js';
import { MIGRATIONS, openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { migrate, type Migration } from '../../src/store/sqlite/migrations.js';
import { SQL } from '../../src/store/sqlite/sql.js';
import { newTaskInput } from '../helpers/new-task.js';
import { migrateAsPreviousSqlite, PREVIOUS_SQLITE_VERSION, previousSqliteView } from '../helpers/previous-version.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { compileSqliteStoreForWorkers } from './helpers/compiled-store.js';
import { GatedWorkers } from './helpers/gated-workers.js';

const temp = makeTempDir();
afterAll(() => temp.remove());

const VERSIONS = MIGRATIONS.map((m) => m.version);

/** A `working` task row `t1` in a file at schema version ≥ 5 (the columns since version 1). */
function insertWorkingTask(db: Database.Database): void {
  db.prepare(
    `INSERT INTO tasks (task_id, owner_key, generation, protocol_version, tool_name, arguments, client_capabilities,
      status, created_at, last_updated_at, poll_interval_ms, seq) VALUES ('t1', 'o', 'v2', 'p', 'x', '{}', '{}', 'working', 5, 5, 100, 1)`,
  ).run();
}

function versionsIn(path: string): number[] {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as Array<{ version: number }>).map((r) => r.version);
  } finally {
    db.close();
  }
}

describe('migrations across processes', () => {
  let compiled: ReturnType<typeof compileSqliteStoreForWorkers>;
  let workers: GatedWorkers;
  beforeAll(() => {
    compiled = compileSqliteStoreForWorkers();
    workers = new GatedWorkers(2, compiled.moduleUrl);
  });
  afterAll(async () => {
    await workers.terminate();
    compiled.remove();
  });

  // `fresh`: no file yet, so the openers also contend for switching it to WAL. `empty-wal`: the file exists in
  // WAL mode without a schema, so both reach the migration step at the same moment.
  it.each(['fresh', 'empty-wal'])('two processes opening one %s file at once migrate it exactly once', async (kind) => {
    type Report = { applied: number[]; pragmas: { journalMode: string; synchronous: number } };
    for (let round = 0; round < 20; round += 1) {
      const path = join(temp.dir, `${kind}-${round}.db`);
      if (kind === 'empty-wal') {
        const db = new Database(path);
        db.pragma('journal_mode = WAL');
        db.close();
      }
      const reports = (await workers.run([
        { op: 'open', args: { path } },
        { op: 'open', args: { path } },
      ])) as Report[];
      // One opener applied every version, the other none; both ended on a WAL, synchronous=NORMAL connection (the store fsyncs the log itself).
      expect(reports.map((r) => r.applied.length).sort((a, b) => a - b)).toEqual([0, VERSIONS.length]);
      expect(reports.flatMap((r) => r.applied).sort((a, b) => a - b)).toEqual(VERSIONS);
      for (const { pragmas } of reports) expect(pragmas).toMatchObject({ journalMode: 'wal', synchronous: 1 });
      expect(versionsIn(path)).toEqual(VERSIONS);
    }
  });
});

describe('migrations in one process', () => {
  it('reopening a migrated file applies nothing', async () => {
    const path = join(temp.dir, 'reopen.db');
    const first = openSqliteTaskStore({ path });
    const second = openSqliteTaskStore({ path });
    expect(first.appliedMigrations).toEqual(VERSIONS);
    expect(second.appliedMigrations).toEqual([]);
    await Promise.all([first.close(), second.close()]);
    expect(versionsIn(path)).toEqual(VERSIONS);
  });

  it('a failing migration leaves no trace (all pending versions commit or none)', () => {
    const db = new Database(join(temp.dir, 'failing.db'));
    const broken = [...MIGRATIONS, { version: 99, name: 'broken', sql: 'CREATE TABLE half (a INTEGER); SELECT nope FROM missing;', breaking: false }];
    expect(() => migrate(db, 0, broken)).toThrow(/missing/);
    expect(db.inTransaction).toBe(false);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name IN ('half', 'tasks', 'schema_migrations')").all()).toEqual([]);
    expect(migrate(db, 0)).toEqual(VERSIONS);
    db.close();
  });

  it('refuses a file whose schema is newer than this code knows (schema_mismatch), writing nothing', async () => {
    const path = join(temp.dir, 'newer.db');
    await openSqliteTaskStore({ path }).close();
    const db = new Database(path);
    db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from the future', 0)").run();
    db.close();
    const error: unknown = (() => {
      try {
        openSqliteTaskStore({ path });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe('schema_mismatch');
    expect((error as StoreError).message).toBe(
      `task store schema version 999 is newer than this mcp-tasks knows (${VERSIONS.length}), and migration 999 ("from the future") is not marked compatible with older code: upgrade mcp-tasks`,
    );
    expect(versionsIn(path)).toEqual([...VERSIONS, 999]);
  });

  it('reports a file it cannot open as a storage fault with the cause', () => {
    const error: unknown = (() => {
      try {
        openSqliteTaskStore({ path: temp.dir });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe('fault');
    expect((error as StoreError).cause).toBeInstanceOf(Error);
  });
});

describe('the first migration', () => {
  const path = join(temp.dir, 'schema.db');
  let db: Database.Database;
  beforeAll(async () => {
    await openSqliteTaskStore({ path }).close();
    db = new Database(path, { readonly: true });
  });
  afterAll(() => db.close());

  const columns = (table: string) => (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((c) => c.name);
  const cascades = (table: string) =>
    (db.prepare(`PRAGMA foreign_key_list(${table})`).all() as Array<{ table: string; on_delete: string }>).map((f) => [f.table, f.on_delete]);
  const plan = (sql: string, params: Record<string, unknown>) =>
    (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as Array<{ detail: string }>).map((r) => r.detail).join('\n');

  it('holds every table and column later features need', () => {
    expect(columns('tasks')).toEqual([
      'task_id',
      'owner_key',
      'generation',
      'protocol_version',
      'tool_name',
      'arguments',
      'client_capabilities',
      'progress_token',
      'status',
      'status_message',
      'created_at',
      'last_updated_at',
      'ttl_ms',
      'poll_interval_ms',
      'expires_at',
      'seq',
      'attempt',
      'lease_owner',
      'lease_expires_at',
      'idempotency_key',
      'request_digest',
    ]);
    expect(columns('task_outcomes')).toEqual(['task_id', 'kind', 'body']);
    expect(columns('input_requests')).toEqual(['task_id', 'key', 'request', 'response', 'state', 'created_at', 'answered_at']);
    expect(columns('task_steps')).toEqual(['task_id', 'name', 'value', 'created_at']);
    expect(columns('task_events')).toEqual(['seq', 'task_id', 'kind', 'status', 'at', 'payload']);
  });

  it('cascades child rows with their task but keeps the event log independent', () => {
    for (const table of ['task_outcomes', 'input_requests', 'task_steps']) expect(cascades(table)).toEqual([['tasks', 'CASCADE']]);
    expect(cascades('task_events')).toEqual([]);
  });

  it('serves the hot paths from indexes', () => {
    expect(plan(SQL.list, { ownerKey: 'o', generation: 'v2', afterSeq: 0, now: 0, limit: 10 })).toMatch(/USING INDEX tasks_by_owner/);
    expect(plan(SQL.dueForExpiry, { now: 0, limit: 10 })).toMatch(/USING INDEX tasks_by_expiry/);
    expect(plan(SQL.claimLapsed, { leaseOwner: 'i', now: 0, leaseExpiresAt: 1, limit: 10 })).toMatch(/USING INDEX tasks_by_lease/);
    expect(plan(SQL.idempotencyTaken, { ownerKey: 'o', idempotencyKey: 'k' })).toMatch(/USING (COVERING )?INDEX tasks_by_idempotency/);
    // The input-timeout sweep walks the partial index in ORDER BY order, without a sort step.
    const sweep = plan(SQL.waitingSince, { before: 0, limit: 10 });
    expect(sweep).toMatch(/USING INDEX tasks_waiting/);
    expect(sweep).not.toMatch(/TEMP B-TREE/);
    // Retention deletes a task's history and old tombstones by index, never by scanning the log.
    expect(plan(SQL.deleteTaskEvents, { taskId: 't' })).toMatch(/USING INDEX task_events_by_task/);
    expect(plan(SQL.pruneTombstones, { cutoff: 0, limit: 10 })).toMatch(/USING (COVERING )?INDEX task_events_expired/);
    // The GET stream's instance finds a session's tasks by the partial index on the created event's sessionId.
    const sessionTasks = openSessionTasksSql({ tasks: 'tasks', events: 'task_events', payloadSessionId: "json_extract(e.payload, '$.sessionId')" }, () => '?');
    expect((db.prepare(`EXPLAIN QUERY PLAN ${sessionTasks}`).all('s', 10) as Array<{ detail: string }>).map((r) => r.detail).join('\n')).toMatch(
      /USING INDEX task_events_by_session/,
    );
    const byTask = { taskId: 't', key: 'k', state: 'answered', response: null, now: 0 };
    for (const sql of [SQL.listInputRequests, SQL.hasPendingInput, SQL.settleInputRequest]) {
      expect(plan(sql, byTask)).toMatch(/USING (COVERING )?INDEX sqlite_autoindex_input_requests_1/);
    }
  });
});

describe('migration 2 (waiting index)', () => {
  it('upgrades a version-1 file in place, keeping its data', async () => {
    const path = join(temp.dir, 'v1.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    expect(migrate(db, 0, MIGRATIONS.slice(0, 1))).toEqual([1]);
    db.prepare(
      `INSERT INTO tasks (task_id, owner_key, generation, protocol_version, tool_name, arguments, client_capabilities,
        status, created_at, last_updated_at, poll_interval_ms, seq) VALUES ('t1', 'o', 'v2', 'p', 'x', '{}', '{}',
        'input_required', 5, 5, 100, 1)`,
    ).run();
    db.close();
    const store = openSqliteTaskStore({ path });
    try {
      expect(store.appliedMigrations).toEqual(VERSIONS.slice(1));
      expect((await store.listWaitingSince(5, 10)).map((t) => t.taskId)).toEqual(['t1']);
    } finally {
      await store.close();
    }
    expect(versionsIn(path)).toEqual(VERSIONS);
  });
});

describe('migration 3 (event retention)', () => {
  it('rebuilds the event log of a version-2 file keeping every event, and seqs go on after the highest ever handed out', async () => {
    const path = join(temp.dir, 'v2.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    expect(migrate(db, 0, MIGRATIONS.slice(0, 2))).toEqual([1, 2]);
    const append = db.prepare("INSERT INTO task_events (task_id, kind, status, at, payload) VALUES (?, 'created', 'working', 1, NULL)");
    for (const task of ['a', 'b', 'c']) append.run(task);
    // The newest event was deleted before the upgrade: its seq (3) must not come back.
    db.prepare("DELETE FROM task_events WHERE task_id = 'c'").run();
    db.close();
    const store = openSqliteTaskStore({ path });
    try {
      expect(store.appliedMigrations).toEqual(VERSIONS.slice(2));
      expect((await store.readEventsAfter(0, 10)).map((e) => [e.seq, e.taskId])).toEqual([
        [1, 'a'],
        [2, 'b'],
      ]);
      await store.writeStatusMessages([]);
      const created = await store.create({
        taskId: 'AAAAAAAAAAAAAAAAAAAAAA',
        ownerKey: 'o',
        generation: 'v2',
        protocolVersion: 'p',
        toolName: 'x',
        arguments: {},
        clientCapabilities: {},
        progressToken: null,
        statusMessage: null,
        createdAt: 1,
        ttlMs: null,
        pollIntervalMs: 100,
        leaseOwner: null,
        leaseMs: null,
      });
      expect(created.seq).toBe(4);
      await expect(store.releaseLeases('i', [created.taskId])).resolves.toEqual([]);
    } finally {
      await store.close();
    }
    const check = new Database(path, { readonly: true });
    try {
      const kinds = (check.prepare("SELECT sql FROM sqlite_master WHERE name = 'task_events'").get() as { sql: string }).sql;
      expect(kinds).toContain("'released'");
    } finally {
      check.close();
    }
  });
});

describe('migration 4 (tool state)', () => {
  it('upgrades a version-3 file in place: tasks stay, and per-owner tool state can be kept', async () => {
    const path = join(temp.dir, 'v3.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    expect(migrate(db, 0, MIGRATIONS.slice(0, 3))).toEqual([1, 2, 3]);
    db.prepare(
      `INSERT INTO tasks (task_id, owner_key, generation, protocol_version, tool_name, arguments, client_capabilities,
        status, created_at, last_updated_at, poll_interval_ms, seq) VALUES ('t1', 'o', 'v2', 'p', 'x', '{}', '{}',
        'working', 5, 5, 100, 1)`,
    ).run();
    db.close();
    const store = openSqliteTaskStore({ path });
    try {
      expect(store.appliedMigrations).toEqual(VERSIONS.slice(3));
      expect((await store.getUnscoped('t1'))?.status).toBe('working');
      await store.putToolState('o', 'check_infrastructure', 'snapshot', { n: 1 }, 10);
      expect(await store.getToolState('o', 'check_infrastructure', 'snapshot')).toEqual({ n: 1 });
    } finally {
      await store.close();
    }
    expect(versionsIn(path)).toEqual(VERSIONS);
  });
});

describe('migration 5 (timeline index)', () => {
  it('upgrades a version-4 file in place: the timeline reads one task’s events in seq order by index, retention still deletes by it', async () => {
    const path = join(temp.dir, 'v4.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    expect(migrate(db, 0, MIGRATIONS.slice(0, 4))).toEqual([1, 2, 3, 4]);
    const append = db.prepare("INSERT INTO task_events (task_id, kind, status, at, payload) VALUES (?, 'created', 'working', 1, NULL)");
    for (const task of ['a', 'b', 'a']) append.run(task);
    db.close();
    const store = openSqliteTaskStore({ path });
    try {
      expect(store.appliedMigrations).toEqual(VERSIONS.slice(4));
      expect((await store.listTaskEvents('a', 10)).map((e) => e.seq)).toEqual([1, 3]);
    } finally {
      await store.close();
    }
    expect(versionsIn(path)).toEqual(VERSIONS);
    const check = new Database(path, { readonly: true });
    try {
      expect((check.prepare("SELECT sql FROM sqlite_master WHERE name = 'task_events_by_task'").get() as { sql: string }).sql).toMatch(/\(task_id, seq\)$/);
      const plan = (sql: string, params: object) =>
        (check.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as Array<{ detail: string }>).map((row) => row.detail).join('\n');
      const timeline = plan(SQL.taskEvents, { taskId: 'a', limit: 10 });
      expect(timeline).toMatch(/USING INDEX task_events_by_task/);
      // (task_id, seq): the ORDER BY seq comes from the index, no sort step.
      expect(timeline).not.toMatch(/TEMP B-TREE/);
      expect(plan(SQL.deleteTaskEvents, { taskId: 'a' })).toMatch(/USING INDEX task_events_by_task/);
    } finally {
      check.close();
    }
  });
});

describe('migration 6 (idempotency keys, operation ledger, audit log, issue 12)', () => {
  it('upgrades a version-5 file in place; the ledger tables start empty and tasks keep their rows', async () => {
    const path = join(temp.dir, 'v5.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    expect(migrate(db, 0, MIGRATIONS.slice(0, 5))).toEqual([1, 2, 3, 4, 5]);
    insertWorkingTask(db);
    db.close();
    const store = openSqliteTaskStore({ path });
    try {
      expect(store.appliedMigrations).toEqual(VERSIONS.slice(5));
      expect(await store.getUnscoped('t1')).toMatchObject({ status: 'working' });
      expect(await store.listOperations({ limit: 10 })).toEqual([]);
    } finally {
      await store.close();
    }
    expect(versionsIn(path)).toEqual(VERSIONS);
  });
});

describe('migration 9 (kill switches, issue 15)', () => {
  it('upgrades a version-8 file in place: no switch is on, tasks keep their rows, and a switch can be set', async () => {
    const path = join(temp.dir, 'v8.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    expect(migrate(db, 0, MIGRATIONS.slice(0, 8))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    insertWorkingTask(db);
    db.close();
    const store = openSqliteTaskStore({ path });
    try {
      expect(store.appliedMigrations).toEqual(VERSIONS.slice(8));
      expect(await store.getUnscoped('t1')).toMatchObject({ status: 'working' });
      expect(await store.listKillSwitches()).toEqual([]);
      await store.setKillSwitch({ scope: '*', fallback: 'reject', reason: null, setBy: 'local', setAt: 1 });
      expect(await store.listKillSwitches()).toHaveLength(1);
    } finally {
      await store.close();
    }
    expect(versionsIn(path)).toEqual(VERSIONS);
  });
});

describe('migration 13 (draining processes)', () => {
  it('upgrades a version-12 file with a registered process in place; what an older process writes over the row or deletes leaves no mark', async () => {
    const path = join(temp.dir, 'v12.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    expect(migrate(db, 0, MIGRATIONS.slice(0, 12))).toEqual(VERSIONS.slice(0, 12));
    const now = Date.now();
    db.prepare("INSERT INTO processes VALUES ('w-old', 'worker', 'token-old', 'h', 1, 'd', ?, ?, ?)").run(now, now, now + 600_000);
    db.close();
    const store = openSqliteTaskStore({ path });
    // An older process on the same file: its statements over `processes`, as version 12's code wrote them.
    const older = new Database(path);
    older.pragma('foreign_keys = ON');
    try {
      expect(store.appliedMigrations).toEqual(VERSIONS.slice(12));
      expect(await store.listProcesses()).toEqual([expect.objectContaining({ instanceId: 'w-old', live: true, drainingSince: null })]);
      expect(await store.markProcessDraining('w-old', 'token-old')).toBe(true);
      expect((await store.listProcesses())[0]?.drainingSince).toEqual(expect.any(Number));
      expect(older.prepare('SELECT * FROM processes ORDER BY instance_id').all()).toEqual([expect.objectContaining({ instance_id: 'w-old' })]);
      // Its registration written over the row (a restart under the id): a new token, so no inherited mark.
      older
        .prepare(
          `INSERT INTO processes (instance_id, role, token, host, pid, settings_digest, started_at, heartbeat_at, expires_at)
            VALUES ('w-old', 'worker', 'token-newer', 'h', 2, 'd', @now, @now, @now + 600000)
            ON CONFLICT (instance_id) DO UPDATE SET token = excluded.token, pid = excluded.pid, started_at = excluded.started_at`,
        )
        .run({ now: Date.now() });
      expect(await store.listProcesses()).toEqual([expect.objectContaining({ token: 'token-newer', drainingSince: null })]);
      expect(await store.markProcessDraining('w-old', 'token-newer')).toBe(true);
      // Its clean stop deletes the row; the mark goes with it (no row left for the next registration to inherit).
      older.prepare("DELETE FROM processes WHERE instance_id = 'w-old' AND token = 'token-newer'").run();
      expect(older.prepare('SELECT COUNT(*) AS n FROM draining_processes').get()).toEqual({ n: 0 });
    } finally {
      older.close();
      await store.close();
    }
    expect(versionsIn(path)).toEqual(VERSIONS);
  });
});

describe('compatibility marks (no numbered migration) and rolling deploys on one file', () => {
  /** What `open` threw, or undefined. */
  const openError = (path: string): StoreError | undefined => {
    try {
      openSqliteTaskStore({ path });
    } catch (error) {
      return error as StoreError;
    }
    return undefined;
  };
  const marks = (path: string): Array<{ version: number; breaking: number | null }> => {
    const db = new Database(path, { readonly: true });
    try {
      return db.prepare('SELECT version, breaking FROM schema_migrations ORDER BY version').all() as Array<{ version: number; breaking: number | null }>;
    } finally {
      db.close();
    }
  };

  it('a process of the previous version stays ready, and would start, on a file after this code opens it (defect: a marks migration 14 made it unready); marks are written from then on', async () => {
    const path = join(temp.dir, 'previous.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    migrateAsPreviousSqlite(db);
    expect(previousSqliteView(db)).toEqual({ ready: true, startsOn: true, applied: PREVIOUS_SQLITE_VERSION });
    const store = openSqliteTaskStore({ path });
    try {
      expect(previousSqliteView(db)).toEqual({ ready: true, startsOn: true, applied: PREVIOUS_SQLITE_VERSION });
      expect(store.appliedMigrations).toEqual([]);
      expect(marks(path)).toEqual(VERSIONS.map((version) => ({ version, breaking: null })));
      // The previous code's record of a version (no `breaking`: unmarked) still runs.
      db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'by older code', 0)").run();
      expect(marks(path).at(-1)).toEqual({ version: 99, breaking: null });
      db.prepare('DELETE FROM schema_migrations WHERE version = 99').run();
      // A second open finds the column and adds nothing; the next migration carries its mark.
      await openSqliteTaskStore({ path }).close();
      const next: Migration = { version: VERSIONS.length + 1, name: 'test: next', sql: 'CREATE TABLE next_feature (id INTEGER) STRICT;', breaking: false };
      expect(migrate(db, 0, [...MIGRATIONS, next])).toEqual([next.version]);
      expect(marks(path).slice(-2)).toEqual([
        { version: VERSIONS.length, breaking: null },
        { version: next.version, breaking: 0 },
      ]);
    } finally {
      db.close();
      await store.close();
    }
  });

  /** Migrations of a newer mcp-tasks, which this code does not know: one additive, one that breaks this code. */
  const ADDITIVE: Migration = {
    version: VERSIONS.length + 1,
    name: 'test: a table of newer code',
    sql: 'CREATE TABLE newer_feature (id INTEGER) STRICT;',
    breaking: false,
  };
  const BREAKING: Migration = { version: VERSIONS.length + 2, name: 'test: drops what older code writes', sql: 'DROP TABLE tool_state;', breaking: true };

  it('rolling deploy: a process stays ready on a newer schema whose newer migration is compatible and starts again on it; a breaking one makes it unready and refuses its start (negative control)', async () => {
    const path = join(temp.dir, 'rolling.db');
    const older = openSqliteTaskStore({ path });
    const readiness = () => checkReadiness({ role: 'worker', store: older, draining: () => false, killSwitch: new KillSwitchCache(older, silentLogger) });
    const newer = new Database(path);
    try {
      expect((await readiness()).checks.migrations).toEqual({ ok: true, applied: VERSIONS.length, expected: VERSIONS.length });
      // The newer code's first process migrates the file (this code's migrate with its longer list, as it would).
      expect(migrate(newer, 0, [...MIGRATIONS, ADDITIVE])).toEqual([ADDITIVE.version]);
      const compatible = await readiness();
      expect(compatible.ready).toBe(true);
      expect(compatible.checks.migrations).toEqual({ ok: true, applied: ADDITIVE.version, expected: VERSIONS.length, newer: 'compatible' });
      await older.create(newTaskInput());
      // A crashed older process comes back (and a rollback starts): nothing applied, nothing refused.
      const restarted = openSqliteTaskStore({ path });
      expect(restarted.appliedMigrations).toEqual([]);
      await restarted.close();

      expect(migrate(newer, 0, [...MIGRATIONS, ADDITIVE, BREAKING])).toEqual([BREAKING.version]);
      const breaking = await readiness();
      expect(breaking.ready).toBe(false);
      expect(breaking.checks.migrations).toMatchObject({ ok: false, applied: BREAKING.version, newer: 'breaking' });
      const refusal = `schema version ${BREAKING.version} is newer than this mcp-tasks knows (${VERSIONS.length}), and migration ${BREAKING.version} ("${BREAKING.name}") is breaking for older code: upgrade mcp-tasks`;
      expect(breaking.checks.migrations.reason).toBe(refusal);
      const error = openError(path);
      expect(error).toBeInstanceOf(StoreError);
      expect(error?.code).toBe('schema_mismatch');
      expect(error?.message).toBe(`task store ${refusal}`);
      expect(marks(path).slice(-2)).toEqual([
        { version: ADDITIVE.version, breaking: 0 },
        { version: BREAKING.version, breaking: 1 },
      ]);
    } finally {
      newer.close();
      await older.close();
    }
  });

  it('a breaking migration is refused while a process is live on the file, naming it, with nothing applied; it applies once the process stopped; a compatible one never waits (control) (reviewer F8 of stop 45)', async () => {
    const path = join(temp.dir, 'breaking-under-live.db');
    await openSqliteTaskStore({ path }).close();
    // Another process of this host, registered (its row written as a registration writes it): older code, running.
    const older = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => older.once('exit', resolve));
    const newer = new Database(path);
    try {
      newer
        .prepare("INSERT INTO processes VALUES ('older-api', 'api', 't', ?, ?, 'd', ?, ?, ?)")
        .run(hostname(), older.pid!, Date.now(), Date.now(), Date.now() + 600_000);
      expect(migrate(newer, Date.now(), [...MIGRATIONS, ADDITIVE])).toEqual([ADDITIVE.version]);
      let refused: unknown;
      try {
        migrate(newer, Date.now(), [...MIGRATIONS, ADDITIVE, BREAKING]);
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(StoreError);
      expect((refused as StoreError).code).toBe('unavailable');
      expect((refused as StoreError).message).toContain(
        `migration ${BREAKING.version} ("${BREAKING.name}") is breaking for older code, and 1 process is live on the store: api older-api (pid ${older.pid} on `,
      );
      expect(marks(path).at(-1)).toEqual({ version: ADDITIVE.version, breaking: 0 });
      // It stops (killed: its row stays until it lapses, but no process of this host runs under that pid any more).
      older.kill('SIGKILL');
      await exited;
      expect(migrate(newer, Date.now(), [...MIGRATIONS, ADDITIVE, BREAKING])).toEqual([BREAKING.version]);
    } finally {
      newer.close();
      older.kill('SIGKILL');
    }
  });

  it("a breaking migration is not held back by this process's own predecessor (this host, this pid or a pid gone: a restart), but is by a live pid of this host (control)", () => {
    const path = join(temp.dir, 'breaking-after-restart.db');
    openSqliteTaskStore({ path }).close();
    const newer = new Database(path);
    const row = newer.prepare("INSERT OR REPLACE INTO processes VALUES ('me', 'worker', 't', ?, ?, 'd', ?, ?, ?)");
    const register = (pid: number) => row.run(hostname(), pid, Date.now(), Date.now(), Date.now() + 600_000);
    try {
      // A pid that no longer runs here (the child below has exited) and this very pid: predecessors, no live code.
      const gone = spawnSync(process.execPath, ['-e', '']).pid!;
      register(gone);
      expect(migrate(newer, Date.now(), [...MIGRATIONS, ADDITIVE])).toEqual([ADDITIVE.version]);
      register(process.pid);
      // Control: pid 1 runs on every host: a live process of this host holds the breaking migration back.
      newer.prepare("INSERT INTO processes VALUES ('init', 'api', 't', ?, 1, 'd', ?, ?, ?)").run(hostname(), Date.now(), Date.now(), Date.now() + 600_000);
      expect(() => migrate(newer, Date.now(), [...MIGRATIONS, ADDITIVE, BREAKING])).toThrow(/1 process is live on the store: api init \(pid 1 on /);
      newer.prepare("DELETE FROM processes WHERE instance_id = 'init'").run();
      expect(migrate(newer, Date.now(), [...MIGRATIONS, ADDITIVE, BREAKING])).toEqual([BREAKING.version]);
    } finally {
      newer.close();
    }
  });

  it('a known version under another name is refused (schema_mismatch), as on PostgreSQL', async () => {
    const path = join(temp.dir, 'foreign.db');
    await openSqliteTaskStore({ path }).close();
    const db = new Database(path);
    db.prepare("UPDATE schema_migrations SET name = 'someone else' WHERE version = 1").run();
    db.close();
    const error = openError(path);
    expect(error?.code).toBe('schema_mismatch');
    expect(error?.message).toBe('task store schema version 1 is "someone else", expected "initial": its schema_migrations was not written by mcp-tasks');
  });
});
