import type { ProcessRecord } from '../core/process-record.js';
import type { SchemaCompatibility } from '../core/schema-compatibility.js';

/**
 * What `mcp-tasks doctor` reads from a store, without migrating or writing anything (read-only connection). Times
 * are epoch ms on the store's clock (SQLite: this host's; PostgreSQL: the database's `clock_timestamp()`).
 */
export interface StoreDiagnosis {
  /**
   * The schema judged against this code (`judgeSchema`, the rule start-up and readiness apply too): applied and
   * known versions, newer ones, and whether a process of this code may start (and be ready) on it.
   */
  schema: SchemaCompatibility;
  /** The store's now, and this host's now read right around it (for the skew). */
  storeNow: number;
  hostNow: number;
  /** `working` tasks whose lease lapsed, or that no one leased (runnable): what a live worker would take. */
  waitingForWorker: number;
  /** Events of tasks that no longer exist, `expired` tombstones aside (retention deletes them with their task). */
  orphanedEvents: number;
  /**
   * Unfinished tasks (`working`, `input_required`, before their TTL) by the id of the at-rest key their arguments, input requests and
   * answers or journaled steps are encrypted with (a task under two keys counts under each), by key id. What a
   * process without one of those keys cannot run; a key no unfinished task uses can be dropped. `taskIds`: those
   * tasks, sorted (their count is what doctor and the start refusal report; `--fail-unreadable-tasks` fails them).
   */
  unfinishedByKeyId: Array<{ keyId: string; taskIds: string[] }>;
  /** The process registry, `live` judged at `storeNow`. */
  processes: ProcessRecord[];
  /**
   * How the store's instances agree on the server secret (`server_secret`), `null` before the first start records
   * it. A kept secret is never read: only its mode. A verifier is a salted scrypt digest, not the secret.
   */
  serverSecret: DiagnosedSecret | null;
}

/** The `server_secret` record as `doctor` sees it (see `ServerSecretRecord`, minus a kept secret's value). */
export type DiagnosedSecret = { mode: 'kept'; createdAt: number } | { mode: 'verifier'; salt: string; verifier: string; createdAt: number };

/** The {@link DiagnosedSecret} of a `server_secret` row read without its `secret` column. */
export function toDiagnosedSecret(
  row: { mode: string; salt: string | null; verifier: string | null; created_at: number | string } | undefined,
): DiagnosedSecret | null {
  if (!row) return null;
  const createdAt = Number(row.created_at);
  return row.mode === 'kept' ? { mode: 'kept', createdAt } : { mode: 'verifier', salt: String(row.salt), verifier: String(row.verifier), createdAt };
}

/**
 * The query behind {@link StoreDiagnosis.unfinishedByKeyId}, given how the dialect takes a value's key id out of
 * `enc1:<key id>:<base64url>` (`keyIdOf`), the schema prefix (`tables`, e.g. `mcp_tasks.` or empty), the store's
 * now in epoch ms (`now`, an SQL expression) — a task past its TTL is no one's to run (claims leave it to the sweeper)
 * — and the dialect's comma-joined distinct task ids of a group (`taskIdsOf`; task ids hold no comma).
 * Rows: `key_id`, `task_ids`.
 */
export function unfinishedByKeyIdSql(keyIdOf: (column: string) => string, tables: string, now: string, taskIdsOf: string): string {
  const unfinished = `t.status IN ('working', 'input_required') AND (t.expires_at IS NULL OR t.expires_at > ${now})`;
  return `SELECT key_id, ${taskIdsOf} AS task_ids FROM (
      SELECT t.task_id, ${keyIdOf('t.arguments')} AS key_id FROM ${tables}tasks t WHERE ${unfinished} AND t.arguments LIKE 'enc1:%'
      UNION ALL SELECT r.task_id, ${keyIdOf('r.request')} FROM ${tables}input_requests r JOIN ${tables}tasks t ON t.task_id = r.task_id
        WHERE ${unfinished} AND r.request LIKE 'enc1:%'
      UNION ALL SELECT r.task_id, ${keyIdOf('r.response')} FROM ${tables}input_requests r JOIN ${tables}tasks t ON t.task_id = r.task_id
        WHERE ${unfinished} AND r.response LIKE 'enc1:%'
      UNION ALL SELECT s.task_id, ${keyIdOf('s.value')} FROM ${tables}task_steps s JOIN ${tables}tasks t ON t.task_id = s.task_id
        WHERE ${unfinished} AND s.value LIKE 'enc1:%'
    ) k GROUP BY key_id ORDER BY key_id`;
}

/** The at-rest key ids a process is configured with: the one it writes with (`null` without a key) and the read-only ones. */
export interface ConfiguredKeyIds {
  current: string | null;
  readOnly: readonly string[];
}

/** One row of {@link unfinishedByKeyIdSql} as an entry of {@link StoreDiagnosis.unfinishedByKeyId}. */
export function toUnfinishedByKeyId(row: { key_id: string; task_ids: string | null }): StoreDiagnosis['unfinishedByKeyId'][number] {
  return {
    keyId: row.key_id,
    taskIds: (row.task_ids ?? '')
      .split(',')
      .filter((id) => id.length > 0)
      .sort(),
  };
}

/** The entries of `inUse` under a key id `keys` does not include: what such a process cannot run. */
export function keysNotConfigured(inUse: StoreDiagnosis['unfinishedByKeyId'], keys: ConfiguredKeyIds): StoreDiagnosis['unfinishedByKeyId'] {
  const configured = new Set([...(keys.current === null ? [] : [keys.current]), ...keys.readOnly]);
  return inUse.filter((entry) => !configured.has(entry.keyId));
}

/** The columns of `server_secret` `doctor` reads: never `secret`. */
export const DIAGNOSED_SECRET_COLUMNS = 'mode, salt, verifier, created_at';
