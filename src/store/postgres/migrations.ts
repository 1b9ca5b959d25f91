/*
 * Over 500 lines on purpose: the schema's whole history, every migration's SQL in order with why it is as it is, reads
 * as one document, and `migrate` beside it is the only code that applies it. How a migration takes its locks (the
 * advisory lock, lock_timeout, the errors that name a holder) is migration-locks.ts.
 */
import { setTimeout as sleep } from 'node:timers/promises';

import type pg from 'pg';

import {
  type AppliedMigration,
  assertMayStartOn,
  assertNoLiveProcessesFor,
  judgeSchema,
  type LiveRegistration,
  type MigrateOutcome,
  type MigrationMark,
} from '../../core/schema-compatibility.js';
import {
  isLockTimeout,
  lockNotTaken,
  MIGRATION_ADVISORY_WAIT_MS,
  MIGRATION_LOCK_ATTEMPTS,
  MIGRATION_LOCK_TIMEOUT_MS,
  MIGRATION_RETRY_DELAY_MS,
  releaseMigrationLock,
  takeMigrationLock,
} from './migration-locks.js';

/**
 * One forward-only schema step. Versions start at 1 and are never edited once released; `breaking` says whether code
 * that predates it can keep running on it (see {@link MigrationMark.breaking}; recorded in `schema_migrations`).
 */
export interface PostgresMigration extends MigrationMark {
  sql: string;
}

/** Everything lives in one schema, so the store can share a database with an application's own tables. */
export const SCHEMA = 'mcp_tasks';
/**
 * The LISTEN/NOTIFY channel of the event feed. Its payload is the commit's events with the feed counter after them,
 * `{"s": <last_seq>, "e": [[seq, task_id, kind, status, at, payload], …]}` (migration 13), or only the counter
 * (`"<last_seq>"`) when those would not fit in a notification (PostgreSQL's limit is 8000 bytes).
 */
export const FEED_CHANNEL = 'mcp_tasks_feed';

/**
 * The schema of migration 1 mirrors the SQLite store's (same columns, same meaning), with three differences that
 * come from many writers instead of one:
 * - `tasks.seq` comes from a sequence (it only orders `tasks/list`), while `task_events.seq` comes from the
 *   single-row `task_feed` counter that every event-writing transaction increments as its last statement. The
 *   counter's row lock is held until COMMIT, so event seqs are gap-free and assigned in commit order: a reader that
 *   tails `seq > cursor` never misses an event committed late (see docs/adr/0001-execution-on-postgres.md).
 * - `input_requests.position` (an identity) keeps creation order, which SQLite gets from `rowid`.
 * - `now_ms()` is the database clock in epoch ms (`clock_timestamp()`, not the transaction start), which judges
 *   leases and expiry sweeps for every instance alike.
 * JSON columns are `text` (bodies round-trip verbatim; nothing queries inside them); times are `bigint` epoch ms.
 * `tasks.seq` has no UNIQUE index of its own: the sequence never repeats a value, and every index a create has to
 * write costs throughput (a task row already feeds five).
 */
const V1_INITIAL = `
CREATE FUNCTION ${SCHEMA}.now_ms() RETURNS bigint LANGUAGE sql VOLATILE
  AS $$ SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

CREATE SEQUENCE ${SCHEMA}.task_seq;

CREATE TABLE ${SCHEMA}.tasks (
  task_id             text    NOT NULL PRIMARY KEY,
  owner_key           text    NOT NULL,
  generation          text    NOT NULL CHECK (generation IN ('v1', 'v2')),
  protocol_version    text    NOT NULL,
  tool_name           text    NOT NULL,
  arguments           text    NOT NULL,
  client_capabilities text    NOT NULL,
  progress_token      text,
  status              text    NOT NULL
                      CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
  status_message      text,
  created_at          bigint  NOT NULL,
  last_updated_at     bigint  NOT NULL,
  ttl_ms              bigint,
  poll_interval_ms    bigint  NOT NULL,
  expires_at          bigint,
  seq                 bigint  NOT NULL DEFAULT nextval('${SCHEMA}.task_seq'),
  attempt             integer NOT NULL DEFAULT 0,
  lease_owner         text,
  lease_expires_at    bigint,
  idempotency_key     text,
  request_digest      text
);
ALTER SEQUENCE ${SCHEMA}.task_seq OWNED BY ${SCHEMA}.tasks.seq;

-- tasks/list: keyset walk of one owner's tasks of one generation.
CREATE INDEX tasks_by_owner ON ${SCHEMA}.tasks (owner_key, generation, seq);
-- Sweeper: due tasks in expiry order; unlimited tasks are never due.
CREATE INDEX tasks_by_expiry ON ${SCHEMA}.tasks (expires_at, seq) WHERE expires_at IS NOT NULL;
-- Claiming: working tasks whose lease lapsed (or that have none).
CREATE INDEX tasks_by_lease ON ${SCHEMA}.tasks (lease_expires_at NULLS FIRST, seq) WHERE status = 'working';
-- Idempotent create: one key per owner (also settles concurrent creates from two instances).
CREATE UNIQUE INDEX tasks_by_idempotency ON ${SCHEMA}.tasks (owner_key, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- The input-timeout sweep: the (few) waiting tasks, oldest first.
CREATE INDEX tasks_waiting ON ${SCHEMA}.tasks (last_updated_at, seq) WHERE status = 'input_required';

CREATE TABLE ${SCHEMA}.task_outcomes (
  task_id text NOT NULL PRIMARY KEY REFERENCES ${SCHEMA}.tasks (task_id) ON DELETE CASCADE,
  kind    text NOT NULL CHECK (kind IN ('result', 'error')),
  body    text NOT NULL
);

CREATE TABLE ${SCHEMA}.input_requests (
  task_id     text   NOT NULL REFERENCES ${SCHEMA}.tasks (task_id) ON DELETE CASCADE,
  key         text   NOT NULL,
  request     text   NOT NULL,
  response    text,
  state       text   NOT NULL CHECK (state IN ('pending', 'answered', 'superseded')),
  created_at  bigint NOT NULL,
  answered_at bigint,
  position    bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  PRIMARY KEY (task_id, key)
);

CREATE TABLE ${SCHEMA}.task_steps (
  task_id    text   NOT NULL REFERENCES ${SCHEMA}.tasks (task_id) ON DELETE CASCADE,
  name       text   NOT NULL,
  value      text   NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY (task_id, name)
);

-- No foreign key: the log is append-only and an 'expired' event outlives its deleted task.
CREATE TABLE ${SCHEMA}.task_events (
  seq     bigint NOT NULL PRIMARY KEY,
  task_id text   NOT NULL,
  kind    text   NOT NULL CHECK (kind IN ('created', 'status', 'message', 'attempt', 'input', 'expired')),
  status  text   NOT NULL,
  at      bigint NOT NULL,
  payload text
);

-- One row: the last event seq handed out. Updated by the last statement of every transaction that appends events.
CREATE TABLE ${SCHEMA}.task_feed (
  id       boolean NOT NULL PRIMARY KEY DEFAULT true CHECK (id),
  last_seq bigint  NOT NULL
);
INSERT INTO ${SCHEMA}.task_feed (id, last_seq) VALUES (true, 0);
`;

/**
 * Event retention (issue 11), as in the SQLite store: a task's events are deleted with it (an index by task), the
 * `expired` tombstone a little later (a partial index by time), and the `released` kind joins the log. Dead rows
 * are PostgreSQL's autovacuum's to reclaim.
 */
const V2_EVENT_RETENTION = `
ALTER TABLE ${SCHEMA}.task_events DROP CONSTRAINT task_events_kind_check;
ALTER TABLE ${SCHEMA}.task_events ADD CONSTRAINT task_events_kind_check
  CHECK (kind IN ('created', 'status', 'message', 'attempt', 'input', 'expired', 'released'));
CREATE INDEX task_events_by_task ON ${SCHEMA}.task_events (task_id);
CREATE INDEX task_events_expired ON ${SCHEMA}.task_events (at) WHERE kind = 'expired';
`;

/** Per-owner state of tools, as in the SQLite store's migration 4 (no foreign key: it outlives tasks). */
const V3_TOOL_STATE = `
CREATE TABLE ${SCHEMA}.tool_state (
  owner_key  text   NOT NULL,
  tool       text   NOT NULL,
  key        text   NOT NULL,
  value      text   NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (owner_key, tool, key)
);
`;

/** The dashboard's timeline (`TaskStore.listTaskEvents`), as the SQLite store's migration 5: the by-task index gains `seq`. */
const V4_TIMELINE_INDEX = `
DROP INDEX ${SCHEMA}.task_events_by_task;
CREATE INDEX task_events_by_task ON ${SCHEMA}.task_events (task_id, seq);
`;

/** Issue 12: idempotency keys and the operation ledger (as SQLite migration 6: no foreign key to `tasks`, own retention). */
const V5_LEDGER = `
CREATE TABLE ${SCHEMA}.idempotency_keys (
  owner_key      text   NOT NULL,
  generation     text   NOT NULL CHECK (generation IN ('v1', 'v2')),
  idem_key       text   NOT NULL,
  tool_name      text   NOT NULL,
  request_digest text   NOT NULL,
  task_id        text,
  created_at     bigint NOT NULL,
  expires_at     bigint NOT NULL,
  PRIMARY KEY (owner_key, generation, idem_key)
);
CREATE INDEX idempotency_keys_by_expiry ON ${SCHEMA}.idempotency_keys (expires_at);

CREATE TABLE ${SCHEMA}.operations (
  operation_id   text   NOT NULL PRIMARY KEY,
  op_key         text   NOT NULL,
  task_id        text   NOT NULL,
  owner_key      text   NOT NULL,
  tool_name      text   NOT NULL,
  effect         text   NOT NULL,
  target         text   NOT NULL,
  object_version text,
  status         text   NOT NULL CHECK (status IN ('pending', 'confirmed', 'failed', 'unknown')),
  receipt        text,
  detail         text,
  created_at     bigint NOT NULL,
  updated_at     bigint NOT NULL,
  UNIQUE (task_id, op_key)
);
CREATE INDEX operations_by_owner ON ${SCHEMA}.operations (owner_key, status, created_at);

-- Append-only: the store has no UPDATE for it, and only the retention purge deletes (oldest first).
CREATE TABLE ${SCHEMA}.audit_log (
  seq              bigserial NOT NULL PRIMARY KEY,
  at               bigint    NOT NULL,
  kind             text      NOT NULL,
  owner_key        text      NOT NULL,
  scopes           text,
  tool             text,
  task_id          text,
  arguments_digest text,
  outcome          text,
  detail           text
);
CREATE INDEX audit_by_time ON ${SCHEMA}.audit_log (at);
`;

/**
 * The process registry (issue 11 item 6), as in the SQLite store: one row per registered API or worker process,
 * its heartbeat judged on the database clock.
 */
const V6_PROCESS_REGISTRY = `
CREATE TABLE ${SCHEMA}.processes (
  instance_id     text   NOT NULL PRIMARY KEY,
  role            text   NOT NULL CHECK (role IN ('serve', 'api', 'worker')),
  token           text   NOT NULL,
  host            text   NOT NULL,
  pid             int    NOT NULL,
  settings_digest text   NOT NULL,
  started_at      bigint NOT NULL,
  heartbeat_at    bigint NOT NULL,
  expires_at      bigint NOT NULL
);
`;

/**
 * Cross-process wake-ups (issue 11 item 4): every commit that moves the feed counter also sends
 * `NOTIFY mcp_tasks_feed, '<last_seq>'`. PostgreSQL delivers a notification only when its transaction commits, in
 * commit order, so a listener that tails the feed on each one sees new events within a round trip; the payload lets
 * a listener skip a tail for seqs it already has. The trigger covers every path that appends events.
 */
const V7_FEED_NOTIFY = `
CREATE FUNCTION ${SCHEMA}.notify_feed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('${FEED_CHANNEL}', NEW.last_seq::text);
  RETURN NULL;
END
$$;
CREATE TRIGGER task_feed_notify AFTER UPDATE ON ${SCHEMA}.task_feed FOR EACH ROW EXECUTE FUNCTION ${SCHEMA}.notify_feed();
`;

/** v1 sessions shared by every instance (issue 11 item 5); see `core/session-store.ts`. */
const V8_SESSIONS = `
CREATE TABLE ${SCHEMA}.sessions (
  session_id       text   NOT NULL PRIMARY KEY,
  owner_key        text   NOT NULL,
  protocol_version text   NOT NULL,
  initialize       text   NOT NULL,
  created_at       bigint NOT NULL,
  last_seen_at     bigint NOT NULL
);
CREATE INDEX sessions_by_last_seen ON ${SCHEMA}.sessions (last_seen_at);

-- One row: how the instances of this store agree on the server secret (see server/signing-key.ts).
CREATE TABLE ${SCHEMA}.server_secret (
  id         bigint NOT NULL PRIMARY KEY CHECK (id = 1),
  mode       text NOT NULL CHECK (mode IN ('verifier', 'kept')),
  salt       text,
  verifier   text,
  secret     text,
  created_at bigint NOT NULL
);
`;

/** Version 9: the kill switch (issue 15), as SQLite's version 9. */
const V9_KILL_SWITCHES = `
CREATE TABLE ${SCHEMA}.kill_switches (
  scope    text   NOT NULL PRIMARY KEY,
  fallback text   CHECK (fallback IN ('sync', 'reject')),
  reason   text,
  set_by   text   NOT NULL,
  set_at   bigint NOT NULL
);
`;

/**
 * The tasks a v1 session created (issue 11 item 5): the `created` event carries `{sessionId}` (written with the
 * task, deleted with it); this partial index serves `SessionStore.openSessionTasks`.
 */
const V10_SESSION_TASKS = `
CREATE INDEX task_events_by_session ON ${SCHEMA}.task_events (((payload::jsonb) ->> 'sessionId')) WHERE kind = 'created' AND payload IS NOT NULL;
`;

/** Per-owner quotas (issue 10 §2), as in the SQLite store: admitted creates of the window, active tasks by owner. */
const V11_OWNER_QUOTAS = `
CREATE TABLE ${SCHEMA}.owner_creates (
  task_id    text   NOT NULL PRIMARY KEY,
  owner_key  text   NOT NULL,
  created_at bigint NOT NULL
);
CREATE INDEX owner_creates_by_owner ON ${SCHEMA}.owner_creates (owner_key, created_at);
CREATE INDEX owner_creates_by_time ON ${SCHEMA}.owner_creates (created_at);
CREATE INDEX tasks_active_by_owner ON ${SCHEMA}.tasks (owner_key) WHERE status IN ('working', 'input_required');
`;

/** Large results (issue 10 §2), as SQLite migration 12: chunks of a result above `maxResultBytes`, deleted with the task. */
const V12_RESULT_CHUNKS = `
CREATE TABLE ${SCHEMA}.result_chunks (
  task_id     text    NOT NULL REFERENCES ${SCHEMA}.tasks (task_id) ON DELETE CASCADE,
  chunk_index integer NOT NULL,
  data        bytea   NOT NULL,
  PRIMARY KEY (task_id, chunk_index)
);
`;

/**
 * Events in the notification (issue 25): a listener that already holds every seq before the commit's first takes
 * its events from the payload and reads nothing, where it used to read the feed once per notification, in every
 * process, for every commit of every process. The AFTER trigger runs at the end of the statement that moved the
 * counter, so it sees the events that statement inserted (`appendEvents`, `createTasksAlone`). A payload that would
 * reach the 8000-byte limit carries only the counter, as before, and the listener reads the feed.
 */
const V13_FEED_NOTIFY_EVENTS = `
CREATE OR REPLACE FUNCTION ${SCHEMA}.notify_feed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  body text;
BEGIN
  SELECT json_build_object('s', NEW.last_seq, 'e', COALESCE(json_agg(json_build_array(e.seq, e.task_id, e.kind, e.status, e.at, e.payload) ORDER BY e.seq), '[]'::json))::text
    INTO body
    FROM ${SCHEMA}.task_events e WHERE e.seq > OLD.last_seq AND e.seq <= NEW.last_seq;
  IF body IS NULL OR octet_length(body) >= 8000 THEN
    body := NEW.last_seq::text;
  END IF;
  PERFORM pg_notify('${FEED_CHANNEL}', body);
  RETURN NULL;
END
$$;
`;

/**
 * Draining processes (a newcomer's `doctor` counted two draining workers as live): a process that drains records it
 * here, as SQLite's version 13. A table of its own, not a column of `processes`: an older process on the database
 * during a rolling update keeps its named statements over `processes p.*`, which a new column would break ("cached
 * plan must not change result type"), and a registration an older process writes over the row (a new token) must
 * not inherit the mark — readers join on instance id *and* token. Deleting a registration deletes its mark.
 */
const V14_DRAINING_PROCESSES = `
CREATE TABLE ${SCHEMA}.draining_processes (
  instance_id    text   NOT NULL PRIMARY KEY REFERENCES ${SCHEMA}.processes (instance_id) ON DELETE CASCADE,
  token          text   NOT NULL,
  draining_since bigint NOT NULL
);
`;

/**
 * Every migration, ascending by version. Append only. Why none so far is breaking for the code just before it: each
 * adds tables, indexes, functions or triggers that older statements never name (1–12, 14); 2 widens a CHECK (older
 * code never writes the new kind, and reads kinds as opaque strings); 4 replaces an index under its name (statements
 * name no index); 7 and 13 make the feed counter's UPDATE notify (older code does not listen, or — before 13's payload
 * — reads a payload it cannot parse as "read the feed", which it then does); no migration adds a column to a table
 * that older code reads with `*`. What a newer process does that an older one does not (a `released` event, chunked
 * large results, per-owner quotas) is a feature the older process lacks during the deploy, not a statement that fails.
 */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = Object.freeze([
  { version: 1, name: 'initial', sql: V1_INITIAL, breaking: false },
  { version: 2, name: 'event retention', sql: V2_EVENT_RETENTION, breaking: false },
  { version: 3, name: 'tool state', sql: V3_TOOL_STATE, breaking: false },
  { version: 4, name: 'timeline index', sql: V4_TIMELINE_INDEX, breaking: false },
  { version: 5, name: 'idempotency keys, operation ledger, audit log', sql: V5_LEDGER, breaking: false },
  { version: 6, name: 'process registry', sql: V6_PROCESS_REGISTRY, breaking: false },
  { version: 7, name: 'feed notify', sql: V7_FEED_NOTIFY, breaking: false },
  { version: 8, name: 'sessions and server secret', sql: V8_SESSIONS, breaking: false },
  { version: 9, name: 'kill switches', sql: V9_KILL_SWITCHES, breaking: false },
  { version: 10, name: 'session tasks', sql: V10_SESSION_TASKS, breaking: false },
  { version: 11, name: 'owner quotas', sql: V11_OWNER_QUOTAS, breaking: false },
  { version: 12, name: 'result chunks', sql: V12_RESULT_CHUNKS, breaking: false },
  { version: 13, name: 'feed notify with events', sql: V13_FEED_NOTIFY_EVENTS, breaking: false },
  { version: 14, name: 'draining processes', sql: V14_DRAINING_PROCESSES, breaking: false },
]);

/** Test and tuning knobs of {@link migrate}; the defaults are what every store uses. */
export interface MigrateOptions {
  /**
   * `lock_timeout` of the migration transaction's statements (ms, default {@link MIGRATION_LOCK_TIMEOUT_MS}). 0 turns
   * it off: a statement then waits for its lock until `statement_timeout` (the store pool's, 15 s by default; none on
   * a plain client) — what `migrate` did before, kept for tests that show why it must not.
   */
  lockTimeoutMs?: number;
  /** Tries before giving up (default {@link MIGRATION_LOCK_ATTEMPTS}, at least 1). */
  attempts?: number;
  /** Shortest pause between tries; each is drawn between it and twice it (ms, default {@link MIGRATION_RETRY_DELAY_MS}). */
  retryDelayMs?: number;
  /** Longest wait for the advisory lock (ms, default {@link MIGRATION_ADVISORY_WAIT_MS}). */
  advisoryWaitMs?: number;
}

/**
 * Bring the database up to the newest schema version, in one transaction under a session-level advisory lock held
 * across the tries: when several instances start at once, one migrates and the others wait, then find nothing to do. DDL is
 * transactional in PostgreSQL, so either every pending migration commits or none does. A schema newer than this code
 * whose newer migrations are all marked compatible is left as it is (a rolling deploy's newer code migrated it).
 *
 * Lock waits are bounded (the classic migration outage: an `ALTER TABLE` queued behind a long transaction queues
 * every later statement on that table behind itself): after the advisory lock, each statement waits at most
 * `lockTimeoutMs` for a lock; when one gives up, the whole transaction rolls back — releasing every lock it took, so
 * the table's traffic flows again — and runs again after a jittered pause of at least one heartbeat, up to
 * `attempts` times. `lock_timeout` bounds waiting for a lock, not holding it: a statement that got its lock holds it
 * until the transaction ends, however long the statement runs.
 *
 * @returns the versions this call applied (empty when the schema was current or newer) and the schema as found.
 * @throws {StoreError} `schema_mismatch` when the schema has a newer migration marked breaking or unmarked, or a
 *   known version under another name (not this project's schema), writing nothing; `unavailable` when a statement
 *   could not take its lock on any try — the message names the migration, the table's holder when it can tell, and
 *   what to do; driver errors as they come (the caller wraps them).
 */
export async function migrateSchema(
  client: pg.ClientBase,
  migrations: readonly PostgresMigration[] = POSTGRES_MIGRATIONS,
  options: MigrateOptions = {},
): Promise<MigrateOutcome> {
  const lockTimeoutMs = Math.max(0, Math.floor(options.lockTimeoutMs ?? MIGRATION_LOCK_TIMEOUT_MS));
  const attempts = Math.max(1, Math.floor(options.attempts ?? MIGRATION_LOCK_ATTEMPTS));
  const retryDelayMs = Math.max(0, options.retryDelayMs ?? MIGRATION_RETRY_DELAY_MS);
  // Held across all of this process's tries (a session lock: each try's ROLLBACK would release a transaction-scoped
  // one), so processes starting together do not run their tries back to back — a waiter would start its own stall on
  // the table the moment another's try gave up, and the statements queued behind both would not get through.
  // Processes of older versions take the same key transaction-scoped: the two exclude each other.
  await takeMigrationLock(client, Math.max(0, options.advisoryWaitMs ?? MIGRATION_ADVISORY_WAIT_MS));
  try {
    for (let attempt = 1; ; attempt += 1) {
      const progress: { running?: PostgresMigration; step?: string } = {};
      try {
        return await migrateOnce(client, migrations, lockTimeoutMs, progress);
      } catch (error) {
        if (!isLockTimeout(error)) throw error;
        if (attempt >= attempts) throw await lockNotTaken(client, error, progress.running, progress.step, { lockTimeoutMs, attempts, schema: SCHEMA });
        await sleep(retryDelayMs * (1 + Math.random()));
      }
    }
  } finally {
    await releaseMigrationLock(client);
  }
}

/** {@link migrateSchema}, returning only the versions it applied. */
export async function migrate(
  client: pg.ClientBase,
  migrations: readonly PostgresMigration[] = POSTGRES_MIGRATIONS,
  options: MigrateOptions = {},
): Promise<number[]> {
  return (await migrateSchema(client, migrations, options)).applied;
}

/** One try of {@link migrateSchema}: `progress.running` names the migration under way when it throws. */
async function migrateOnce(
  client: pg.ClientBase,
  migrations: readonly PostgresMigration[],
  lockTimeoutMs: number,
  progress: { running?: PostgresMigration; step?: string },
): Promise<MigrateOutcome> {
  await client.query('BEGIN');
  try {
    await client.query("SELECT set_config('lock_timeout', $1, true)", [`${lockTimeoutMs}ms`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${SCHEMA}.schema_migrations (version integer NOT NULL PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), breaking boolean)`,
    );
    progress.step = 'migration (adding schema_migrations.breaking)';
    await addMarksColumn(client);
    progress.step = undefined;
    const schema = judgeSchema(await readAppliedMigrations(client), migrations);
    assertMayStartOn(schema);
    const pending = migrations.filter((migration) => migration.version > schema.applied);
    if (pending.some((migration) => migration.breaking)) assertNoLiveProcessesFor(pending, await liveRegistrations(client));
    const applied: number[] = [];
    for (const migration of migrations) {
      if (migration.version <= schema.applied) continue;
      progress.running = migration;
      await client.query(migration.sql);
      await client.query(`INSERT INTO ${SCHEMA}.schema_migrations (version, name, breaking) VALUES ($1, $2, $3)`, [
        migration.version,
        migration.name,
        migration.breaking,
      ]);
      applied.push(migration.version);
    }
    progress.running = undefined;
    await client.query('COMMIT');
    return { applied, schema };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/**
 * The process registry's live rows, judged on the database's clock; none when the schema has no registry yet. Read
 * under `SHARE` on `processes`, held to the migration's commit: a process that registers meanwhile (it opened the
 * store before this migration, and registers after) waits for the commit, and then judges the schema again
 * (`cli/registration.ts`) — it is refused there instead of running on a schema that breaks it.
 */
async function liveRegistrations(client: Pick<pg.ClientBase, 'query'>): Promise<LiveRegistration[]> {
  const { rows } = await client.query<{ exists: boolean }>(`SELECT to_regclass('${SCHEMA}.processes') IS NOT NULL AS exists`);
  if (!rows[0]?.exists) return [];
  await client.query(`LOCK TABLE ${SCHEMA}.processes IN SHARE MODE`);
  const live = await client.query<{ instance_id: string; role: string; host: string; pid: number }>(
    `SELECT instance_id, role, host, pid FROM ${SCHEMA}.processes
      WHERE expires_at > (extract(epoch FROM clock_timestamp()) * 1000)::bigint ORDER BY started_at, instance_id`,
  );
  return live.rows.map((row) => ({ instanceId: row.instance_id, role: row.role, host: row.host, pid: row.pid }));
}

/**
 * Give `schema_migrations` its `breaking` column (the compatibility marks) when it has none: a database an older
 * mcp-tasks migrated. Outside the numbered migrations on purpose: a numbered one would make the schema newer than every
 * process of the previous version, which reads it only as `SELECT version, name` and `MAX(version)` and so turned
 * unready (`applied 15, expected 14`) the moment the first process of this version started. A column those statements
 * never name changes nothing for them. Rows applied before it have no mark (NULL), and none is ever consulted:
 * {@link judgeSchema} reads marks only of rows newer than the reading code, and code that reads marks wrote its own.
 * Checked first because `ADD COLUMN IF NOT EXISTS` takes ACCESS EXCLUSIVE on the table even when the column exists.
 * Runs in the migration transaction, after the advisory lock, under its `lock_timeout`.
 */
async function addMarksColumn(client: pg.ClientBase): Promise<void> {
  const { rows } = await client.query(
    `SELECT 1 FROM pg_attribute WHERE attrelid = '${SCHEMA}.schema_migrations'::regclass AND attname = 'breaking' AND NOT attisdropped`,
  );
  if (rows.length === 0) await client.query(`ALTER TABLE ${SCHEMA}.schema_migrations ADD COLUMN breaking boolean`);
}

/**
 * The rows of `schema_migrations`, ascending, with their marks. One statement for every schema version: `breaking`
 * is read through the row's JSON, which lacks the key before the column exists (read as unmarked), and whose type stays
 * `jsonb` whatever columns a later migration adds — so no named statement of an older process over this table can
 * fail with "cached plan must not change result type".
 */
export async function readAppliedMigrations(client: Pick<pg.ClientBase, 'query'>): Promise<AppliedMigration[]> {
  return (await client.query<AppliedMigration>(APPLIED_MIGRATIONS_SQL)).rows;
}

/** See {@link readAppliedMigrations}. */
export const APPLIED_MIGRATIONS_SQL = `SELECT m.version, m.name, to_jsonb(m) -> 'breaking' AS breaking FROM ${SCHEMA}.schema_migrations m ORDER BY m.version`;
