import type { ProcessRecord } from '../core/process-record.js';

/**
 * What `mcp-tasks doctor` reads from a store, without migrating or writing anything (read-only connection). Times
 * are epoch ms on the store's clock (SQLite: this host's; PostgreSQL: the database's `clock_timestamp()`).
 */
export interface StoreDiagnosis {
  /** Highest schema version applied (0 for an empty database). */
  schemaVersion: number;
  /** Highest version this code knows. */
  knownVersion: number;
  /** The store's now, and this host's now read right around it (for the skew). */
  storeNow: number;
  hostNow: number;
  /** `working` tasks whose lease lapsed, or that no one leased (runnable): what a live worker would take. */
  waitingForWorker: number;
  /** Events of tasks that no longer exist, `expired` tombstones aside (retention deletes them with their task). */
  orphanedEvents: number;
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

/** The columns of `server_secret` `doctor` reads: never `secret`. */
export const DIAGNOSED_SECRET_COLUMNS = 'mode, salt, verifier, created_at';
