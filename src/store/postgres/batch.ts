import type pg from 'pg';

import type { Logger } from '../../core/logger.js';
import type { TaskEvent } from '../../core/store.js';
import { StoreError } from '../../core/store-error.js';
import type { JsonObject } from '../../core/task.js';
import { CONFLICT_RETRIES, isRetryableConflict, isUnavailable, sqlState, toStoreError } from './connection.js';
import { statement } from './prepared.js';
import { SQL } from './sql.js';

/** An event an operation appended; its `seq` is assigned by the feed statement at the end of the batch. */
export type StagedEvent = Omit<TaskEvent, 'seq'>;

/** Run one statement on the batch's connection. */
export type Query = <R extends pg.QueryResultRow>(sql: string, params?: readonly unknown[]) => Promise<R[]>;

/** What an operation sees of the batch transaction it runs in. */
export interface BatchTx {
  /** Run one statement in the batch transaction. */
  query: Query;
  /** Append an event; it is written (with its seq) and published only if the whole batch commits. */
  append(taskId: string, kind: TaskEvent['kind'], status: TaskEvent['status'], at: number, payload: JsonObject | null): void;
}

/** One operation: runs inside the batch transaction; a throw rejects (only) this operation. */
export type Work<T> = (tx: BatchTx) => Promise<T>;

/** The outcome of one item of a {@link MergedWork}. */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * Operations of one kind that run together as one set-based step (e.g. every create of a batch as one multi-row
 * INSERT). `run` gets the items in queue order and settles each. In the first run of a batch (`isolated` false) it
 * may simply throw when the step fails; the batch is then run again with `isolated` true, where it must settle
 * each item on its own (e.g. one savepoint per item) and throw only for failures of the transaction itself.
 */
export interface MergedWork<I, T> {
  run(tx: BatchTx, items: readonly I[], isolated: boolean): Promise<Array<Settled<T>>>;
  /**
   * Optional: the whole batch when it holds nothing but these items, as ONE autocommit statement that also takes
   * its seqs from the feed counter and writes its events (one round trip instead of BEGIN … COMMIT, and the counter's
   * row lock held only while the server commits, not across a client round trip). Returns the results and the
   * committed events, or `undefined` without writing anything when it has no such form for these items; a throw
   * means nothing was written, and the batch runs the normal way.
   */
  runAlone?(query: Query, items: readonly I[]): Promise<{ results: Array<Settled<T>>; events: TaskEvent[] } | undefined>;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** A batch entry: a single operation, or the items of one merged step. */
type Unit = { kind: 'single'; work: Work<unknown>; op: Pending } | { kind: 'merged'; work: MergedWork<unknown, unknown>; items: unknown[]; ops: Pending[] };

interface Queued {
  work: Work<unknown> | MergedWork<unknown, unknown>;
  merged: boolean;
  item?: unknown;
  op: Pending;
}

/** Counters for tests and benchmarks. */
export interface PostgresBatchStats {
  /** Write transactions committed. */
  commits: number;
  /** Operations whose result was committed. */
  operations: number;
  /** Batches run again after a deadlock or serialization failure. */
  retries: number;
}

/** Outcome of one run of a batch. */
interface RunResult {
  settled: Array<{ op: Pending; result: Settled<unknown> }>;
  /** The events committed, with their seqs (ascending). */
  events: TaskEvent[];
  /** False when the batch's only operation failed and the transaction was rolled back. */
  committed: boolean;
}

/** A running batch, as the publication order sees it. */
interface Running {
  readonly id: number;
}

/** A commit whose events wait for publication. */
interface Committed {
  /** Consecutive seqs, ascending. */
  events: TaskEvent[];
  settle(): void;
  /** Batches that had a statement in flight when this commit was answered: one of them may hold smaller seqs. */
  waitFor: Set<Running>;
}

/**
 * Group commit on PostgreSQL. Writes are queued and run together in one transaction per batch: a batch starts on
 * the next turn of the event loop (so writes issued together share it) while fewer than `maxInFlight` batches run;
 * writes issued meanwhile wait for the next one. Operations of a {@link MergedWork} kind run as one set-based step;
 * the batch's leading kinds that have a one-statement form run as one autocommit statement each, the rest in one
 * transaction.
 *
 * Failure isolation as in the SQLite store: a batch first runs without savepoints; when one operation throws, the
 * transaction is rolled back and run again with a savepoint per operation, so the failure rejects that operation
 * alone. A deadlock or serialization failure reruns the whole batch (at most 3 times). Connection loss or a
 * timeout rejects every operation of the batch as `unavailable`.
 *
 * The event feed: the batch's events are written by ONE final statement that increments the single-row feed
 * counter and inserts the events with the seqs it handed out. The counter's row lock is held until COMMIT, so
 * concurrent batches (of any process) obtain seqs strictly in commit order, gap-free. Batches that append no event
 * never touch the counter (nor does a one-statement form without events). Locally, events are published to
 * `publish` in seq order — a commit waits for the other batches that had a statement in flight when it was
 * answered, the only ones that can hold smaller seqs — and before the promises of its operations settle.
 */
export class PostgresBatcher {
  private queue: Queued[] = [];
  private readonly running = new Set<Running>();
  /** Running batches with a statement (or their transaction) in flight: the only ones that can commit smaller seqs. */
  private readonly busy = new Set<Running>();
  private nextId = 1;
  private scheduled = false;
  private closed = false;
  private idle: Array<() => void> = [];
  private readonly unpublished: Committed[] = [];
  readonly stats: PostgresBatchStats = { commits: 0, operations: 0, retries: 0 };

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: { maxBatch: number; maxInFlight: number },
    private readonly publish: (events: readonly TaskEvent[]) => void,
    private readonly logger: Logger,
  ) {}

  /** Queue one operation for the next batch; resolves after that batch committed. */
  enqueue<T>(work: Work<T>): Promise<T> {
    return this.push(work as Work<unknown>, false, undefined) as Promise<T>;
  }

  /** Queue one item of a merged step for the next batch; resolves after that batch committed. */
  enqueueMerged<I, T>(work: MergedWork<I, T>, item: I): Promise<T> {
    return this.push(work as MergedWork<unknown, unknown>, true, item) as Promise<T>;
  }

  /** Wait until every queued and running batch settled. */
  drain(): Promise<void> {
    if (this.queue.length === 0 && this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Refuse further writes (call {@link drain} first). */
  close(): void {
    this.closed = true;
  }

  private push(work: Work<unknown> | MergedWork<unknown, unknown>, merged: boolean, item: unknown): Promise<unknown> {
    if (this.closed)
      return Promise.reject(new StoreError('fault', 'Task store failed to write: store is closed', { requestorMessage: 'Task store failed to write' }));
    return new Promise((resolve, reject) => {
      this.queue.push({ work, merged, item, op: { resolve, reject } });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.queue.length === 0 || this.running.size >= this.options.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.queue.length > 0 && this.running.size < this.options.maxInFlight) {
        const batch: Running = { id: this.nextId++ };
        this.running.add(batch);
        void this.runBatch(batch, toUnits(this.queue.splice(0, this.options.maxBatch))).finally(() => {
          this.running.delete(batch);
          this.answered(batch);
          this.schedule();
          if (this.queue.length === 0 && this.running.size === 0) for (const resolve of this.idle.splice(0)) resolve();
        });
      }
    });
  }

  private async runBatch(batch: Running, units: Unit[]): Promise<void> {
    const ops = opsOf(units);
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      this.failAll(ops, error, 'connect');
      return;
    }
    let broken: Error | undefined;
    // A checked-out client has no pool listener: without this, a connection lost mid-batch (server shutdown) would
    // be an unhandled 'error' event and end the process. The query in flight rejects on its own.
    const onConnectionError = (error: Error): void => {
      broken = error;
    };
    client.on('error', onConnectionError);
    try {
      const rest = await this.runAlone(batch, client, units);
      if ('error' in rest) {
        broken = rest.error instanceof Error ? rest.error : undefined;
        this.failAll(opsOf(rest.units), rest.error, 'write');
        return;
      }
      if (rest.units.length === 0) return;
      this.busy.add(batch);
      try {
        for (let attempt = 0; ; attempt += 1) {
          try {
            const run = ((await this.runOnce(client, rest.units, false)) ?? (await this.runOnce(client, rest.units, true))) as RunResult;
            this.committed(batch, run);
            return;
          } catch (error) {
            await rollback(client);
            if (isRetryableConflict(error) && attempt < CONFLICT_RETRIES) {
              this.stats.retries += 1;
              continue;
            }
            if (isUnavailable(error) && error instanceof Error) broken = error;
            this.failAll(opsOf(rest.units), error, 'write');
            return;
          }
        }
      } finally {
        this.answered(batch);
      }
    } finally {
      client.removeListener('error', onConnectionError);
      // A connection that was lost or timed out is destroyed rather than handed to the next caller.
      client.release(broken);
    }
  }

  /**
   * Run the batch's leading units that have a one-statement form ({@link MergedWork.runAlone}) as one autocommit
   * statement EACH, in queue order, each committed (published, settled) as it returns: one statement per unit instead
   * of `BEGIN`, a statement per unit, the feed statement and `COMMIT` (issue 25: a worker's batch of a run completing
   * and the claim of the next run was five statements, now two; an API's create and another call's audit entry,
   * likewise). The units are independent operations that share a batch only to share a commit, so committing them
   * one by one changes no outcome; queue order is kept, so the units from the first one without such a form on
   * (`units`) run together in one transaction.
   * @returns the units left; with `error`, the connection failed at the first of them (nothing of them was written).
   */
  private async runAlone(batch: Running, client: pg.PoolClient, units: readonly Unit[]): Promise<{ units: Unit[] } | { units: Unit[]; error: unknown }> {
    for (const [i, unit] of units.entries()) {
      if (unit.kind !== 'merged' || !unit.work.runAlone) return { units: units.slice(i) };
      this.busy.add(batch);
      let alone: Awaited<ReturnType<NonNullable<MergedWork<unknown, unknown>['runAlone']>>>;
      try {
        alone = await unit.work.runAlone(queryOf(client), unit.items);
      } catch (error) {
        this.answered(batch);
        // Unavailable: nothing of this unit was written, and the connection is gone. Else the transaction isolates it.
        return isUnavailable(error) ? { units: units.slice(i), error } : { units: units.slice(i) };
      }
      if (alone) {
        const { results, events } = alone;
        this.committed(batch, {
          settled: unit.ops.map((op, k) => ({ op, result: results[k] ?? { ok: false, error: new Error('merged step settled no result') } })),
          events,
          committed: true,
        });
      }
      // Only after its commit is queued: commits waiting for this batch may hold larger seqs than its own.
      this.answered(batch);
      if (!alone) return { units: units.slice(i) };
    }
    return { units: [] };
  }

  /**
   * Run the batch once in a transaction and commit it. Without `isolated`, the first failing operation makes the
   * run return `undefined` (after ROLLBACK) so the caller runs it again isolated; a single operation alone in its
   * batch is settled right away instead. Throws for failures of the transaction itself (connection, timeout,
   * deadlock, COMMIT).
   */
  private async runOnce(client: pg.PoolClient, units: readonly Unit[], isolated: boolean): Promise<RunResult | undefined> {
    await client.query(SQL.begin);
    const staged: StagedEvent[] = [];
    const settled: RunResult['settled'] = [];
    for (const unit of units) {
      const unitEvents: StagedEvent[] = [];
      const tx: BatchTx = {
        query: queryOf(client),
        append: (taskId, kind, status, at, payload) => {
          unitEvents.push({ taskId, kind, status, at, payload });
        },
      };
      if (isolated) await client.query(SQL.savepoint);
      try {
        if (unit.kind === 'single') {
          settled.push({ op: unit.op, result: { ok: true, value: await unit.work(tx) } });
        } else {
          const results = await unit.work.run(tx, unit.items, isolated);
          unit.ops.forEach((op, i) => settled.push({ op, result: results[i] ?? { ok: false, error: new Error('merged step settled no result') } }));
        }
        if (isolated) await client.query(SQL.release);
        staged.push(...unitEvents);
      } catch (error) {
        if (isTransactionLevel(error)) throw error;
        const failed = (unit.kind === 'single' ? [unit.op] : unit.ops).map((op) => ({ op, result: { ok: false as const, error } }));
        if (!isolated) {
          await rollback(client);
          return units.length === 1 && unit.kind === 'single' ? { settled: failed, events: [], committed: false } : undefined;
        }
        await client.query(SQL.rollbackTo);
        await client.query(SQL.release);
        settled.push(...failed);
      }
    }
    const events = await appendEvents(client, staged);
    await client.query(SQL.commit);
    return { settled, events, committed: true };
  }

  /**
   * One commit of `batch` (a one-statement unit, or its transaction): its events wait for publication until every
   * OTHER batch that had a statement in flight when this commit was answered has had it answered — only such a
   * statement can have committed smaller seqs (one sent later commits after this one, the feed counter being one
   * row) — then are published in seq order, and only then are its operations settled.
   */
  private committed(batch: Running, run: RunResult): void {
    if (run.committed) {
      this.stats.commits += 1;
      this.stats.operations += run.settled.filter((s) => s.result.ok).length;
    }
    const settle = (): void => {
      for (const { op, result } of run.settled) {
        if (result.ok) op.resolve(result.value);
        else op.reject(this.rejection(result.error));
      }
    };
    if (run.events.length === 0) {
      settle();
      return;
    }
    const waitFor = new Set([...this.busy].filter((other) => other !== batch));
    this.unpublished.push({ events: run.events, settle, waitFor });
    this.unpublished.sort((a, b) => (a.events[0] as TaskEvent).seq - (b.events[0] as TaskEvent).seq);
    this.publishReady();
  }

  /** `batch` has no statement in flight any more (its last one was answered): commits waiting for it stop waiting. */
  private answered(batch: Running): void {
    this.busy.delete(batch);
    for (const entry of this.unpublished) entry.waitFor.delete(batch);
    this.publishReady();
  }

  /**
   * Publish the committed entries in seq order, from the smallest on, as long as each waits for nothing: an entry
   * that still waits holds back the larger seqs behind it (each entry's seqs are consecutive, so its first orders it).
   */
  private publishReady(): void {
    while (this.unpublished.length > 0 && (this.unpublished[0] as Committed).waitFor.size === 0) {
      const entry = this.unpublished.shift() as Committed;
      this.publish(entry.events);
      entry.settle();
    }
  }

  private rejection(error: unknown): StoreError {
    if (!(error instanceof StoreError)) this.logger.warn({ err: error }, 'task store write failed');
    return toStoreError(error, 'write');
  }

  private failAll(ops: readonly Pending[], error: unknown, action: string): void {
    if (ops.length === 0) return;
    // The store's error (its cause the driver's), so that an outage's lines are recognised and coalesced.
    const fault = toStoreError(error, action);
    this.logger.error({ err: fault, operations: ops.length }, `task store failed to ${action}`);
    for (const op of ops) op.reject(fault);
  }
}

/**
 * The final statement of a batch transaction: take `staged.length` seqs from the feed counter and insert the events
 * with them (`seq = base + ordinality`, so ascending seqs are the staged events in order).
 */
async function appendEvents(client: pg.PoolClient, staged: readonly StagedEvent[]): Promise<TaskEvent[]> {
  if (staged.length === 0) return [];
  const { rows } = await client.query<{ seq: number }>(
    statement(SQL.appendEvents, [
      staged.length,
      staged.map((e) => e.taskId),
      staged.map((e) => e.kind),
      staged.map((e) => e.status),
      staged.map((e) => e.at),
      staged.map((e) => (e.payload === null ? null : JSON.stringify(e.payload))),
    ]),
  );
  const seqs = rows.map((row) => row.seq).sort((a, b) => a - b);
  return staged.map((event, i) => ({ seq: seqs[i] as number, ...event }));
}

/**
 * The isolated run of a merged step (see {@link MergedWork.run}): `run` for each item under its own savepoint, so a
 * statement that fails rejects that item alone (its savepoint rolled back); an error that is not the database's (no
 * SQLSTATE) fails the whole batch.
 */
export async function eachUnderSavepoint<I, T>(query: Query, items: readonly I[], run: (item: I) => Promise<T>): Promise<Array<Settled<T>>> {
  const results: Array<Settled<T>> = [];
  for (const item of items) {
    await query(SQL.itemSavepoint);
    try {
      const value = await run(item);
      await query(SQL.itemRelease);
      results.push({ ok: true, value });
    } catch (error) {
      await query(SQL.itemRollbackTo);
      await query(SQL.itemRelease);
      if (sqlState(error) === undefined) throw error;
      results.push({ ok: false, error });
    }
  }
  return results;
}

/** The pending operations of `units`, in order. */
function opsOf(units: readonly Unit[]): Pending[] {
  return units.flatMap((unit) => (unit.kind === 'single' ? [unit.op] : unit.ops));
}

/**
 * Group queued entries into units: single operations in order; the items of a merged kind join that kind's unit at
 * the position of its first item, but never across a single operation queued between them (a statusMessage write
 * issued before a completion of the same task must not be applied after it: review 37; SQLite keeps queue order).
 */
function toUnits(batch: readonly Queued[]): Unit[] {
  const units: Unit[] = [];
  const mergedUnits = new Map<MergedWork<unknown, unknown>, Extract<Unit, { kind: 'merged' }>>();
  for (const entry of batch) {
    if (!entry.merged) {
      units.push({ kind: 'single', work: entry.work as Work<unknown>, op: entry.op });
      mergedUnits.clear();
      continue;
    }
    const work = entry.work as MergedWork<unknown, unknown>;
    let unit = mergedUnits.get(work);
    if (!unit) {
      unit = { kind: 'merged', work, items: [], ops: [] };
      mergedUnits.set(work, unit);
      units.push(unit);
    }
    unit.items.push(entry.item);
    unit.ops.push(entry.op);
  }
  return units;
}

function queryOf(client: pg.PoolClient): Query {
  return async <R extends pg.QueryResultRow>(sql: string, params?: readonly unknown[]) => (await client.query<R>(statement(sql, params))).rows;
}

/**
 * Errors that concern the whole transaction, not one operation: a deadlock or serialization failure (the batch is
 * run again), or a lost or timed-out connection (the batch fails as `unavailable`).
 */
function isTransactionLevel(error: unknown): boolean {
  return isRetryableConflict(error) || isUnavailable(error);
}

async function rollback(client: pg.PoolClient): Promise<void> {
  try {
    await client.query(SQL.rollback);
  } catch {
    // The connection is gone; the server rolled back on its own.
  }
}
