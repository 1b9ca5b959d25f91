import type Database from 'better-sqlite3';

import {
  type AppliedMigration,
  assertMayStartOn,
  assertNoLiveProcessesFor,
  judgeSchema,
  type LiveRegistration,
  type MigrateOutcome,
  type MigrationMark,
} from '../../core/schema-compatibility.js';

/**
 * One forward-only schema step. Versions start at 1 and are never edited once released; `breaking` says whether code
 * that predates it can keep running on it (see {@link MigrationMark.breaking}; recorded in `schema_migrations`).
 */
export interface Migration extends MigrationMark {
  sql: string;
}

/**
 * Migration 1 already holds every column and table the later features need (input requests, steps,
 * idempotency, leases, the event log), so those features add code, not schema churn.
 *
 * Tables are STRICT so a wrong type from a bug is rejected instead of silently stored. JSON columns are TEXT
 * written by `JSON.stringify` and kept verbatim. Child rows cascade with their task, but `task_events` has no
 * foreign key on purpose: the log is append-only and an `expired` event must outlive the deleted task.
 */
const V1_INITIAL = `
CREATE TABLE tasks (
  task_id             TEXT    NOT NULL PRIMARY KEY,
  owner_key           TEXT    NOT NULL,
  generation          TEXT    NOT NULL CHECK (generation IN ('v1', 'v2')),
  protocol_version    TEXT    NOT NULL,
  tool_name           TEXT    NOT NULL,
  arguments           TEXT    NOT NULL,
  client_capabilities TEXT    NOT NULL,
  progress_token      TEXT,
  status              TEXT    NOT NULL
                      CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
  status_message      TEXT,
  created_at          INTEGER NOT NULL,
  last_updated_at     INTEGER NOT NULL,
  ttl_ms              INTEGER,
  poll_interval_ms    INTEGER NOT NULL,
  expires_at          INTEGER,
  seq                 INTEGER NOT NULL UNIQUE,
  attempt             INTEGER NOT NULL DEFAULT 0,
  lease_owner         TEXT,
  lease_expires_at    INTEGER,
  idempotency_key     TEXT,
  request_digest      TEXT
) STRICT;

-- tasks/list: keyset walk of one owner's tasks of one generation.
CREATE INDEX tasks_by_owner ON tasks (owner_key, generation, seq);
-- Sweeper: due tasks in expiry order; unlimited tasks are never due.
CREATE INDEX tasks_by_expiry ON tasks (expires_at) WHERE expires_at IS NOT NULL;
-- Recovery: working tasks whose lease lapsed.
CREATE INDEX tasks_by_lease ON tasks (status, lease_expires_at);
-- Idempotent create: one key per owner.
CREATE UNIQUE INDEX tasks_by_idempotency ON tasks (owner_key, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE task_outcomes (
  task_id TEXT NOT NULL PRIMARY KEY REFERENCES tasks (task_id) ON DELETE CASCADE,
  kind    TEXT NOT NULL CHECK (kind IN ('result', 'error')),
  body    TEXT NOT NULL
) STRICT;

CREATE TABLE input_requests (
  task_id     TEXT    NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
  key         TEXT    NOT NULL,
  request     TEXT    NOT NULL,
  response    TEXT,
  state       TEXT    NOT NULL CHECK (state IN ('pending', 'answered', 'superseded')),
  created_at  INTEGER NOT NULL,
  answered_at INTEGER,
  PRIMARY KEY (task_id, key)
) STRICT;

CREATE TABLE task_steps (
  task_id    TEXT    NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
  name       TEXT    NOT NULL,
  value      TEXT    NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (task_id, name)
) STRICT;

-- AUTOINCREMENT: seq values are never reused, even after the newest rows are deleted, so a tail never
-- mistakes a new event for one it already read.
CREATE TABLE task_events (
  seq     INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  task_id TEXT    NOT NULL,
  kind    TEXT    NOT NULL CHECK (kind IN ('created', 'status', 'message', 'attempt', 'input', 'expired')),
  status  TEXT    NOT NULL,
  at      INTEGER NOT NULL,
  payload TEXT
) STRICT;
`;

/**
 * The input-timeout sweep (`SQL.waitingSince`) looks for the oldest `input_required` tasks. Partial, so it holds
 * only the (few) waiting tasks and is not rewritten by the frequent `last_updated_at` writes of working tasks.
 * `status` leads although it is constant: without ANALYZE statistics SQLite otherwise prefers the equality match
 * on `tasks_by_lease (status, …)` and sorts; `seq` after `last_updated_at` makes the ORDER BY an index walk.
 */
const V2_WAITING_INDEX = `
CREATE INDEX tasks_waiting ON tasks (status, last_updated_at, seq) WHERE status = 'input_required';
`;

/**
 * Event retention (issue 11): a task's events are deleted with it (an index by task), the `expired` tombstone a
 * little later (a partial index by time), and the `released` kind joins the log (a draining worker's leases, which
 * other workers recover at once). SQLite cannot alter a CHECK constraint, so the table is rebuilt; its
 * AUTOINCREMENT high-water mark is carried over, so no seq is ever handed out twice.
 */
const V3_EVENT_RETENTION = `
CREATE TABLE task_events_v3 (
  seq     INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  task_id TEXT    NOT NULL,
  kind    TEXT    NOT NULL CHECK (kind IN ('created', 'status', 'message', 'attempt', 'input', 'expired', 'released')),
  status  TEXT    NOT NULL,
  at      INTEGER NOT NULL,
  payload TEXT
) STRICT;
INSERT INTO task_events_v3 (seq, task_id, kind, status, at, payload) SELECT seq, task_id, kind, status, at, payload FROM task_events;
DELETE FROM sqlite_sequence WHERE name = 'task_events_v3';
INSERT INTO sqlite_sequence (name, seq) SELECT 'task_events_v3', seq FROM sqlite_sequence WHERE name = 'task_events';
DROP TABLE task_events;
ALTER TABLE task_events_v3 RENAME TO task_events;
CREATE INDEX task_events_by_task ON task_events (task_id);
CREATE INDEX task_events_expired ON task_events (at) WHERE kind = 'expired';
`;

/**
 * Per-owner state of tools (`TaskStore.getToolState`): small JSON documents keyed by owner, tool and key, kept
 * apart from tasks (no foreign key: they outlive every task and its expiry).
 */
const V4_TOOL_STATE = `
CREATE TABLE tool_state (
  owner_key  TEXT    NOT NULL,
  tool       TEXT    NOT NULL,
  key        TEXT    NOT NULL,
  value      TEXT    NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (owner_key, tool, key)
) STRICT;
`;

/**
 * The dashboard's timeline reads one task's events in commit order (`TaskStore.listTaskEvents`): the by-task index
 * of migration 3 is declared as `(task_id, seq)`, as in PostgreSQL's migration 4. Here `seq` is the rowid, which
 * every SQLite index already ends with, so the plan is the same as before (no sort step either way); the explicit
 * column keeps both stores' indexes alike and the order independent of that rowid detail. It still serves
 * retention's delete by task.
 */
const V5_TIMELINE_INDEX = `
DROP INDEX task_events_by_task;
CREATE INDEX task_events_by_task ON task_events (task_id, seq);
`;

/**
 * Issue 12: idempotency keys and the operation ledger, in tables of their own with no foreign key to `tasks`: a key
 * stays used and an operation stays evidence after its task expired (each has its own retention). `tasks.idempotency_key`
 * stays unused: a key's window is independent of the task's TTL, so a task row cannot hold it.
 */
const V6_LEDGER = `
CREATE TABLE idempotency_keys (
  owner_key      TEXT    NOT NULL,
  generation     TEXT    NOT NULL CHECK (generation IN ('v1', 'v2')),
  idem_key       TEXT    NOT NULL,
  tool_name      TEXT    NOT NULL,
  request_digest TEXT    NOT NULL,
  task_id        TEXT,
  created_at     INTEGER NOT NULL,
  expires_at     INTEGER NOT NULL,
  PRIMARY KEY (owner_key, generation, idem_key)
) STRICT;
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);

CREATE TABLE operations (
  operation_id   TEXT    NOT NULL PRIMARY KEY,
  op_key         TEXT    NOT NULL,
  task_id        TEXT    NOT NULL,
  owner_key      TEXT    NOT NULL,
  tool_name      TEXT    NOT NULL,
  effect         TEXT    NOT NULL,
  target         TEXT    NOT NULL,
  object_version TEXT,
  status         TEXT    NOT NULL CHECK (status IN ('pending', 'confirmed', 'failed', 'unknown')),
  receipt        TEXT,
  detail         TEXT,
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL,
  UNIQUE (task_id, op_key)
) STRICT;
CREATE INDEX operations_by_owner ON operations (owner_key, status, created_at);

-- Append-only: the store has no UPDATE for it, and only the retention purge deletes (oldest first).
CREATE TABLE audit_log (
  seq              INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  at               INTEGER NOT NULL,
  kind             TEXT    NOT NULL,
  owner_key        TEXT    NOT NULL,
  scopes           TEXT,
  tool             TEXT,
  task_id          TEXT,
  arguments_digest TEXT,
  outcome          TEXT,
  detail           TEXT
) STRICT;
CREATE INDEX audit_by_time ON audit_log (at);
`;

/**
 * The process registry (issue 11 item 6): one row per registered API or worker process, its heartbeat judged on the
 * store's clock. A process whose heartbeat lapsed is reaped with its leases.
 */
const V7_PROCESS_REGISTRY = `
CREATE TABLE processes (
  instance_id     TEXT    NOT NULL PRIMARY KEY,
  role            TEXT    NOT NULL CHECK (role IN ('serve', 'api', 'worker')),
  token           TEXT    NOT NULL,
  host            TEXT    NOT NULL,
  pid             INTEGER NOT NULL,
  settings_digest TEXT    NOT NULL,
  started_at      INTEGER NOT NULL,
  heartbeat_at    INTEGER NOT NULL,
  expires_at      INTEGER NOT NULL
) STRICT;
`;

/** v1 sessions shared by every process on the file (issue 11 item 5); see `core/session-store.ts`. */
const V8_SESSIONS = `
CREATE TABLE sessions (
  session_id       TEXT    NOT NULL PRIMARY KEY,
  owner_key        TEXT    NOT NULL,
  protocol_version TEXT    NOT NULL,
  initialize       TEXT    NOT NULL,
  created_at       INTEGER NOT NULL,
  last_seen_at     INTEGER NOT NULL
) STRICT;
CREATE INDEX sessions_by_last_seen ON sessions (last_seen_at);

-- One row: how the instances of this store agree on the server secret (see server/signing-key.ts).
CREATE TABLE server_secret (
  id         INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
  mode       TEXT NOT NULL CHECK (mode IN ('verifier', 'kept')),
  salt       TEXT,
  verifier   TEXT,
  secret     TEXT,
  created_at INTEGER NOT NULL
) STRICT;
`;

/**
 * Version 9: the kill switch (issue 15): one row per switched-off scope (`*` = every tool, else a tool name). Every
 * instance re-reads the table every few hundred ms, so a change reaches all of them within a second.
 */
const V9_KILL_SWITCHES = `
CREATE TABLE kill_switches (
  scope    TEXT    NOT NULL PRIMARY KEY,
  fallback TEXT    CHECK (fallback IN ('sync', 'reject')),
  reason   TEXT,
  set_by   TEXT    NOT NULL,
  set_at   INTEGER NOT NULL
) STRICT;
`;

/**
 * The tasks a v1 session created (issue 11 item 5): the `created` event carries `{sessionId}` (written with the
 * task, deleted with it); this partial index serves `SessionStore.openSessionTasks`. Other events stay out of it.
 */
const V10_SESSION_TASKS = `
CREATE INDEX task_events_by_session ON task_events (json_extract(payload, '$.sessionId')) WHERE kind = 'created' AND payload IS NOT NULL;
`;

/**
 * Per-owner quotas (issue 10 §2): one row per admitted create for the create-rate window (kept for the window only,
 * so a short-lived task cannot leave the count early), and a partial index to count an owner's active tasks.
 */
const V11_OWNER_QUOTAS = `
CREATE TABLE owner_creates (
  task_id    TEXT    NOT NULL PRIMARY KEY,
  owner_key  TEXT    NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX owner_creates_by_owner ON owner_creates (owner_key, created_at);
CREATE INDEX owner_creates_by_time ON owner_creates (created_at);
CREATE INDEX tasks_active_by_owner ON tasks (owner_key) WHERE status IN ('working', 'input_required');
`;

/**
 * Large results (issue 10 §2): the JSON text of a tool result above `maxResultBytes`, in chunks of at most 256 KiB,
 * read back one chunk at a time by `resources/read`; deleted with the task row (ON DELETE CASCADE).
 */
const V12_RESULT_CHUNKS = `
CREATE TABLE result_chunks (
  task_id     TEXT    NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
  chunk_index INTEGER NOT NULL,
  data        BLOB    NOT NULL,
  PRIMARY KEY (task_id, chunk_index)
) STRICT, WITHOUT ROWID;
`;

/**
 * Draining processes: a process that drains (SIGTERM: it finishes or hands back its runs, takes no new task) records
 * it here, so `doctor` and the API processes' worker presence do not count it as a worker that takes tasks. A table
 * of its own, joined on instance id *and* token: a registration an older process writes over the row (it knows no
 * such mark) gets a new token and so does not inherit it; deleting a registration deletes its mark.
 */
const V13_DRAINING_PROCESSES = `
CREATE TABLE draining_processes (
  instance_id    TEXT    NOT NULL PRIMARY KEY REFERENCES processes (instance_id) ON DELETE CASCADE,
  token          TEXT    NOT NULL,
  draining_since INTEGER NOT NULL
) STRICT;
`;

/**
 * Every migration, ascending by version. Append only. Why none so far is breaking for the code just before it: each
 * adds tables or indexes that older statements never name; 3 rebuilds `task_events` with the same columns to widen
 * its CHECK (older code never writes the new kind, reads kinds as opaque strings, and SQLite re-prepares an older
 * connection's statements after the swap); 5 replaces an index under its name (statements name no index); no
 * migration adds a column to a table that older code reads with `*`. What a newer process does that an older one does
 * not (a `released` event, chunked large results, per-owner quotas) is a feature the older one lacks, not a statement
 * that fails.
 */
export const MIGRATIONS: readonly Migration[] = Object.freeze([
  { version: 1, name: 'initial', sql: V1_INITIAL, breaking: false },
  { version: 2, name: 'waiting index', sql: V2_WAITING_INDEX, breaking: false },
  { version: 3, name: 'event retention', sql: V3_EVENT_RETENTION, breaking: false },
  { version: 4, name: 'tool state', sql: V4_TOOL_STATE, breaking: false },
  { version: 5, name: 'timeline index', sql: V5_TIMELINE_INDEX, breaking: false },
  { version: 6, name: 'idempotency keys, operation ledger, audit log', sql: V6_LEDGER, breaking: false },
  { version: 7, name: 'process registry', sql: V7_PROCESS_REGISTRY, breaking: false },
  { version: 8, name: 'sessions and server secret', sql: V8_SESSIONS, breaking: false },
  { version: 9, name: 'kill switches', sql: V9_KILL_SWITCHES, breaking: false },
  { version: 10, name: 'session tasks', sql: V10_SESSION_TASKS, breaking: false },
  { version: 11, name: 'owner quotas', sql: V11_OWNER_QUOTAS, breaking: false },
  { version: 12, name: 'result chunks', sql: V12_RESULT_CHUNKS, breaking: false },
  { version: 13, name: 'draining processes', sql: V13_DRAINING_PROCESSES, breaking: false },
]);

/**
 * Bring `db` up to the newest schema version; a schema newer than this code whose newer migrations are all marked
 * compatible is left as it is (newer code on the same file migrated it).
 *
 * Runs under `BEGIN IMMEDIATE`, so the write lock is taken before `schema_migrations` is read: when two
 * processes open the same new file at once, the second one waits (busy_timeout), then finds the versions
 * already applied and applies nothing. Either all pending migrations commit or none do.
 *
 * @param now epoch ms recorded as `applied_at`.
 * @returns the versions this call applied (empty when the schema was current or newer) and the schema as found.
 * @throws {StoreError} `schema_mismatch` when the file holds a newer migration marked breaking (or unmarked), or a
 *   known version under another name, writing nothing; the driver error when a migration fails or the lock cannot be
 *   taken within busy_timeout.
 */
export function migrateSchema(db: Database.Database, now: number, migrations: readonly Migration[] = MIGRATIONS): MigrateOutcome {
  db.exec('BEGIN IMMEDIATE');
  try {
    db.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL, breaking INTEGER CHECK (breaking IN (0, 1))) STRICT',
    );
    addMarksColumn(db);
    const schema = judgeSchema(readAppliedMigrations(db), migrations);
    assertMayStartOn(schema);
    const pending = migrations.filter((migration) => migration.version > schema.applied);
    if (pending.some((migration) => migration.breaking)) assertNoLiveProcessesFor(pending, liveRegistrations(db, now));
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at, breaking) VALUES (?, ?, ?, ?)');
    const applied: number[] = [];
    for (const migration of migrations) {
      if (migration.version <= schema.applied) continue;
      db.exec(migration.sql);
      record.run(migration.version, migration.name, now, migration.breaking ? 1 : 0);
      applied.push(migration.version);
    }
    db.exec('COMMIT');
    return { applied, schema };
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

/** The process registry's live rows at `now` (the store's clock); none when the schema has no registry yet. */
function liveRegistrations(db: Database.Database, now: number): LiveRegistration[] {
  if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'processes'").get() === undefined) return [];
  const rows = db.prepare('SELECT instance_id, role, host, pid FROM processes WHERE expires_at > ? ORDER BY started_at, instance_id').all(now) as Array<{
    instance_id: string;
    role: string;
    host: string;
    pid: number;
  }>;
  return rows.map((row) => ({ instanceId: row.instance_id, role: row.role, host: row.host, pid: row.pid }));
}

/** {@link migrateSchema}, returning only the versions it applied. */
export function migrate(db: Database.Database, now: number, migrations: readonly Migration[] = MIGRATIONS): number[] {
  return migrateSchema(db, now, migrations).applied;
}

/**
 * Give `schema_migrations` its `breaking` column (the compatibility marks) when it has none: a file an older
 * mcp-tasks migrated. Outside the numbered migrations on purpose, as on PostgreSQL: a numbered one would make the file
 * newer than every process of the previous version, which reads it only as `SELECT version, name` and `MAX(version)`
 * and so turned unready the moment the first process of this version started; a column those statements never name
 * changes nothing for them. Rows applied before it have no mark (NULL) and are never consulted (`judgeSchema` reads
 * marks only of rows newer than the reading code, and code that reads marks wrote its own). Under `BEGIN IMMEDIATE`.
 */
function addMarksColumn(db: Database.Database): void {
  const columns = db.pragma('table_info(schema_migrations)') as Array<{ name: string }>;
  if (!columns.some((column) => column.name === 'breaking')) db.exec('ALTER TABLE schema_migrations ADD COLUMN breaking INTEGER CHECK (breaking IN (0, 1))');
}

/**
 * The rows of `schema_migrations`, ascending, with their marks (`null` where none was recorded, and on a file no
 * process of this version has opened yet, which has no such column: hence `*`, prepared afresh at each call).
 */
export function readAppliedMigrations(db: Database.Database): AppliedMigration[] {
  const rows = db.prepare('SELECT * FROM schema_migrations ORDER BY version').all() as Array<{ version: number; name: string; breaking?: number | null }>;
  return rows.map((row) => ({
    version: row.version,
    name: row.name,
    breaking: row.breaking === undefined || row.breaking === null ? null : row.breaking === 1,
  }));
}
