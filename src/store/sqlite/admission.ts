import type { CreateAdmission, CreateQuota, QuotaRefusal, TaskAdmission } from '../../core/ports/admission.js';
import { quotaRefusal } from '../../core/store-rules.js';
import type { NewTask } from '../../core/task.js';
import type { SqliteContext } from './context.js';
import { insertCreated } from './rows.js';

/** The admission port on SQLite (see {@link TaskAdmission}): one write transaction of the group commit (the write lock). */
export class SqliteAdmission implements TaskAdmission {
  constructor(private readonly ctx: SqliteContext) {}

  admitCreate(task: NewTask, quota: CreateQuota): Promise<CreateAdmission> {
    return this.ctx.committer.enqueue((events): CreateAdmission => {
      const refused = refusalFor(this.ctx, task, quota);
      if (refused) return { admitted: false, ...refused };
      return { admitted: true, task: insertCreated(this.ctx, events, task) };
    });
  }
}

/**
 * Under the write lock: which quota refuses `task` (nothing written), or `undefined` after recording its create
 * for the window (the caller inserts the task in the same transaction).
 */
export function refusalFor(ctx: SqliteContext, task: NewTask, quota: CreateQuota): QuotaRefusal | undefined {
  const { ownerKey, createdAt } = task;
  const { stmt } = ctx;
  stmt.pruneAdmissions.run({ cutoff: createdAt - quota.windowMs });
  const refused = quotaRefusal(quota, createdAt, {
    ...(quota.maxCreates === null ? {} : { window: stmt.windowAdmissions.get({ ownerKey }) as { count: number; oldest: number | null } }),
    ...(quota.maxActive === null ? {} : { active: (stmt.activeOfOwner.get({ ownerKey, now: ctx.clock.now() }) as { count: number }).count }),
  });
  if (!refused) stmt.recordAdmission.run({ taskId: task.taskId, ownerKey, now: createdAt });
  return refused;
}
