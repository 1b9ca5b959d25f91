import type { TaskRecord } from '../core/task.js';
import { type V2DetailedTask, v2DetailedTask } from '../protocol/v2/codec.js';
import type { TaskDetails } from '../service/tasks/tasks-door.js';

/**
 * The `DetailedTask` of a task as `tasks/get` and `notifications/tasks` show it (SEP-2663 E19, E33): the result or
 * error inline when terminal, every outstanding request in `inputRequests` (key → `{method, params}`) while
 * `input_required`.
 */
export function detailedTask(record: TaskRecord, details: TaskDetails): V2DetailedTask {
  const inputRequests = details.inputRequests && Object.fromEntries(details.inputRequests.map((request) => [request.key, request.request]));
  return v2DetailedTask(record, details.outcome, inputRequests);
}
