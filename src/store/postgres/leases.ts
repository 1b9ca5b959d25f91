import type { TaskLeases } from '../../core/ports/leases.js';
import { inRequestOrder, toLimit } from '../../core/store-rules.js';
import type { TaskRecord } from '../../core/task.js';
import type { TaskRow } from '../codec.js';
import type { BatchTx } from './batch.js';
import type { PostgresContext } from './context.js';
import { SQL } from './sql.js';

/**
 * The leases port on PostgreSQL (see {@link TaskLeases}): operations of the write batch, claims with
 * `FOR UPDATE SKIP LOCKED`, every lease judged on the store's clock (the database's unless opened with one).
 */
export class PostgresLeases implements TaskLeases {
  constructor(private readonly ctx: PostgresContext) {}

  startAttempt(taskId: string, leaseOwner: string, leaseMs: number): Promise<TaskRecord | undefined> {
    return this.ctx.batcher.enqueue(async (tx) => {
      const [row] = await tx.query<TaskRow & { store_now: number }>(SQL.startAttempt, [taskId, leaseOwner, this.ctx.clockNow(), leaseMs]);
      if (row === undefined) return undefined;
      tx.append(taskId, 'attempt', row.status as TaskRecord['status'], row.store_now, { attempt: row.attempt, leaseOwner });
      return this.ctx.codec.toRecord(row);
    });
  }

  /** See {@link TaskLeases.renewLeases}. Only non-terminal tasks; no event (renewals are invisible). */
  async renewLeases(leaseOwner: string, taskIds: readonly string[], leaseMs: number): Promise<string[]> {
    if (taskIds.length === 0) return [];
    const rows = await this.ctx.batcher.enqueue((tx) => tx.query<{ task_id: string }>(SQL.renewLeases, [leaseOwner, taskIds, this.ctx.clockNow(), leaseMs]));
    return inRequestOrder(taskIds, rows);
  }

  /** See {@link TaskLeases.claimRunnable}: `FOR UPDATE SKIP LOCKED`, one attempt event each; ordered by `seq`. */
  async claimRunnable(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]> {
    return this.ctx.batcher.enqueue(async (tx) => {
      const rows = (await tx.query<TaskRow & { store_now: number }>(SQL.claimRunnable, [leaseOwner, leaseMs, this.ctx.clockNow(), toLimit(limit)])).sort(
        (a, b) => a.seq - b.seq,
      );
      for (const row of rows) tx.append(row.task_id, 'attempt', 'working', row.store_now, { attempt: row.attempt, leaseOwner });
      return rows.map((row) => this.ctx.codec.toRecord(row));
    });
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
      const released = await tx.query<{ task_id: string; store_now: number }>(unstarted ? SQL.releaseUnstarted : SQL.releaseLeases, [
        leaseOwner,
        taskIds,
        this.ctx.clockNow(),
      ]);
      for (const row of released) tx.append(row.task_id, 'released', 'working', row.store_now, unstarted ? { leaseOwner, unstarted } : { leaseOwner });
      return released;
    });
    return inRequestOrder(taskIds, rows);
  }

  /** See {@link TaskLeases.releaseLeasesOf}: lapsed on the database clock, one `released` event each. */
  async releaseLeasesOf(leaseOwner: string): Promise<string[]> {
    return this.ctx.batcher.enqueue((tx) => releaseAllOf(this.ctx, tx, leaseOwner));
  }
}

/** In a batch transaction: let every lease of `leaseOwner` on a `working` task lapse now, one `released` event each. */
export async function releaseAllOf(ctx: PostgresContext, tx: BatchTx, leaseOwner: string): Promise<string[]> {
  const rows = await tx.query<{ task_id: string; store_now: number }>(SQL.releaseLeasesOf, [leaseOwner, ctx.clockNow()]);
  for (const row of rows) tx.append(row.task_id, 'released', 'working', row.store_now, { leaseOwner });
  return rows.map((row) => row.task_id);
}
