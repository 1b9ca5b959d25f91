/**
 * Reading a terminal task's outcome on the requestor side, for both generations: what `getResult` and `resume`
 * return or throw once the task has ended, and when the task leaves the journal.
 */
import { ErrorCode } from '../protocol/constants.js';
import { resolveBudgets } from './budgets.js';
import {
  TaskCancelledError,
  TaskFailedError,
  TaskNotFoundError,
  TaskNotTerminalError,
  TaskOutcomeUnknownError,
  TasksConnectionError,
  TasksProtocolError,
} from './errors.js';
import type { RequestorLink } from './requestor-link.js';
import type { CallToolResult, JsonRpcErrorObject, TaskSnapshot, WaitOptions } from './types.js';
import { isTerminalStatus, retryTransient } from './wait.js';
import { CallToolResultSchema, toCallToolResult } from './wire-schemas.js';

/**
 * The outcome of a terminal task as its requestor receives it: the `CallToolResult` (v1 read with `tasks/result`,
 * v2 taken from the snapshot), or the task's failure or cancellation as an error. Delivery removes the task from the
 * journal, except when its outcome could not be read (it is then still owed).
 * @throws TaskNotTerminalError when the task is still running; TaskCancelledError for a cancelled task.
 * @throws TaskFailedError for a JSON-RPC error outcome; TaskNotFoundError when a v1 result expired meanwhile.
 * @throws TaskOutcomeUnknownError when a v1 result stayed unreachable for the whole result budget.
 */
export async function deliverResult(
  link: RequestorLink,
  snapshot: TaskSnapshot,
  options: Pick<WaitOptions, 'budgets' | 'onConnection' | 'signal'> = {},
): Promise<CallToolResult> {
  const { taskId } = snapshot;
  if (!isTerminalStatus(snapshot.status)) throw new TaskNotTerminalError(taskId, snapshot);
  if (link.generation === 'v1' && snapshot.status !== 'cancelled') return v1Payload(link, snapshot, options);
  await link.journaled.forget(taskId);
  if (snapshot.status === 'cancelled') throw new TaskCancelledError(taskId, snapshot);
  if (snapshot.status === 'failed') throw new TaskFailedError(taskId, snapshot.error as JsonRpcErrorObject, snapshot);
  return snapshot.result as CallToolResult;
}

/**
 * v1 `tasks/result` for a terminal task: its result, or its JSON-RPC error replayed (R25). Transient failures are
 * retried within the result budget; after that the outcome is unknown (the task ended, its result was not read).
 */
async function v1Payload(
  link: RequestorLink,
  snapshot: TaskSnapshot,
  options: Pick<WaitOptions, 'budgets' | 'onConnection' | 'signal'>,
): Promise<CallToolResult> {
  const { taskId } = snapshot;
  let result: CallToolResult;
  try {
    const read = () =>
      link.session.request('tasks/result', { taskId }, CallToolResultSchema, {
        resendOnLostSession: true,
        ...(options.signal ? { signal: options.signal } : {}),
      });
    result = toCallToolResult(
      await retryTransient(taskId, read, {
        budgetMs: resolveBudgets(options.budgets).resultMs,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onConnection ? { onConnection: options.onConnection } : {}),
        ...(snapshot.pollIntervalMs === undefined ? {} : { intervalMs: snapshot.pollIntervalMs }),
      }),
    );
  } catch (error) {
    if (error instanceof TasksConnectionError && error.retryable)
      throw new TaskOutcomeUnknownError(taskId, 'result_unreachable', snapshot.status, snapshot, { cause: error });
    if (!(error instanceof TasksProtocolError && error.code !== null)) throw error;
    if (snapshot.status === 'failed') {
      await link.journaled.forget(taskId);
      const message = error.cause instanceof Error ? error.cause.message : error.message;
      throw new TaskFailedError(taskId, { code: error.code, message, ...(error.data === undefined ? {} : { data: error.data }) }, snapshot);
    }
    if (error.code !== ErrorCode.InvalidParams) throw error;
    // A completed task whose result cannot be read any more has expired in between.
    await link.journaled.forget(taskId);
    throw new TaskNotFoundError(taskId, undefined, { cause: error });
  }
  await link.journaled.forget(taskId);
  return result;
}
