import { isTerminal } from '../core/state-machine.js';
import type { JsonObject, TaskRecord } from '../core/task.js';
import { v2DetailedTask, type V2DetailedTask } from '../protocol/v2/codec.js';
import type { HandlerDeps } from './deps.js';

/** Every outstanding input request of a task as the `inputRequests` map (key → `{method, params}`). */
export async function outstandingInputRequests(deps: Pick<HandlerDeps, 'store'>, taskId: string): Promise<JsonObject> {
  const requests = await deps.store.listInputRequests(taskId);
  return Object.fromEntries(requests.filter((request) => request.state === 'pending').map((request) => [request.key, request.request]));
}

/**
 * The `DetailedTask` of a task as `tasks/get` and `notifications/tasks` show it (SEP-2663 E19, E33): the result or
 * error inline when terminal, every outstanding request in `inputRequests` while `input_required`.
 */
export async function detailedTask(deps: Pick<HandlerDeps, 'store' | 'reads'>, record: TaskRecord): Promise<V2DetailedTask> {
  if (isTerminal(record.status)) return v2DetailedTask(record, await deps.reads.outcome(record.taskId));
  if (record.status === 'input_required') return v2DetailedTask(record, undefined, await outstandingInputRequests(deps, record.taskId));
  return v2DetailedTask(record, undefined);
}
