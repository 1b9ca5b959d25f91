import type Database from 'better-sqlite3';
import type pg from 'pg';

import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';

/**
 * The statements over `schema_migrations` of the mcp-tasks before the compatibility marks (632bfe3~1), which knew
 * PostgreSQL migrations 1–14 and SQLite 1–13 (as this code does): how it migrated (no `breaking` column, rows `(version, name)`), how it
 * checked the schema at start (`SELECT version, name`: no newer version, no other name) and how `/readyz` judged it
 * (`MAX(version)` equal to its newest). A process of that version on a database stays ready while these hold.
 */
export const PREVIOUS_POSTGRES_VERSION = 14;
export const PREVIOUS_SQLITE_VERSION = 13;
const PREVIOUS_POSTGRES = POSTGRES_MIGRATIONS.slice(0, PREVIOUS_POSTGRES_VERSION);
const PREVIOUS_SQLITE = MIGRATIONS.slice(0, PREVIOUS_SQLITE_VERSION);

/** The previous version's PostgreSQL `migrate`. */
export async function migrateAsPreviousPostgres(client: pg.ClientBase): Promise<void> {
  await client.query('BEGIN');
  await client.query('CREATE SCHEMA IF NOT EXISTS mcp_tasks');
  await client.query(
    'CREATE TABLE IF NOT EXISTS mcp_tasks.schema_migrations (version integer NOT NULL PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
  );
  for (const migration of PREVIOUS_POSTGRES) {
    await client.query(migration.sql);
    await client.query('INSERT INTO mcp_tasks.schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
  }
  await client.query('COMMIT');
}

/** The previous version's PostgreSQL readiness (`/readyz` `checks.migrations`) and start check, as named statements it prepared once. */
export async function previousPostgresView(client: pg.ClientBase): Promise<{ ready: boolean; startsOn: boolean; applied: number }> {
  const status = await client.query<{ v: number }>({
    name: 'previous_schema_status',
    text: 'SELECT COALESCE(MAX(version), 0)::int AS v FROM mcp_tasks.schema_migrations',
  });
  const rows = await client.query<{ version: number; name: string }>({
    name: 'previous_schema_rows',
    text: 'SELECT version, name FROM mcp_tasks.schema_migrations ORDER BY version',
  });
  const applied = status.rows[0]!.v;
  const startsOn =
    applied <= PREVIOUS_POSTGRES_VERSION && rows.rows.every((row) => PREVIOUS_POSTGRES.find((m) => m.version === row.version)?.name === row.name);
  return { ready: applied === PREVIOUS_POSTGRES_VERSION, startsOn, applied };
}

/** The previous version's SQLite `migrate`. */
export function migrateAsPreviousSqlite(db: Database.Database): void {
  db.exec('BEGIN IMMEDIATE');
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT');
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  for (const migration of PREVIOUS_SQLITE) {
    db.exec(migration.sql);
    record.run(migration.version, migration.name, 0);
  }
  db.exec('COMMIT');
}

/** The previous version's SQLite readiness and start check. */
export function previousSqliteView(db: Database.Database): { ready: boolean; startsOn: boolean; applied: number } {
  const applied = (db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations').get() as { v: number }).v;
  const rows = db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all() as Array<{ version: number; name: string }>;
  const startsOn = applied <= PREVIOUS_SQLITE_VERSION && rows.every((row) => PREVIOUS_SQLITE.find((m) => m.version === row.version)?.name === row.name);
  return { ready: applied === PREVIOUS_SQLITE_VERSION, startsOn, applied };
}
