import type { TaskEvent } from '../../core/ports/feed.js';
import type { TaskLeases } from '../../core/ports/leases.js';
import { inRequestOrder, toLimit } from '../../core/store-rules.js';
import type { TaskRecord } from '../../core/task.js';
import type { TaskRow } from '../codec.js';
import type { BatchTx, MergedWork, Query, Settled } from './batch.js';
import type { PostgresContext } from './context.js';
import { SQL } from './sql.js';

/** The parameters of one claim (see `SQL.claimRunnable`): lease owner, lease ms, the store's now or NULL, limit. */
type ClaimParams = [leaseOwner: string, leaseMs: number, now: number | null, limit: number];

/**
 * The leases port on PostgreSQL (see {@link TaskLeases}): operations of the write batch, claims with
 * `FOR UPDATE SKIP LOCKED`, every lease judged on the store's clock (the database's unless opened with one).
 */
export class PostgresLeases implements TaskLeases {
  private readonly claims: MergedWork<ClaimParams, TaskRecord[]> = {
    run: (tx, items) => this.runClaims(tx, items),
    runAlone: (query, items) => this.claimAlone(query, items),
  };

  constructor(private readonly ctx: PostgresContext) {}

  startAttempt(taskId: string, leaseOwner: string, leaseMs: number): Promise<TaskRecord | undefined> {
    return this.ctx.batcher.enqueue(async (tx) => {
      const [row] = await tx.query<TaskRow & { store_now: number }>(SQL.startAttempt, [taskId, leaseOwner, this.ctx.clockNow(), leaseMs]);
      if (row === undefined) return undefined;
      tx.append(taskId, 'attempt', row.status as TaskRecord['status'], row.store_now, { attempt: row.attempt, leaseOwner });
      return this.ctx.codec.toRecord(row);
    });
  }

  /**
   * See {@link TaskLeases.renewLeases}. Only non-terminal tasks; no event (renewals are invisible). One statement
   * outside the write batch (see `writeOutsideBatch`): renewals do not queue behind this process's other writes (they
   * wait only for a row another transaction has locked).
   */
  async renewLeases(leaseOwner: string, taskIds: readonly string[], leaseMs: number): Promise<string[]> {
    if (taskIds.length === 0) return [];
    const rows = await this.ctx.writeOutsideBatch<{ task_id: string }>('renewal', 'renew leases', SQL.renewLeases, [
      leaseOwner,
      taskIds,
      this.ctx.clockNow(),
      leaseMs,
    ]);
    return inRequestOrder(taskIds, rows);
  }

  /**
   * See {@link TaskLeases.claimRunnable}: `FOR UPDATE SKIP LOCKED`, one attempt event each; ordered by `seq`. A claim
   * alone in its batch (a worker woken by a create) is one autocommit statement with its events.
   */
  async claimRunnable(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]> {
    return this.ctx.batcher.enqueueMerged(this.claims, [leaseOwner, leaseMs, this.ctx.clockNow(), toLimit(limit)]);
  }

  /** Claims of one batch, in order (each one statement; a failure fails the batch, as any claim did). */
  private async runClaims(tx: BatchTx, items: readonly ClaimParams[]): Promise<Array<Settled<TaskRecord[]>>> {
    const results: Array<Settled<TaskRecord[]>> = [];
    for (const params of items) {
      const rows = (await tx.query<TaskRow & { store_now: number }>(SQL.claimRunnable, params)).sort((a, b) => a.seq - b.seq);
      const leaseOwner = params[0];
      for (const row of rows) tx.append(row.task_id, 'attempt', 'working', row.store_now, { attempt: row.attempt, leaseOwner });
      results.push({ ok: true, value: rows.map((row) => this.ctx.codec.toRecord(row)) });
    }
    return results;
  }

  /**
   * The claims of one batch as one autocommit statement with their events (see `SQL.claimRunnableAlone`), when they
   * are one worker's (same lease holder, lease length and clock): the statement claims the sum of their limits, and
   * the rows, oldest first, are handed out in queue order — what the claims would get run one after another in one
   * transaction, without `BEGIN`, a statement each, the feed statement and `COMMIT` (issue 25: with one write batch
   * in flight, a worker's claims for slots freed meanwhile meet in one batch). Claims of different holders keep the
   * transaction.
   */
  private async claimAlone(query: Query, items: readonly ClaimParams[]): Promise<{ results: Array<Settled<TaskRecord[]>>; events: TaskEvent[] } | undefined> {
    const [first] = items;
    if (first === undefined || items.some((item) => item[0] !== first[0] || item[1] !== first[1] || item[2] !== first[2])) return undefined;
    const [leaseOwner, leaseMs, now] = first;
    const total = toLimit(items.reduce((sum, item) => sum + item[3], 0));
    const rows = (await query<TaskRow & { store_now: number; event_seq: number }>(SQL.claimRunnableAlone, [leaseOwner, leaseMs, now, total])).sort(
      (a, b) => a.seq - b.seq,
    );
    const events: TaskEvent[] = rows.map((row) => ({
      seq: Number(row.event_seq),
      taskId: row.task_id,
      kind: 'attempt',
      status: 'working',
      at: Number(row.store_now),
      payload: { attempt: row.attempt, leaseOwner },
    }));
    let next = 0;
    const results = items.map((item): Settled<TaskRecord[]> => {
      const share = rows.slice(next, next + item[3]);
      next += share.length;
      // The statement has committed: nothing may be thrown from here on — a throw means "nothing written", and the
      // claims would run again. (Arguments that cannot be decoded do not throw: see `unreadableArguments`.)
      try {
        return { ok: true, value: share.map((row) => this.ctx.codec.toRecord(row)) };
      } catch (error) {
        return { ok: false, error };
      }
    });
    return { results, events };
  }

  /** See {@link TaskLeases.claimLapsed}: `FOR UPDATE SKIP LOCKED`, no event; result ordered by `seq`. */
  async claimLapsed(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]> {
    const rows = await this.ctx.batcher.enqueue((tx) => tx.query<TaskRow>(SQL.claimLapsed, [leaseOwner, leaseMs, this.ctx.clockNow(), toLimit(limit)]));
    return rows.map((row) => this.ctx.codec.toRecord(row)).sort((a, b) => a.seq - b.seq);
  }

  /** See {@link TaskLeases.releaseLeases}: lapsed on the store's clock, one `released` event each. */
  releaseLeases(leaseOwner: string, taskIds: readonly string[]): Promise<string[]> {
    return this.release(leaseOwner, taskIds, false);
  }

  /** See {@link TaskLeases.releaseUnstarted}: not counted, runnable again, one `released` event each. */
  releaseUnstarted(leaseOwner: string, taskIds: readonly string[]): Promise<string[]> {
    return this.release(leaseOwner, taskIds, true);
  }

  private async release(leaseOwner: string, taskIds: readonly string[], unstarted: boolean): Promise<string[]> {
    if (taskIds.length === 0) return [];
    const rows = await this.ctx.batcher.enqueue(async (tx) => {
      const released = await tx.query<{ task_id: string; status?: TaskEvent['status']; store_now: number }>(
        unstarted ? SQL.releaseUnstarted : SQL.releaseLeases,
        [leaseOwner, taskIds, this.ctx.clockNow()],
      );
      // RETURNING has no order: the events follow the caller's order, as on SQLite, so readers of the feed see one order.
      const ordered = inRequestOrder(taskIds, released);
      const at = released[0]?.store_now ?? 0;
      const statuses = new Map(released.map((row) => [row.task_id, row.status ?? 'working']));
      for (const taskId of ordered)
        tx.append(taskId, 'released', statuses.get(taskId) ?? 'working', at, unstarted ? { leaseOwner, unstarted } : { leaseOwner });
      return ordered;
    });
    return rows;
  }

  /** See {@link TaskLeases.releaseLeasesOf}: lapsed on the database clock, one `released` event each. */
  async releaseLeasesOf(leaseOwner: string): Promise<string[]> {
    return this.ctx.batcher.enqueue((tx) => releaseAllOf(this.ctx, tx, leaseOwner));
  }
}

/**
 * In a batch transaction: let every lease of `leaseOwner` on a `working` task, or on an `input_required` one whose run
 * waited in place, lapse now, one `released` event each (with the task's status).
 */
export async function releaseAllOf(ctx: PostgresContext, tx: BatchTx, leaseOwner: string): Promise<string[]> {
  const rows = await tx.query<{ task_id: string; status: TaskEvent['status']; store_now: number }>(SQL.releaseLeasesOf, [leaseOwner, ctx.clockNow()]);
  for (const row of rows) tx.append(row.task_id, 'released', row.status, row.store_now, { leaseOwner });
  return rows.map((row) => row.task_id);
}
