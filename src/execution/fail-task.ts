import { runtimeFailure, type RuntimeFailureReason } from '../core/errors.js';
import type { TaskRows } from '../core/ports/rows.js';
import type { TaskRecord } from '../core/task.js';
import { sanitizeModelText } from '../core/tool-outcome.js';

/**
 * Fail a task for a reason of the runtime itself (`-32603` with `data.reason`, the message also as statusMessage),
 * releasing any lease, with its `task.ended` audit entry in the same write. A conditional write like any transition:
 * a task that is terminal meanwhile stays as it is (and no audit entry is written). With `leaseOwner`, only while that
 * owner holds the task's lease: a run failing its own task must not fail one another worker has taken over.
 * @returns the failed task, or `undefined` when it was terminal or gone (or, with `leaseOwner`, no longer its).
 */
export async function failByRuntime(
  store: TaskRows,
  taskId: string,
  reason: RuntimeFailureReason,
  text: string,
  now: number,
  leaseOwner?: string,
): Promise<TaskRecord | undefined> {
  // Runtime words, but they name the tool (its name comes from configuration): model-facing text all the same.
  const message = sanitizeModelText(text);
  return store.transition(taskId, {
    to: 'failed',
    outcome: { kind: 'error', error: runtimeFailure(reason, message) },
    statusMessage: message,
    releaseLease: true,
    now,
    endedAudit: { reason },
    ...(leaseOwner === undefined ? {} : { leaseOwner }),
  });
}
