import type { CreateAdmission, CreateQuota, QuotaRefusal, TaskAdmission } from '../../core/ports/admission.js';
import { quotaRefusal } from '../../core/store-rules.js';
import type { NewTask } from '../../core/task.js';
import type { BatchTx } from './batch.js';
import type { PostgresContext } from './context.js';
import type { PostgresRows } from './rows.js';
import { SQL } from './sql.js';

/**
 * The admission port on PostgreSQL (see {@link TaskAdmission}): one operation of the write batch, under an advisory
 * lock of the owner key (held to the batch's commit), which serialises the creates of one owner across every
 * instance; a refusal returns at once and holds nothing back. Batches locking several owners in opposite orders may
 * deadlock: the database aborts one and the batcher runs it again.
 */
export class PostgresAdmission implements TaskAdmission {
  constructor(
    private readonly ctx: PostgresContext,
    private readonly rows: PostgresRows,
  ) {}

  admitCreate(task: NewTask, quota: CreateQuota): Promise<CreateAdmission> {
    return this.ctx.batcher.enqueue(async (tx): Promise<CreateAdmission> => {
      const refused = await refusalFor(this.ctx, tx, task, quota);
      if (refused) return { admitted: false, ...refused };
      return { admitted: true, task: await this.rows.insertOne(tx, task) };
    });
  }
}

/**
 * In a batch transaction, under the owner's advisory lock: which quota refuses `task`, or `undefined` after
 * recording its create for the window (the caller inserts the task in the same transaction). After the lock each
 * count sees every create of the owner committed before (READ COMMITTED: a fresh snapshot per statement).
 */
export async function refusalFor(ctx: PostgresContext, tx: BatchTx, task: NewTask, quota: CreateQuota): Promise<QuotaRefusal | undefined> {
  const { ownerKey, createdAt } = task;
  await tx.query(SQL.lockOwner, [ownerKey]);
  await tx.query(SQL.pruneAdmissions, [createdAt - quota.windowMs]);
  const [window] = quota.maxCreates === null ? [] : await tx.query<{ count: number; oldest: string | null }>(SQL.windowAdmissions, [ownerKey]);
  const [active] = quota.maxActive === null ? [] : await tx.query<{ count: number }>(SQL.activeOfOwner, [ownerKey, ctx.clockNow()]);
  const refused = quotaRefusal(quota, createdAt, {
    ...(window ? { window: { count: window.count, oldest: window.oldest === null ? null : Number(window.oldest) } } : {}),
    ...(active ? { active: active.count } : {}),
  });
  if (!refused) await tx.query(SQL.recordAdmission, [task.taskId, ownerKey, createdAt]);
  return refused;
}
