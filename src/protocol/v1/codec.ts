import { immediateResponseMeta, RELATED_TASK_META_KEY } from '../constants.js';
import { isoTime } from '../time.js';
import type { JsonObject, TaskView } from '../types.js';

/** The 2025-11-25 `Task` object (all numbers integer milliseconds). */
export interface V1Task {
  taskId: string;
  status: TaskView['status'];
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  /** Actual retention in ms; `null` = unlimited (R19). */
  ttl: number | null;
  pollInterval?: number;
}

/** `Task` wire object, flat, without related-task `_meta` (R33). Used by `tasks/get`, `tasks/cancel`, `tasks/list`. */
export function toV1Task(view: TaskView): V1Task {
  const task: V1Task = {
    taskId: view.taskId,
    status: view.status,
    createdAt: isoTime(view.createdAt),
    lastUpdatedAt: isoTime(view.lastUpdatedAt),
    ttl: view.ttlMs,
    pollInterval: view.pollIntervalMs,
  };
  if (view.statusMessage !== null) task.statusMessage = view.statusMessage;
  return task;
}

/**
 * `CreateTaskResult` of 2025-11-25: the task **nested** under `task`, no tool output (R12); with the tool's
 * immediate response for the model as `_meta["io.modelcontextprotocol/model-immediate-response"]` (R15), and as
 * Claude Code reads it (`_meta["com.anthropic/agent-task"].modelImmediateResponse`; see `immediateResponseMeta`).
 */
export function v1CreateTaskResult(view: TaskView, immediateResponse?: string): { task: V1Task; _meta?: JsonObject } {
  const task = toV1Task(view);
  return immediateResponse === undefined ? { task } : { task, _meta: immediateResponseMeta(immediateResponse) as JsonObject };
}

/** `ListTasksResult` (R37); `nextCursor` only while more tasks exist. */
export function v1ListTasksResult(views: readonly TaskView[], nextCursor: string | undefined): { tasks: V1Task[]; nextCursor?: string } {
  const tasks = views.map(toV1Task);
  return nextCursor === undefined ? { tasks } : { tasks, nextCursor };
}

/**
 * The original `CallToolResult` as `tasks/result` returns it (R25), with the related-task `_meta` that R26 requires
 * merged into any `_meta` the tool set.
 */
export function v1TaskPayloadResult(taskId: string, result: JsonObject): JsonObject {
  const meta = (typeof result._meta === 'object' && result._meta !== null && !Array.isArray(result._meta) ? result._meta : {}) as JsonObject;
  return { ...result, _meta: { ...meta, [RELATED_TASK_META_KEY]: { taskId } } };
}
