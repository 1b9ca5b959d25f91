import { runtimeFailure, type RuntimeFailureReason } from '../core/errors.js';
import type { TaskStore } from '../core/store.js';
import type { TaskRecord } from '../core/task.js';

/**
 * Fail a task for a reason of the runtime itself (`-32603` with `data.reason`, the message also as statusMessage),
 * releasing any lease. A conditional write like any transition: a task that is terminal meanwhile stays as it is.
 * @returns the failed task, or `undefined` when it was terminal or gone.
 */
export function failByRuntime(store: TaskStore, taskId: string, reason: RuntimeFailureReason, message: string, now: number): Promise<TaskRecord | undefined> {
  return store.transition(taskId, { to: 'failed', outcome: { kind: 'error', error: runtimeFailure(reason, message) }, statusMessage: message, releaseLease: true, now });
}
