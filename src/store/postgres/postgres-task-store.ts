import type pg from 'pg';

import type { Clock } from '../../core/clock.js';
import { type Logger, silentLogger } from '../../core/logger.js';
import type { CommitWatcher } from '../../core/ports/feed.js';
import { NEWER_COMPATIBLE_SCHEMA } from '../../core/schema-compatibility.js';
import { TaskEventListeners } from '../../core/task-event-listeners.js';
import { RowCodec } from '../codec.js';
import { ComposedTaskStore } from '../composed-task-store.js';
import type { FieldCipher } from '../field-cipher.js';
import { PostgresAdmission } from './admission.js';
import { PostgresBatcher, type PostgresBatchStats } from './batch.js';
import { createLivenessPools, createPool, type LivenessPools, type PostgresConnectionOptions, toStoreError, withPooledClient } from './connection.js';
import { PostgresContext } from './context.js';
import { PostgresFeed } from './feed.js';
import { PostgresInputs } from './inputs.js';
import { PostgresLeases } from './leases.js';
import { PostgresLedger } from './ledger.js';
import { PostgresMaintenance } from './maintenance.js';
import { migrateSchema } from './migrations.js';
import { PostgresProcesses } from './processes.js';
import { PostgresResults } from './results.js';
import { PostgresRollout } from './rollout.js';
import { PostgresRows } from './rows.js';
import { postgresSessionTables } from './sessions.js';
import { SQL } from './sql.js';
import { PostgresSteps } from './steps.js';
import { TableStatistics } from './table-statistics.js';

/** Options of {@link openPostgresTaskStore}. */
export interface PostgresTaskStoreOptions extends PostgresConnectionOptions {
  logger?: Logger;
  /**
   * The store's clock for leases, expiry sweeps, `attempt`/`expired` event times and step stamps. Default: the
   * database's `clock_timestamp()`, so every instance on the database judges a lease on the same clock (no
   * host's clock skew can shorten or steal one). Tests pass a fake clock to drive those rules without sleeping.
   */
  clock?: Clock;
  /** Most writes per batch transaction. Default 256. */
  maxBatchSize?: number;
  /**
   * Batch transactions in flight at once (each holds a pool connection). Default 1: the writes issued while a batch is
   * in flight then wait for it and go together in the next, so a busy process sends fewer, larger statements — with 2,
   * `bench:instances` measured ×1.2 the statements and ×1.4 PostgreSQL's CPU per round trip for the same work
   * (issue 25, bench/results/2026-12-07-p7-one-batch-in-flight.md). A batch that waits on a row lock (held by another
   * process's transaction or an operator's) then delays this process's other writes until it gets the lock or hits
   * the statement timeout; heartbeats and lease renewals do not wait for it (`writeOutsideBatch`).
   */
  maxInFlightBatches?: number;
  /**
   * Encrypts tool arguments, input requests and answers and journaled steps at rest (`AesGcmFieldCipher`).
   * Default: none (plaintext; encrypted rows are then refused with a `fault` naming their key id).
   */
  encryption?: FieldCipher;
}

/**
 * The durable `TaskStore` on PostgreSQL (node-postgres pool, schema `mcp_tasks`), composed of one object per port
 * (`rows.ts`, `leases.ts`, … in this folder, the same file names as `store/sqlite/`) over one {@link PostgresContext}.
 *
 * Writes go through a {@link PostgresBatcher}: concurrent writes share a transaction (group commit), all creates of
 * a batch are one multi-row INSERT, and every promise resolves only after its COMMIT (`synchronous_commit` as the
 * server is configured; keep it `on` for the durability the port promises). Reads are single statements on the
 * pool, so they see committed state only. Races between instances are settled by conditional statements and row
 * locks (see `sql.ts`); claiming uses `FOR UPDATE SKIP LOCKED`. Event seqs come from a commit-ordered counter, so
 * `readEventsAfter` tails lose nothing.
 *
 * Errors: a `StoreError` — `unavailable` for connection loss and timeouts (no call hangs longer than the
 * connect or statement timeout), `conflict` for an idempotency key taken (also by a concurrent create elsewhere),
 * `invalid` for a broken precondition of the port, `fault` otherwise.
 */
export class PostgresTaskStore extends ComposedTaskStore {
  /** Schema versions this instance applied when it opened (empty when another instance already had). */
  readonly appliedMigrations: readonly number[];
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly ctx: PostgresContext,
    private readonly events: PostgresFeed,
    private readonly statistics: TableStatistics,
    appliedMigrations: number[],
  ) {
    const rows = new PostgresRows(ctx);
    super({
      rows,
      admission: new PostgresAdmission(ctx, rows),
      leases: new PostgresLeases(ctx),
      inputs: new PostgresInputs(ctx),
      results: new PostgresResults(ctx),
      steps: new PostgresSteps(ctx),
      processes: new PostgresProcesses(ctx),
      feed: events,
      ledger: new PostgresLedger(ctx, rows),
      rollout: new PostgresRollout(ctx),
      maintenance: new PostgresMaintenance(ctx),
      sessions: postgresSessionTables(ctx),
    });
    this.appliedMigrations = Object.freeze(appliedMigrations);
  }

  /** See {@link openPostgresTaskStore}. */
  static async open(options: PostgresTaskStoreOptions): Promise<PostgresTaskStore> {
    const logger = (options.logger ?? silentLogger).child({ component: 'postgres-task-store' });
    const pool = createPool(options, logger);
    const liveness = createLivenessPools(options, logger);
    try {
      const { applied, schema } = await withPooledClient(
        pool,
        (client) => migrateSchema(client),
        (error) => toStoreError(error, 'connect'),
      );
      if (applied.length > 0) logger.info({ versions: applied }, 'task store schema migrated');
      if (schema.state === 'newer-compatible') logger.info({ ...schema }, NEWER_COMPATIBLE_SCHEMA);
      const { ctx, statistics } = contextFor(pool, liveness, options, logger);
      await statistics.opened();
      return new PostgresTaskStore(ctx, new PostgresFeed(ctx), statistics, applied);
    } catch (error) {
      await Promise.all([pool, liveness.heartbeat, liveness.renewal].map((each) => each.end().catch(() => undefined)));
      throw toStoreError(error, 'open');
    }
  }

  /** Batch counters: `commits` = write transactions, `operations` = writes they carried, `retries` after deadlocks. */
  stats(): PostgresBatchStats {
    return { ...this.ctx.batcher.stats };
  }

  /** The store's current time in epoch ms (the database's, unless opened with a clock). */
  async now(): Promise<number> {
    if (this.ctx.clock) return this.ctx.clock.now();
    const rows = await this.ctx.read<{ now: number }>('read the clock', SQL.storeNow, [null]);
    return (rows[0] as { now: number }).now;
  }

  /** See `TaskFeed.watchCommits` and {@link PostgresFeed.watchCommits}: `LISTEN mcp_tasks_feed`, reconnecting. */
  watchCommits(wake: CommitWatcher): () => Promise<void> {
    return this.events.watchCommits(wake);
  }

  /** Commit every queued write, then close the pool. Later calls return the same promise. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.ctx.closed = true;
      await Promise.all([...this.events.watchers].map((unwatch) => unwatch()));
      await this.ctx.batcher.drain();
      await this.statistics.stop();
      await this.ctx.admittedReadsSettled();
      this.ctx.batcher.close();
      this.ctx.listeners.clear();
      await Promise.all([this.ctx.pool.end(), this.ctx.liveness.heartbeat.end(), this.ctx.liveness.renewal.end()]);
    })();
    return this.closing;
  }
}

/**
 * The shared context of a store's ports (the write batcher on `pool`, the listeners it publishes to, the codec) and
 * the table statistics that watch the same commits for growth marks.
 */
function contextFor(
  pool: pg.Pool,
  liveness: LivenessPools,
  options: PostgresTaskStoreOptions,
  logger: Logger,
): { ctx: PostgresContext; statistics: TableStatistics } {
  const listeners = new TaskEventListeners(logger);
  const statistics = new TableStatistics(pool, logger);
  const batcher = new PostgresBatcher(
    pool,
    { maxBatch: Math.max(1, Math.floor(options.maxBatchSize ?? 256)), maxInFlight: Math.max(1, Math.floor(options.maxInFlightBatches ?? 1)) },
    (events) => {
      listeners.publish(events);
      statistics.observe(events);
    },
    logger,
  );
  const ctx = new PostgresContext(pool, batcher, options.clock, new RowCodec(options.encryption), listeners, logger, options, liveness);
  return { ctx, statistics };
}

/**
 * Open a PostgreSQL task store: a pool on `options.url`, the schema migrated under an advisory lock (see
 * `migrateSchema`; a newer schema whose newer migrations are all marked compatible opens as it is).
 * @throws {StoreError} `unavailable` when the server cannot be reached within the connect timeout, or a migration
 *   could not take a table lock on any try (the message names the holder); `schema_mismatch` when the database holds
 *   a newer migration marked breaking (or unmarked), or a known version under another name; `fault` otherwise.
 */
export function openPostgresTaskStore(options: PostgresTaskStoreOptions): Promise<PostgresTaskStore> {
  return PostgresTaskStore.open(options);
}
