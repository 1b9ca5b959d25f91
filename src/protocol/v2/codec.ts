import { immediateResponseMeta } from '../constants.js';
import { isoTime } from '../time.js';
import type { JsonObject, JsonRpcErrorObject, TaskOutcome, TaskView } from '../types.js';

/** The Tasks Extension `Task` object (SEP-2663; integers in ms, X10: never negative). */
export interface V2Task {
  taskId: string;
  status: TaskView['status'];
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  /** Retention from `createdAt` in ms; `null` = unlimited (E11). */
  ttlMs: number | null;
  pollIntervalMs?: number;
}

/** `DetailedTask`: the task plus `inputRequests` / `result` / `error` as its status requires (E19). */
export type V2DetailedTask = V2Task & {
  inputRequests?: JsonObject;
  result?: JsonObject;
  error?: JsonRpcErrorObject;
};

/** Plain task fields. */
export function toV2Task(view: TaskView): V2Task {
  const task: V2Task = {
    taskId: view.taskId,
    status: view.status,
    createdAt: isoTime(view.createdAt),
    lastUpdatedAt: isoTime(view.lastUpdatedAt),
    ttlMs: view.ttlMs,
    pollIntervalMs: view.pollIntervalMs,
  };
  if (view.statusMessage !== null) task.statusMessage = view.statusMessage;
  return task;
}

/** Flat `CreateTaskResult` with `resultType: "task"` and nothing else of the task's outcome (E8, X3); `_meta` with the immediate response when the tool has one. */
export function v2CreateTaskResult(view: TaskView, immediateResponse?: string): V2Task & { resultType: 'task'; _meta?: Record<string, unknown> } {
  const created = { resultType: 'task' as const, ...toV2Task(view) };
  // E11 carries the immediate response as the initial statusMessage; Claude Code reads only `_meta` (issue 27 §1).
  return immediateResponse === undefined ? created : { ...created, _meta: immediateResponseMeta(immediateResponse) };
}

/**
 * `DetailedTask` for `tasks/get` and `notifications/tasks` (E19, E33):
 * - `completed` carries `result` (the `CallToolResult`, stamped `resultType: "complete"` per X12);
 * - `failed` carries `error`; a failed task whose outcome is a tool result (cannot happen in v2) carries none;
 * - `input_required` carries every outstanding request in `inputRequests` (an empty map when none is known).
 */
export function v2DetailedTask(view: TaskView, outcome: TaskOutcome | undefined, inputRequests?: JsonObject): V2DetailedTask {
  const task: V2DetailedTask = toV2Task(view);
  if (view.status === 'completed' && outcome?.kind === 'result') {
    task.result = { ...outcome.result, resultType: 'complete' };
  } else if (view.status === 'failed' && outcome?.kind === 'error') {
    task.error = outcome.error;
  } else if (view.status === 'input_required') {
    task.inputRequests = inputRequests ?? {};
  }
  return task;
}

/** `GetTaskResult`: `resultType: "complete"` plus the detailed task (E9). */
export function v2GetTaskResult(detailed: V2DetailedTask): V2DetailedTask & { resultType: 'complete' } {
  return { resultType: 'complete', ...detailed };
}

/** The empty acknowledgement of `tasks/update` and `tasks/cancel` (E25, E30). */
export function v2Acknowledgement(): { resultType: 'complete' } {
  return { resultType: 'complete' };
}
