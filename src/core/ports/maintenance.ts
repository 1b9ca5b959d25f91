import type { SchemaCompatibility } from '../schema-compatibility.js';

/**
 * Maintenance and lifecycle (port "maintenance"): the expiry sweep and retention, giving space back, the schema
 * check readiness probes make, and closing. Judged on the store's clock. Errors: only `StoreError`.
 */
export interface StoreMaintenance {
  /**
   * Expire up to `limit` tasks with `expiresAt <= now` on the store's clock: append an `expired` event (`at` = that
   * now), then delete the task, everything hanging off it and its other events. `expired` events older than
   * `EXPIRED_EVENT_RETENTION_MS` are deleted too (up to `limit`), and so are lapsed idempotency keys (their window,
   * not the TTL, decides). Returns the expired ids.
   * Port changes (issue 11): the sweep judges expiry on the store's clock, so every process's sweeper agrees; a
   * task's events go with it (retention).
   */
  expireDue(limit: number): Promise<string[]>;

  /**
   * Give storage freed by deletions back where the backend needs to be asked (SQLite: an incremental vacuum step on
   * a file created with `auto_vacuum = INCREMENTAL`; PostgreSQL: nothing, autovacuum does it). Never required for
   * correctness. Port addition (issue 11).
   */
  compact(): Promise<void>;

  /**
   * The store's schema judged against this code (`judgeSchema`, read from the database now, so this also proves it
   * answers): `applied` and `expected` versions, the newer versions this code does not know, and whether it may run
   * on them. Readiness probes are ready on `current` and `newer-compatible` (a rolling deploy's newer code migrated
   * additively). Port change: it returned `{applied, expected}` only, and readiness required them equal.
   * @throws {StoreError} when the store cannot be reached.
   */
  schemaStatus(): Promise<SchemaCompatibility>;

  /** Finish pending writes and close the backend. */
  close(): Promise<void>;
}
