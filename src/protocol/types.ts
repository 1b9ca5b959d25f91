/** JSON and task-status types shared by both wire generations. */

/** A JSON value as sent on the wire. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** A JSON-RPC error object (`{code, message, data?}`). */
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: JsonValue;
}

/** Task status values, identical in both generations (2025-11-25 R16, SEP-2663 E12). */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/**
 * The task fields both codecs read, with times in epoch milliseconds. The core `TaskRecord` satisfies it.
 */
export interface TaskView {
  taskId: string;
  status: TaskStatus;
  statusMessage: string | null;
  createdAt: number;
  lastUpdatedAt: number;
  ttlMs: number | null;
  pollIntervalMs: number;
}

/**
 * How a task ended, kept verbatim:
 * - `result`: the tool's `CallToolResult` (also when `isError: true`);
 * - `error`: a JSON-RPC error raised while running the tool.
 */
export type TaskOutcome = { kind: 'result'; result: JsonObject } | { kind: 'error'; error: JsonRpcErrorObject };
