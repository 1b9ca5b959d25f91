import type { TaskEvent } from '../../core/ports/feed.js';
import type { TaskLeases } from '../../core/ports/leases.js';
import { inRequestOrder, toLimit } from '../../core/store-rules.js';
import type { TaskRecord } from '../../core/task.js';
import type { SqliteContext } from './context.js';
import type { TaskRow } from './sql.js';

/**
 * The leases port on SQLite (see {@link TaskLeases}): each claim is one `UPDATE … RETURNING` inside the write
 * transaction, so concurrent claimers (in any process) get disjoint sets. A lease is lapsed once
 * `leaseExpiresAt <= now` on the store's clock.
 */
export class SqliteLeases implements TaskLeases {
  constructor(private readonly ctx: SqliteContext) {}

  startAttempt(taskId: string, leaseOwner: string, leaseMs: number): Promise<TaskRecord | undefined> {
    return this.ctx.committer.enqueue((events) => {
      const now = this.ctx.clock.now();
      const row = this.ctx.stmt.startAttempt.get({ taskId, leaseOwner, leaseExpiresAt: now + leaseMs, now }) as TaskRow | undefined;
      if (row === undefined) return undefined;
      this.ctx.append(events, taskId, 'attempt', row.status as TaskRecord['status'], now, { attempt: row.attempt, leaseOwner });
      return this.ctx.codec.toRecord(row);
    });
  }

  /**
   * See {@link TaskLeases.claimRunnable}: the candidates (oldest first), then one `UPDATE … RETURNING` each, in one
   * write transaction, plus the attempt events.
   */
  async claimRunnable(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]> {
    return this.ctx.committer.enqueue((events) => {
      const { stmt, codec } = this.ctx;
      const now = this.ctx.clock.now();
      const candidates = stmt.runnableCandidates.all({ now, limit: toLimit(limit) }) as Array<{ task_id: string }>;
      const claimed: TaskRecord[] = [];
      for (const { task_id: taskId } of candidates) {
        const row = stmt.claimRunnable.get({ taskId, leaseOwner, now, leaseExpiresAt: now + leaseMs }) as TaskRow | undefined;
        if (row === undefined) continue;
        this.ctx.append(events, taskId, 'attempt', 'working', now, { attempt: row.attempt, leaseOwner });
        claimed.push(codec.toRecord(row));
      }
      return claimed;
    });
  }

  /** See {@link TaskLeases.renewLeases}. Only non-terminal tasks; no event (renewals are invisible). */
  async renewLeases(leaseOwner: string, taskIds: readonly string[], leaseMs: number): Promise<string[]> {
    if (taskIds.length === 0) return [];
    const renewed = await this.ctx.committer.enqueue(
      () =>
        this.ctx.stmt.renewLeases.all({ leaseOwner, taskIds: JSON.stringify(taskIds), leaseExpiresAt: this.ctx.clock.now() + leaseMs }) as Array<{
          task_id: string;
        }>,
    );
    return inRequestOrder(taskIds, renewed);
  }

  /**
   * See {@link TaskLeases.claimLapsed}. Skips tasks already past their TTL; appends no event (a claim is followed by
   * `startAttempt`, which does). Result ordered by `seq`.
   */
  async claimLapsed(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]> {
    const rows = await this.ctx.committer.enqueue(() => {
      const now = this.ctx.clock.now();
      return this.ctx.stmt.claimLapsed.all({ leaseOwner, now, leaseExpiresAt: now + leaseMs, limit: toLimit(limit) }) as TaskRow[];
    });
    return rows.map((row) => this.ctx.codec.toRecord(row)).sort((a, b) => a.seq - b.seq);
  }

  /** See {@link TaskLeases.releaseLeases}: lapsed at the store clock's now, one `released` event each. */
  releaseLeases(leaseOwner: string, taskIds: readonly string[]): Promise<string[]> {
    return this.release(leaseOwner, taskIds, false);
  }

  /** See {@link TaskLeases.releaseUnstarted}: not counted, runnable again, one `released` event each. */
  releaseUnstarted(leaseOwner: string, taskIds: readonly string[]): Promise<string[]> {
    return this.release(leaseOwner, taskIds, true);
  }

  private async release(leaseOwner: string, taskIds: readonly string[], unstarted: boolean): Promise<string[]> {
    if (taskIds.length === 0) return [];
    const released = await this.ctx.committer.enqueue((events) => {
      const now = this.ctx.clock.now();
      const params = { leaseOwner, taskIds: JSON.stringify(taskIds) };
      const rows = (unstarted ? this.ctx.stmt.releaseUnstarted.all(params) : this.ctx.stmt.releaseLeases.all({ ...params, now })) as Array<{
        task_id: string;
        status?: TaskEvent['status'];
      }>;
      // RETURNING has no promised order: the events follow the caller's order, on both backends.
      const ordered = inRequestOrder(taskIds, rows);
      const statuses = new Map(rows.map((row) => [row.task_id, row.status ?? 'working']));
      for (const taskId of ordered)
        this.ctx.append(events, taskId, 'released', statuses.get(taskId) ?? 'working', now, unstarted ? { leaseOwner, unstarted } : { leaseOwner });
      return ordered;
    });
    return released;
  }

  /** See {@link TaskLeases.releaseLeasesOf}: lapsed at the store clock's now, one `released` event each. */
  async releaseLeasesOf(leaseOwner: string): Promise<string[]> {
    return this.ctx.committer.enqueue((events) => releaseAllOf(this.ctx, events, leaseOwner, this.ctx.clock.now()));
  }
}

/**
 * Inside a write transaction: let every lease of `leaseOwner` on a `working` task, or on an `input_required` one whose
 * run waited in place, lapse at `now`, one `released` event each (with the task's status).
 */
export function releaseAllOf(ctx: SqliteContext, events: TaskEvent[], leaseOwner: string, now: number): string[] {
  const rows = ctx.stmt.releaseLeasesOf.all({ leaseOwner, now }) as Array<{ task_id: string; status: TaskEvent['status'] }>;
  for (const row of rows) ctx.append(events, row.task_id, 'released', row.status, now, { leaseOwner });
  return rows.map((row) => row.task_id);
}
