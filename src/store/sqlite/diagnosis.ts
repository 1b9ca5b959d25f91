import { existsSync } from 'node:fs';

import Database from 'better-sqlite3';

import { judgeSchema } from '../../core/schema-compatibility.js';
import { DIAGNOSED_SECRET_COLUMNS, type StoreDiagnosis, toDiagnosedSecret, toUnfinishedByKeyId, unfinishedByKeyIdSql } from '../diagnosis.js';
import { type ProcessRow, toProcess } from '../process-row.js';
import { MIGRATIONS, readAppliedMigrations } from './migrations.js';

/**
 * Read a {@link StoreDiagnosis} of the SQLite file at `path` over a read-only connection (nothing is created,
 * migrated or written). Parts the file's schema does not have yet read as empty.
 * @throws the driver's error when the file is missing or not a database.
 */
export function diagnoseSqliteStore(path: string): StoreDiagnosis {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const has = (table: string): boolean => hasTable(db, table);
    const count = (sql: string, params: unknown[] = []): number => (db.prepare(sql).get(...params) as { n: number }).n;
    const now = Date.now();
    return {
      schema: judgeSchema(has('schema_migrations') ? readAppliedMigrations(db) : [], MIGRATIONS),
      storeNow: now,
      hostNow: now,
      waitingForWorker: has('tasks')
        ? count("SELECT COUNT(*) AS n FROM tasks WHERE status = 'working' AND (lease_expires_at IS NULL OR lease_expires_at <= ?)", [now])
        : 0,
      orphanedEvents: has('task_events')
        ? count("SELECT COUNT(*) AS n FROM task_events e WHERE e.kind <> 'expired' AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = e.task_id)")
        : 0,
      unfinishedByKeyId: has('task_steps') ? unfinishedByKeyIdOf(db) : [],
      processes: has('processes') ? (db.prepare(processesSql(has('draining_processes'))).all() as ProcessRow[]).map((row) => toProcess(row, now)) : [],
      serverSecret: has('server_secret')
        ? toDiagnosedSecret(db.prepare(`SELECT ${DIAGNOSED_SECRET_COLUMNS} FROM server_secret WHERE id = 1`).get() as Parameters<typeof toDiagnosedSecret>[0])
        : null,
    };
  } finally {
    db.close();
  }
}

/** The registry with each registration's draining mark (migration 13), or without one on an older schema. */
function processesSql(withDraining: boolean): string {
  return withDraining
    ? `SELECT p.*, d.draining_since FROM processes p
        LEFT JOIN draining_processes d ON d.instance_id = p.instance_id AND d.token = p.token ORDER BY p.instance_id`
    : 'SELECT * FROM processes ORDER BY instance_id';
}

/** Whether the file's schema has `table`. */
function hasTable(db: Database.Database, table: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
}

/** {@link StoreDiagnosis.unfinishedByKeyId} over an open connection (its tables present). */
function unfinishedByKeyIdOf(db: Database.Database): StoreDiagnosis['unfinishedByKeyId'] {
  const sql = unfinishedByKeyIdSql(
    (column) => `substr(${column}, 6, instr(substr(${column}, 6), ':') - 1)`,
    '',
    String(Date.now()),
    'group_concat(DISTINCT task_id)',
  );
  return (db.prepare(sql).all() as Array<{ key_id: string; task_ids: string | null }>).map(toUnfinishedByKeyId);
}

/**
 * {@link StoreDiagnosis.unfinishedByKeyId} of the SQLite file at `path` over a read-only connection: what a `serve` or
 * `worker` checks at start (an empty list for a file not created yet or without the tables).
 */
export function sqliteUnfinishedByKeyId(path: string): StoreDiagnosis['unfinishedByKeyId'] {
  if (!existsSync(path)) return [];
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return hasTable(db, 'task_steps') ? unfinishedByKeyIdOf(db) : [];
  } finally {
    db.close();
  }
}
