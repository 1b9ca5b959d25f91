import type Database from 'better-sqlite3';

import type { Logger } from '../../core/logger.js';
import type { TaskEvent } from '../../core/store.js';
import { StoreError } from '../../core/store-error.js';
import { SQL } from './sql.js';
import type { WalSync } from './wal-sync.js';

/**
 * One queued write. `run` executes synchronously inside the batch transaction and pushes the events it
 * appended onto `events`; those are published only if the whole batch commits.
 */
type Work<T> = (events: TaskEvent[]) => T;

interface Pending {
  run: Work<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

interface Done {
  op: Pending;
  value: unknown;
}

/** Counters for tests and benchmarks. */
export interface GroupCommitStats {
  /** Write transactions committed (one per batch; migrations not counted). */
  commits: number;
  /** Operations whose result was committed. */
  operations: number;
}

/**
 * Wrap a driver error as the store's {@link StoreError}, keeping the original as `cause`: `unavailable` when
 * another process held the write lock past `busy_timeout` (retryable), `fault` otherwise (`outOfSpace` for
 * `SQLITE_FULL`: a full disk, or the file at its size limit). A {@link StoreError}
 * (e.g. an idempotency conflict) passes through unchanged.
 */
export function storageFault(error: unknown, action: string): StoreError {
  if (error instanceof StoreError) return error;
  const detail = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  const busy = typeof code === 'string' && code.startsWith('SQLITE_BUSY');
  return new StoreError(busy ? 'unavailable' : 'fault', `Task store failed to ${action}: ${detail}`, {
    cause: error,
    requestorMessage: `Task store failed to ${action}`,
    outOfSpace: code === 'SQLITE_FULL',
  });
}

/**
 * Group commit over one better-sqlite3 connection.
 *
 * Writes are queued and run together in ONE `BEGIN IMMEDIATE … COMMIT`, flushed on `setImmediate` (so every
 * write issued in the same turn of the event loop shares a commit) or as soon as `maxBatch` are queued. Each
 * operation runs inside its own SAVEPOINT: when it throws, only its own changes are rolled back and only its
 * promise rejects. Promises settle only after `COMMIT` returned and an fsync of the write-ahead log that started
 * after it ({@link WalSync}: durable, off the event loop), and the committed events are handed to `publish` in
 * commit order before any promise settles.
 *
 * The batch runs synchronously: nothing else on this connection can interleave, and reads issued between
 * batches only ever see committed state.
 */
export class GroupCommitter {
  private queue: Pending[] = [];
  private timer: NodeJS.Immediate | undefined;
  private flushing = false;
  private closed = false;
  private readonly statements;
  readonly stats: GroupCommitStats = { commits: 0, operations: 0 };

  constructor(
    private readonly db: Database.Database,
    private readonly maxBatch: number,
    private readonly publish: (events: readonly TaskEvent[]) => void,
    private readonly logger: Logger,
    private readonly walSync: WalSync,
  ) {
    const prepare = (sql: string): Database.Statement => db.prepare(sql);
    this.statements = {
      begin: prepare(SQL.begin),
      commit: prepare(SQL.commit),
      rollback: prepare(SQL.rollback),
      savepoint: prepare(SQL.savepoint),
      release: prepare(SQL.release),
      rollbackTo: prepare(SQL.rollbackTo),
    };
  }

  /**
   * Queue `run` for the next batch.
   * @returns its result, after the batch committed; rejects with the operation's own error (a
   *   {@link StoreError} as thrown, anything else as `fault`) or with `fault`/`unavailable` when the batch could
   *   not commit.
   */
  enqueue<T>(run: Work<T>): Promise<T> {
    if (this.closed) return Promise.reject(storageFault(new Error('store is closed'), 'write'));
    if (this.walSync.failure) return Promise.reject(this.walSync.failure);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run, resolve: resolve as (value: unknown) => void, reject });
      if (this.queue.length >= this.maxBatch && !this.flushing) this.flush();
      else this.schedule();
    });
  }

  /** Whether a batch is running right now (i.e. the caller is an event listener of this batch). */
  get busy(): boolean {
    return this.flushing;
  }

  /** Run and commit everything queued, synchronously. Used by `close()`; must not be called while {@link busy}. */
  drain(): void {
    while (this.queue.length > 0) this.flush();
  }

  /** Refuse further writes. Call {@link drain} first. */
  close(): void {
    this.closed = true;
    if (this.timer !== undefined) clearImmediate(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.timer === undefined && this.queue.length > 0) this.timer = setImmediate(() => this.flush());
  }

  private flush(): void {
    if (this.timer !== undefined) clearImmediate(this.timer);
    this.timer = undefined;
    const batch = this.queue.splice(0, this.maxBatch);
    if (batch.length > 0) {
      this.flushing = true;
      try {
        this.runBatch(batch);
      } finally {
        this.flushing = false;
      }
    }
    // Writes queued meanwhile (e.g. by an event listener) go into the next batch, after this turn.
    this.schedule();
  }

  /**
   * Run a batch in one transaction. Operations almost never fail, so the batch first runs without per-operation
   * savepoints (two statements fewer per operation); only when one throws is the transaction rolled back and the
   * batch run again with savepoints, so that the failure rejects that operation alone.
   */
  private runBatch(batch: Pending[]): void {
    if (!this.begin(batch)) return;
    const done: Done[] = [];
    const events: TaskEvent[] = [];
    try {
      for (const op of batch) done.push({ op, value: op.run(events) });
    } catch (error) {
      this.rollback();
      if (batch.length === 1) this.rejectAfterRead(batch[0] as Pending, error);
      else this.runBatchIsolated(batch);
      return;
    }
    this.commit(batch, done, events, []);
  }

  /** The batch again, each operation under its own savepoint (after one of them failed). */
  private runBatchIsolated(batch: Pending[]): void {
    const s = this.statements;
    if (!this.begin(batch)) return;
    const done: Done[] = [];
    const events: TaskEvent[] = [];
    const failed: Array<{ op: Pending; error: unknown }> = [];
    try {
      for (const op of batch) {
        s.savepoint.run();
        const opEvents: TaskEvent[] = [];
        try {
          const value = op.run(opEvents);
          s.release.run();
          done.push({ op, value });
          events.push(...opEvents);
        } catch (error) {
          s.rollbackTo.run();
          s.release.run();
          failed.push({ op, error });
        }
      }
    } catch (error) {
      // The savepoint bookkeeping itself failed: nothing of this batch is durable.
      this.rollback();
      this.failAll(batch, error, 'commit');
      return;
    }
    this.commit(batch, done, events, failed);
  }

  /** BEGIN IMMEDIATE; on failure every operation of the batch is rejected. */
  private begin(batch: readonly Pending[]): boolean {
    try {
      this.statements.begin.run();
      return true;
    } catch (error) {
      this.failAll(batch, error, 'begin a write transaction');
      return false;
    }
  }

  /** COMMIT, then publish the events and settle every operation (a failed COMMIT rejects the whole batch). */
  private commit(batch: readonly Pending[], done: readonly Done[], events: readonly TaskEvent[], failed: ReadonlyArray<{ op: Pending; error: unknown }>): void {
    try {
      this.statements.commit.run();
    } catch (error) {
      this.rollback();
      if (done.length > 1) {
        // One operation's pages may be what did not fit (SQLITE_FULL): sharing a commit must not fail the others, which
        // would have committed alone. Each runs again in a transaction of its own (rare: only after a failed COMMIT).
        this.logger.warn(
          { err: storageFault(error, 'commit'), operations: done.length },
          'task store failed to commit a batch; its writes run again one by one',
        );
        for (const { op, error: own } of failed) this.rejectAfterRead(op, own);
        for (const { op } of done) this.runBatch([op]);
        return;
      }
      this.failAll(batch, error, 'commit');
      return;
    }
    this.stats.commits += 1;
    this.stats.operations += done.length;
    const settle = (error?: Error): void => {
      if (error) {
        // The store has stopped (see WalSync): nothing of this batch is acknowledged or published.
        this.logger.error({ err: error, operations: batch.length }, 'task store stopped: a commit could not be made durable');
        for (const op of batch) op.reject(error);
        return;
      }
      this.publish(events);
      for (const { op, value } of done) op.resolve(value);
      for (const { op, error: own } of failed) this.rejectOne(op, own);
    };
    this.walSync.afterCommit(settle);
  }

  /**
   * Reject an operation that failed alone in its batch, once what it read is on disk: its error may tell of a commit
   * (an idempotency key already taken) whose fsync has not returned yet (see `WalSync.afterRead`).
   */
  private rejectAfterRead(op: Pending, error: unknown): void {
    const wait = this.walSync.afterRead();
    if (wait)
      wait.then(
        () => this.rejectOne(op, error),
        (failure: unknown) => op.reject(failure),
      );
    else this.rejectOne(op, error);
  }

  /** Reject one operation that failed on its own (a condition of the port, or a storage fault). */
  private rejectOne(op: Pending, error: unknown): void {
    const fault = storageFault(error, 'write');
    // Logged as the store's error (the driver's as its cause), so a repeated one is coalesced (`coalesceOutageLogs`).
    if (!(error instanceof StoreError)) this.logger.warn({ err: fault }, 'task store write failed');
    op.reject(fault);
  }

  private rollback(): void {
    try {
      if (this.db.inTransaction) this.statements.rollback.run();
    } catch (error) {
      this.logger.error({ err: error }, 'task store rollback failed');
    }
  }

  private failAll(batch: readonly Pending[], error: unknown, action: string): void {
    const fault = storageFault(error, action);
    // The store's error, the driver's as its cause: a full disk fails every batch alike and is coalesced in the log.
    this.logger.error({ err: fault, operations: batch.length }, `task store failed to ${action}`);
    for (const op of batch) op.reject(fault);
  }
}
