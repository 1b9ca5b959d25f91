import type { Clock } from '../core/clock.js';
import { taskNotFound } from '../core/errors.js';
import type { AuditEntry } from '../core/ledger.js';
import type { Logger } from '../core/logger.js';
import type { TaskStore } from '../core/store.js';
import type { TaskRecord } from '../core/task.js';
import { appendAudit, auditEntriesOf, taskCallEntry } from '../ledger/audit.js';
import type { TaskActor } from './access.js';
import { admitTask, runHooked, type TaskOperation, type TaskOperationContext, type TaskServiceHook } from './hooks.js';
import type { TaskReads } from './task-reads.js';

/**
 * What an operation inside the door may do with its own audit entry: a `callTool` that creates a task writes its
 * `call` entry with the task ({@link carried}), and the door then does not append it again.
 */
export interface OperationAudit {
  /**
   * The `call` entry of the task `taskId` this `callTool` is about to create (`outcome` "task working"), for the store
   * to write in the create's own statement (`NewTask.audit`); `undefined` for any other operation. The door skips
   * that entry after the operation when the operation answers with that task; an answer that is not that task (a
   * replayed key's task, a refusal) is audited as before. Ask only for a create whose answer is the task itself.
   */
  carried(taskId: string): AuditEntry | undefined;
}

/** The operations that change something: each leaves an audit entry. */
const AUDITED: ReadonlySet<TaskOperation> = new Set(['callTool', 'cancel', 'answerInput']);

/**
 * The one door every operation of the three audiences (tasks/*, tools/call, viewer) passes through: the hooks
 * ({@link TaskServiceHook}: scope re-checks, metrics, tracing) around it, first hook outermost, and the audit trail
 * (issue 12) of every change asked for — after it happened, or when it was refused. Shared by the audience classes
 * of `service/services.ts`, so a hook sees each operation once, whichever audience it came through.
 */
export class ServiceDoor {
  constructor(
    private readonly hooks: readonly TaskServiceHook[],
    private readonly store: TaskStore,
    private readonly reads: TaskReads,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** Run `operation` inside the hooks, audited when it changes something (`callTool`, `cancel`, `answerInput`). */
  run<T>(context: TaskOperationContext, operation: (audit: OperationAudit) => Promise<T>): Promise<T> {
    return runHooked(this.hooks, context, async () => {
      if (!AUDITED.has(context.operation)) return operation(NOT_CARRIED);
      // The anonymous actor ('all') has no credential, so no scopes to record.
      const { ownerKey, scopes } = context.actor;
      const audited = { ...context, ownerKey, ...(scopes !== 'all' ? { scopes } : {}) };
      let carried: AuditEntry | undefined;
      const audit: OperationAudit = {
        carried: (taskId) => {
          if (context.operation !== 'callTool') return undefined;
          carried = taskCallEntry(audited, { taskId, status: 'working' }, this.clock.now());
          return carried;
        },
      };
      try {
        const result = await operation(audit);
        const entries = auditEntriesOf(audited, { result }, this.clock.now()).filter((entry) => !sameEntry(entry, carried));
        await appendAudit(this.store, entries, this.logger);
        return result;
      } catch (error) {
        // Not awaited: a refusal is answered at once, also while the store is down (the write then fails, logged).
        void appendAudit(this.store, auditEntriesOf(audited, { error }, this.clock.now()), this.logger);
        throw error;
      }
    });
  }

  /** Let the hooks judge the task an operation is about ({@link TaskServiceHook.admitTask}); throws to refuse. */
  admit(context: TaskOperationContext, record: TaskRecord): void {
    admitTask(this.hooks, context, record);
  }

  /**
   * The actor's visible task (owner and generation checked, expiry applied) as `operation` may act on it, or the
   * unknown-task error — the same answer for a missing, foreign, expired, other-generation or scope-refused task.
   * @throws TasksError `-32602` "Task not found".
   */
  async scoped(actor: TaskActor, taskId: string, operation: TaskOperation, requireSession?: string): Promise<TaskRecord> {
    const record = await this.reads.get(taskId, {
      ownerKey: actor.ownerKey,
      generation: actor.generation,
      ...(requireSession === undefined ? {} : { requireSession }),
    });
    if (!record) throw taskNotFound();
    this.admit({ operation, actor: actor, generation: actor.generation, taskId }, record);
    return record;
  }
}

/** The {@link OperationAudit} of an operation that is not audited. */
const NOT_CARRIED: OperationAudit = { carried: () => undefined };

/** Whether `entry` says what the entry written with the task said (its kind, task and outcome). */
function sameEntry(entry: AuditEntry, carried: AuditEntry | undefined): boolean {
  return carried !== undefined && entry.kind === carried.kind && entry.taskId === carried.taskId && entry.outcome === carried.outcome;
}
