/**
 * What recovery does with a task whose run is gone (its process killed, or its lease lapsed otherwise) when that run
 * cannot simply run again: fail it with the reason recovery found, deleting the chunks the dead run stored for an
 * outcome that never committed; or, for a run that waited in place for input, settle it as a drain would have. The
 * recovery loop that claims such tasks is the worker's (`task-worker.ts`).
 */
import { redactTaskId } from '../core/logger.js';
import type { TaskRecord } from '../core/task.js';
import type { AnyToolDefinition } from '../core/tool.js';
import { discardUnservedChunks } from '../core/unserved-chunks.js';
import type { RuntimeFailure } from './task-run.js';
import type { TaskWorkerOptions } from './task-worker-options.js';

/**
 * Whether a run of `tool` that did not finish may simply run again: it is idempotent, or journaled (every side effect
 * in `ctx.step`, replayed instead of repeated). Recovery and the drain both decide by it.
 */
export function safeToRerun(tool: AnyToolDefinition | undefined): tool is AnyToolDefinition {
  return tool?.idempotent === true || tool?.journaled === true;
}

/**
 * The failure of a task whose worker stopped while its tool `ran` or `waited for input` (recovery, or the drain) and
 * whose tool may not run again.
 */
export function interruptedMessage(toolName: string, doing: 'ran' | 'waited for input'): string {
  return `Task was interrupted (its worker stopped while ${toolName} ${doing}) and is not safe to re-run`;
}

/** What the functions here use of the worker: its options, and its one way to fail a task (pending status dropped). */
export interface OrphanDeps {
  readonly options: TaskWorkerOptions;
  fail(record: TaskRecord, reason: RuntimeFailure, message: string): Promise<TaskRecord | undefined>;
}

/**
 * A task taken over while it waits for input: its run waited in place and its process is gone, as a drain would
 * have settled it (see `TaskWorker.settleAsking`). A tool that is not safe to re-run fails `interrupted` now, while
 * this worker holds the lease — an answer arriving meanwhile resumes it under that lease, so no other worker starts
 * it; one that is safe to re-run is given back parked, its question kept: once answered, any worker runs it again
 * with the answers replayed.
 */
export async function recoverAsking(deps: OrphanDeps, record: TaskRecord): Promise<void> {
  const { store, tools, settings, logger, observer } = deps.options;
  const tool = tools.get(record.toolName);
  if (safeToRerun(tool)) {
    await store.releaseUnstarted(settings.instanceId, [record.taskId]);
    return;
  }
  observer?.orphanRecovered?.('interrupted');
  logger.info({ taskId: redactTaskId(record.taskId) }, 'a run that waited in place is gone; failing its task');
  await failOrphan(deps, record, 'interrupted', interruptedMessage(record.toolName, 'waited for input'));
}

/**
 * Fail a task taken over from a run that is gone, and delete the chunks of a large result that run stored before it
 * died (its outcome never committed): nothing will serve them, and they would stay until the task's TTL — for good
 * with unlimited retention. Only chunks of a task that ended with this error outcome go
 * (`discardUnservedResultChunks`); best effort, logged.
 */
export async function failOrphan(deps: OrphanDeps, record: TaskRecord, reason: RuntimeFailure, message: string): Promise<void> {
  if (!(await deps.fail(record, reason, message))) return;
  await discardUnservedChunks(deps.options.store, record.taskId, deps.options.logger.child({ taskId: redactTaskId(record.taskId) }));
}
