import type pg from 'pg';

import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import { StoreError } from '../../core/store-error.js';
import type { TaskEventListeners } from '../../core/task-event-listeners.js';
import type { RowCodec } from '../codec.js';
import type { PostgresBatcher } from './batch.js';
import {
  CONFLICT_RETRIES,
  isRetryableConflict,
  LIVENESS_CONNECT_WAIT_MS,
  type LivenessPools,
  type PostgresConnectionOptions,
  toStoreError,
  withPooledClient,
} from './connection.js';
import { statement } from './prepared.js';

/**
 * What every port of the PostgreSQL store shares: the pool, the write batcher, the store's clock (or the database's),
 * the row codec and the listeners of this instance. Made once per store; the port objects hold it and add no
 * allocation per call.
 */
export class PostgresContext {
  /** Set by the store's `close`: later reads and transactions fail with `fault` instead of using an ended pool. */
  closed = false;
  /** Reads of {@link readAdmitted} in flight. */
  private readonly admitted = new Set<Promise<unknown>>();

  constructor(
    readonly pool: pg.Pool,
    readonly batcher: PostgresBatcher,
    /** The store's own clock; `undefined` = the database's `clock_timestamp()`. */
    readonly clock: Clock | undefined,
    readonly codec: RowCodec,
    readonly listeners: TaskEventListeners,
    readonly logger: Logger,
    readonly connection: PostgresConnectionOptions,
    /** Connections of the heartbeat and the lease renewals, apart from `pool` (see {@link writeOutsideBatch}). */
    readonly liveness: LivenessPools,
  ) {}

  /** The time parameter of a statement: `null` (the database clock) unless the store has a clock of its own. */
  clockNow(): number | null {
    return this.clock ? this.clock.now() : null;
  }

  /** Throws `fault` naming `action` once the store's close has begun. */
  refuseIfClosed(action: string): void {
    if (this.closed) throw new StoreError('fault', `Task store failed to ${action}: store is closed`, { requestorMessage: `Task store failed to ${action}` });
  }

  /** One statement on the pool (committed state only), a driver error mapped to a `StoreError` naming `action`. */
  async read<R extends pg.QueryResultRow>(action: string, sql: string, params: readonly unknown[]): Promise<R[]> {
    this.refuseIfClosed(action);
    return this.readAdmitted(action, sql, params);
  }

  /**
   * One autocommit write outside the write batch and outside the store's pool: a process's heartbeat and its lease
   * renewals (`lane`), writes that append no event and whose order against the batch's writes does not matter. They
   * must wait neither for a batch stalled on a row lock (another process's, an operator's) nor for a connection of a
   * pool other calls hold: a heartbeat held up past the registration's TTL gets the process reaped by the others, and
   * its running tasks claimed while they still run (see {@link LivenessPools}). (A renewal still waits for a task row
   * such a batch has locked — only for that row, as inside the batch.) A deadlock or serialization failure is sent
   * again, at most `CONFLICT_RETRIES` times, as the batch does.
   */
  async writeOutsideBatch<R extends pg.QueryResultRow>(lane: keyof LivenessPools, action: string, sql: string, params: readonly unknown[]): Promise<R[]> {
    for (let attempt = 0; ; attempt += 1) {
      this.refuseIfClosed(action);
      try {
        return await this.sendLiveness<R>(lane, sql, params);
      } catch (error) {
        // A deadlock with a batch transaction of this or another process (a renewal's row locks and the batch's are
        // taken in different orders): PostgreSQL rolled this statement back, so sending it again is safe.
        if (attempt >= CONFLICT_RETRIES || !isRetryableConflict(error)) throw toStoreError(error, action);
      }
    }
  }

  /**
   * `sql` on a connection of `lane`; when none can be had within {@link LIVENESS_CONNECT_WAIT_MS} (the server at its
   * connection limit, a role's `CONNECTION LIMIT`, a connect that hangs or is slow), on the store's pool instead,
   * whose connections may be open already: a dedicated connection must not make a heartbeat fail, or come late,
   * where the shared pool would have sent it.
   */
  private async sendLiveness<R extends pg.QueryResultRow>(lane: keyof LivenessPools, sql: string, params: readonly unknown[]): Promise<R[]> {
    try {
      return await withPooledClient(
        this.liveness[lane],
        async (client) => (await client.query<R>(statement(sql, params))).rows,
        (error) => new NoLivenessConnection(error),
        LIVENESS_CONNECT_WAIT_MS,
      );
    } catch (error) {
      if (!(error instanceof NoLivenessConnection)) throw error;
      return (await this.pool.query<R>(statement(sql, params))).rows;
    }
  }

  /**
   * {@link read} for a read the store admitted while open and runs a turn later (`MergedReads`): a store closed in
   * between still answers it while its pool is open, as it answers a read already in flight.
   */
  async readAdmitted<R extends pg.QueryResultRow>(action: string, sql: string, params: readonly unknown[]): Promise<R[]> {
    const query = this.pool.query<R>(statement(sql, params));
    this.admitted.add(query);
    try {
      return (await query).rows;
    } catch (error) {
      throw toStoreError(error, action);
    } finally {
      this.admitted.delete(query);
    }
  }

  /**
   * Resolves once the reads admitted before close have been sent (they are sent a turn after they were issued) and
   * answered: the store's close waits for this before it ends the pool.
   */
  async admittedReadsSettled(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    await Promise.allSettled([...this.admitted]);
  }

  /** Run `work` in a transaction of its own on one pooled client (rolled back, and the error mapped, when it throws). */
  async inTransaction<T>(action: string, work: (client: pg.PoolClient) => Promise<T>, options: { retryConflicts?: boolean } = {}): Promise<T> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await this.transactionOnce(action, work);
      } catch (error) {
        // With `retryConflicts` (work that may run again: it rewrites what it writes), a deadlock or serialization
        // failure PostgreSQL resolved by rolling this transaction back is run again, as the batch does.
        if (!options.retryConflicts || attempt >= CONFLICT_RETRIES || !isRetryableConflict(error instanceof StoreError ? error.cause : error)) throw error;
      }
    }
  }

  private async transactionOnce<T>(action: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    this.refuseIfClosed(action);
    // withPooledClient listens for the client's 'error' while it is checked out (a lost connection would otherwise
    // be an unhandled event that ends the process) and destroys a broken client instead of pooling it.
    return withPooledClient(
      this.pool,
      async (client, broken) => {
        try {
          await client.query('BEGIN');
          const result = await work(client);
          await client.query('COMMIT');
          return result;
        } catch (error) {
          // A client whose ROLLBACK failed may still be inside the transaction: it is destroyed, not pooled.
          await client
            .query('ROLLBACK')
            .catch((rollbackError: unknown) => broken(rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError))));
          throw toStoreError(error, action);
        }
      },
      (error) => toStoreError(error, action),
    );
  }
}

/** A liveness pool could not open a connection (see `PostgresContext.sendLiveness`). */
class NoLivenessConnection {
  constructor(readonly cause: unknown) {}
}
