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
}
