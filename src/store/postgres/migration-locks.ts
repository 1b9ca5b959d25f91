/**
 * How a PostgreSQL migration takes its locks without stalling the store's traffic: one session-level advisory lock per
 * migrating process (polled, so no statement waits under `statement_timeout`), a `lock_timeout` on every statement of
 * the migration transaction with jittered retries (see `migrateSchema`), and errors that name the session in the way.
 */
import { setTimeout as sleep } from 'node:timers/promises';

import type pg from 'pg';

import { StoreError } from '../../core/store-error.js';
import type { PostgresMigration } from './migrations.js';

/** Key of the advisory lock that serialises migrations of one database ('mcptasks' in ASCII). */
export const MIGRATION_LOCK_KEY = '7881702208213641075';

/**
 * Longest a migration statement waits for a table lock, per try (ms; PostgreSQL's `lock_timeout`). While it waits,
 * every later statement on that table queues behind it — the processes' heartbeat UPDATEs and reaps on `processes`
 * included — so it must stay well under a registration's lifetime minus one beat (3 × 1000 ms − 1000 ms with the
 * default heartbeat, `DEFAULT_HEARTBEAT_MS`): at 3 s, heartbeats queued behind a waiting migration came out late by
 * the whole lifetime, and the reaps queued with them reaped live processes.
 */
export const MIGRATION_LOCK_TIMEOUT_MS = 500;
/** Tries of the whole migration transaction when a statement of it could not take its lock in time. */
export const MIGRATION_LOCK_ATTEMPTS = 10;
/**
 * Shortest pause between tries (ms); each pause is drawn between it and twice it (jitter), at least one default
 * heartbeat, so the statements that queued behind a try — heartbeats above all — run before the next try queues
 * them again.
 */
export const MIGRATION_RETRY_DELAY_MS = 1_000;

/**
 * Longest a process waits for the migration's advisory lock (ms) while other processes migrate (or try to): its turn
 * comes after theirs, each of which can take all its tries (about 23 s at most on a held table), so seven pods that
 * start together on such a table wait minutes. Polled with `pg_try_advisory_lock`, so no statement waits: a blocking
 * `pg_advisory_lock` ran under the pool's `statement_timeout` (15 s) and failed "canceling statement due to statement
 * timeout" instead of saying who held it.
 */
export const MIGRATION_ADVISORY_WAIT_MS = 300_000;
/** Pause between polls of the advisory lock (ms; jittered up to 1.5 times). */
const ADVISORY_POLL_MS = 200;

/**
 * Take the migration's session-level advisory lock, polling `pg_try_advisory_lock` (each poll returns at once, so the
 * wait is not bounded by `statement_timeout`) for at most `waitMs`.
 * @throws {StoreError} `unavailable` naming the session that holds it, when it was not free within `waitMs`.
 */
export async function takeMigrationLock(client: pg.ClientBase, waitMs: number): Promise<void> {
  const deadline = performance.now() + waitMs;
  for (;;) {
    const { rows } = await client.query<{ taken: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS taken', [MIGRATION_LOCK_KEY]);
    if (rows[0]?.taken === true) return;
    if (performance.now() >= deadline) throw await advisoryNotTaken(client, waitMs);
    await sleep(ADVISORY_POLL_MS * (1 + Math.random() / 2));
  }
}

/** The `unavailable` error of a migration that waited `waitMs` for the advisory lock in vain: who holds it. */
async function advisoryNotTaken(client: pg.ClientBase, waitMs: number): Promise<StoreError> {
  const { rows } = await client
    .query<{ pid: number; application_name: string | null; xact_seconds: number | null }>(
      `SELECT l.pid, NULLIF(a.application_name, '') AS application_name,
              floor(extract(epoch FROM clock_timestamp() - coalesce(a.xact_start, a.state_change)))::int AS xact_seconds
         FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> pg_backend_pid()
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND l.classid::bigint = ($1::bigint >> 32) AND l.objid::bigint = ($1::bigint & 4294967295)
        LIMIT 1`,
      [MIGRATION_LOCK_KEY],
    )
    .catch(() => ({ rows: [] as Array<{ pid: number; application_name: string | null; xact_seconds: number | null }> }));
  const holder = rows[0];
  const who = holder
    ? `pid ${holder.pid}${holder.application_name ? ` ("${holder.application_name}")` : ''}${holder.xact_seconds === null ? '' : ` for ${holder.xact_seconds} s`}`
    : 'another session';
  return new StoreError(
    'unavailable',
    `task store migrations are held by ${who} (another process migrating, or a session holding advisory lock ${MIGRATION_LOCK_KEY}); ` +
      `waited ${waitMs} ms. Start again once it ends${holder ? ` (or SELECT pg_terminate_backend(${holder.pid}) if it is stuck)` : ''}. Nothing was migrated`,
  );
}

/** Release what {@link takeMigrationLock} took (best effort: a lost connection has released it already). */
export async function releaseMigrationLock(client: pg.ClientBase): Promise<void> {
  await client.query('SELECT pg_advisory_unlock($1::bigint)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
}

/** PostgreSQL's `lock_not_available`: `lock_timeout` (or NOWAIT) gave up on a lock. */
export function isLockTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '55P03';
}

/**
 * The `unavailable` error of a migration that could not take its lock on any try: which migration, which table of
 * the schema another session holds a lock on and since when (the oldest such transaction: the usual culprit), and
 * what to do. Nothing was migrated (every try rolled back).
 */
export async function lockNotTaken(
  client: pg.ClientBase,
  cause: unknown,
  running: PostgresMigration | undefined,
  step: string | undefined,
  settings: { lockTimeoutMs: number; attempts: number; schema: string },
): Promise<StoreError> {
  const what = running ? `migration ${running.version} ("${running.name}")` : (step ?? 'the migration');
  const holder = await lockHolder(client, settings.schema).catch(() => undefined);
  const about = holder && [
    holder.application_name && `"${holder.application_name}"`,
    holder.xact_seconds !== null && `in a transaction for ${holder.xact_seconds} s`,
  ];
  const held = holder
    ? `${settings.schema}.${holder.relname} is locked by pid ${holder.pid}${about?.some(Boolean) ? ` (${about.filter(Boolean).join(', ')})` : ''}; ` +
      `end that transaction (let it commit or roll back, or SELECT pg_terminate_backend(${holder.pid})) and start again`
    : `a table of ${settings.schema} is locked by another session's transaction (see pg_locks); end it and start again`;
  return new StoreError(
    'unavailable',
    `task store ${what} could not take its lock within ${settings.lockTimeoutMs} ms on ${settings.attempts} tr${settings.attempts === 1 ? 'y' : 'ies'}: ${held}. Nothing was migrated`,
    { cause },
  );
}

/** The oldest transaction of another session that holds a lock on a table of `schema` (best effort; undefined if none). */
async function lockHolder(
  client: pg.ClientBase,
  schema: string,
): Promise<{ relname: string; pid: number; application_name: string | null; xact_seconds: number | null } | undefined> {
  const { rows } = await client.query<{ relname: string; pid: number; application_name: string | null; xact_seconds: number | null }>(
    `SELECT c.relname, l.pid, NULLIF(a.application_name, '') AS application_name,
            floor(extract(epoch FROM clock_timestamp() - a.xact_start))::int AS xact_seconds
       FROM pg_locks l
       JOIN pg_class c ON c.oid = l.relation
       JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND l.granted AND l.pid <> pg_backend_pid()
      ORDER BY a.xact_start NULLS LAST, l.pid
      LIMIT 1`,
    [schema],
  );
  return rows[0];
}
