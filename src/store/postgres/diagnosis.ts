import pg from 'pg';

import { judgeSchema } from '../../core/schema-compatibility.js';
import { DIAGNOSED_SECRET_COLUMNS, type StoreDiagnosis, toDiagnosedSecret, toUnfinishedByKeyId, unfinishedByKeyIdSql } from '../diagnosis.js';
import { type ProcessRow, toProcess } from '../process-row.js';
import { BIGINT_AS_NUMBER } from './connection.js';
import { POSTGRES_MIGRATIONS, readAppliedMigrations, SCHEMA } from './migrations.js';

/** The database's now in epoch ms (what `mcp_tasks.now_ms()` gives, which an older schema may lack). */
const STORE_NOW_MS = 'floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint';

/**
 * Read a {@link StoreDiagnosis} of the PostgreSQL database at `url` in a read-only transaction (nothing is created,
 * migrated or written), on the database's clock. Parts the schema does not have yet read as empty.
 * @throws the driver's error when the database cannot be reached (after `connectTimeoutMs`).
 */
export async function diagnosePostgresStore(url: string, connectTimeoutMs = 5_000): Promise<StoreDiagnosis> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: connectTimeoutMs, types: BIGINT_AS_NUMBER });
  // A connection lost mid-diagnosis rejects the query in flight; without a listener its 'error' event would also
  // end the process with a stack trace instead of doctor's one line.
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query('BEGIN READ ONLY');
    const scalar = async (sql: string): Promise<number> => Number((await client.query<{ n: string | number }>(sql)).rows[0]?.n ?? 0);
    const has = (table: string): Promise<boolean> => hasTable(client, table);
    const before = Date.now();
    const storeNow = await scalar(`SELECT ${STORE_NOW_MS} AS n`);
    const hostNow = Math.round((before + Date.now()) / 2);
    const diagnosis: StoreDiagnosis = {
      schema: judgeSchema((await has('schema_migrations')) ? await readAppliedMigrations(client) : [], POSTGRES_MIGRATIONS),
      storeNow,
      hostNow,
      waitingForWorker: (await has('tasks'))
        ? await scalar(`SELECT COUNT(*) AS n FROM ${SCHEMA}.tasks WHERE status = 'working' AND (lease_expires_at IS NULL OR lease_expires_at <= ${storeNow})`)
        : 0,
      orphanedEvents: (await has('task_events'))
        ? await scalar(
            `SELECT COUNT(*) AS n FROM ${SCHEMA}.task_events e WHERE e.kind <> 'expired' AND NOT EXISTS (SELECT 1 FROM ${SCHEMA}.tasks t WHERE t.task_id = e.task_id)`,
          )
        : 0,
      unfinishedByKeyId: (await has('task_steps')) ? await unfinishedByKeyIdOf(client) : [],
      processes: (await has('processes'))
        ? (await client.query<ProcessRow>(processesSql(await has('draining_processes')))).rows.map((row) => toProcess(row, storeNow))
        : [],
      serverSecret: (await has('server_secret'))
        ? toDiagnosedSecret((await client.query(`SELECT ${DIAGNOSED_SECRET_COLUMNS} FROM ${SCHEMA}.server_secret WHERE id = 1`)).rows[0])
        : null,
    };
    await client.query('COMMIT');
    return diagnosis;
  } finally {
    await client.end();
  }
}

/** The registry with each registration's draining mark (migration 14), or without one on an older schema. */
function processesSql(withDraining: boolean): string {
  return withDraining
    ? `SELECT p.*, d.draining_since FROM ${SCHEMA}.processes p
        LEFT JOIN ${SCHEMA}.draining_processes d ON d.instance_id = p.instance_id AND d.token = p.token ORDER BY p.instance_id`
    : `SELECT * FROM ${SCHEMA}.processes ORDER BY instance_id`;
}

/** Whether the schema has `table` (an older or not yet created schema lacks some). */
async function hasTable(client: pg.Client, table: string): Promise<boolean> {
  return (await client.query('SELECT to_regclass($1) IS NOT NULL AS present', [`${SCHEMA}.${table}`])).rows[0]?.present === true;
}

/** {@link StoreDiagnosis.unfinishedByKeyId} through `client` (the schema's tables present). */
async function unfinishedByKeyIdOf(client: pg.Client): Promise<StoreDiagnosis['unfinishedByKeyId']> {
  const sql = unfinishedByKeyIdSql((column) => `split_part(${column}, ':', 2)`, `${SCHEMA}.`, STORE_NOW_MS, "string_agg(DISTINCT task_id, ',')");
  return (await client.query<{ key_id: string; task_ids: string | null }>(sql)).rows.map(toUnfinishedByKeyId);
}

/**
 * {@link StoreDiagnosis.unfinishedByKeyId} of the PostgreSQL database at `url`, on a connection of its own: what a
 * `serve` or `worker` checks at start (an empty list before the schema exists).
 * @throws the driver's error when the database cannot be reached.
 */
export async function postgresUnfinishedByKeyId(url: string, connectTimeoutMs = 5_000): Promise<StoreDiagnosis['unfinishedByKeyId']> {
  // Bounded as the store's own statements are: a table locked by a migration elsewhere must not hang the start.
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: connectTimeoutMs,
    statement_timeout: 15_000,
    query_timeout: 20_000,
    application_name: 'mcp-tasks-start-check',
    types: BIGINT_AS_NUMBER,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await hasTable(client, 'task_steps')) ? await unfinishedByKeyIdOf(client) : [];
  } finally {
    await client.end().catch(() => undefined);
  }
}
