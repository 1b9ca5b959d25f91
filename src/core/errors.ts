import {
  ApplicationErrorReason,
  CLIENT_CAPABILITIES_META_KEY,
  ErrorCode,
  TASKS_EXTENSION_ID,
  TASKS_EXTENSION_REQUIRED_CAPABILITIES,
} from '../protocol/constants.js';
import { toModelLine } from '../protocol/model-text.js';
import { resultChunkUri, resultResourceUri } from '../protocol/result-uri.js';
import type { JsonRpcErrorObject, JsonValue } from './task.js';

/**
 * Why the runtime itself failed a task (`data.reason` of its `-32603`). `input_invalid`: an answer still failed its
 * schema when the question had been asked `MAX_ASKS_PER_QUESTION` times; `input_limit`: the tool asked for more
 * than `MAX_INPUT_KEYS_PER_TASK` input keys over the task's life; `outcome_unknown`: an operation's
 * outcome could not be reconciled (issue 12); `input_needs_task`: an inline call of a tool that asks in place, which
 * a 2026-07-28 call without a task cannot wait for (see {@link inPlaceInputRefused}); `result_too_large`: the tool result exceeded `maxStoredResultBytes` (issue 10 §2);
 * `task_unreadable`: a worker claimed the task but cannot decode its stored arguments (a key it is not configured with,
 * an altered value), so its tool never ran; `result_not_stored`: the tool ran but the store refused its outcome for a
 * reason a re-run would meet again (a full disk, an outcome it rejects), so the task failed rather than run twice.
 */
export type RuntimeFailureReason =
  | 'interrupted'
  | 'runtime_limit'
  | 'attempts_exhausted'
  | 'input_timeout'
  | 'input_invalid'
  | 'input_limit'
  | 'input_needs_task'
  | 'outcome_unknown'
  | 'result_too_large'
  | 'result_not_stored'
  | 'task_unreadable';

/**
 * The one error type of the tasks layer. It carries a JSON-RPC `code` (and optional `data`), so the SDK
 * serialises it as that error when a request handler throws it.
 */
export class TasksError extends Error {
  override readonly name = 'TasksError';
  constructor(
    /** JSON-RPC error code, see {@link ErrorCode}. */
    readonly code: number,
    message: string,
    readonly data?: JsonValue,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** The wire error object. */
  toJsonRpc(): JsonRpcErrorObject {
    return this.data === undefined ? { code: this.code, message: this.message } : { code: this.code, message: this.message, data: this.data };
  }
}

/**
 * The unknown-task answer (2025-11-25 R45, SEP-2663 E39). A foreign, expired or other-generation task gets
 * exactly this answer too, so existence never leaks (R49, E45).
 */
export function taskNotFound(): TasksError {
  return new TasksError(ErrorCode.InvalidParams, 'Failed to retrieve task: Task not found');
}

/**
 * `-32602` "Resource not found" (base 2026-07-28 §8: never the old `-32002`): the one answer of `resources/read` for a
 * URI that is malformed, unknown, foreign or without content, so nothing is learnt about other owners' tasks.
 */
export function resourceNotFound(): TasksError {
  return new TasksError(ErrorCode.InvalidParams, 'Resource not found');
}

/** Whether `error` is the unknown-task answer of {@link taskNotFound}. */
export function isTaskNotFound(error: unknown): boolean {
  return error instanceof TasksError && error.code === ErrorCode.InvalidParams && error.message === taskNotFound().message;
}

/** `-32602` for malformed params. */
export function invalidParams(message: string, data?: JsonValue): TasksError {
  return new TasksError(ErrorCode.InvalidParams, message, data);
}

/** `-32601` for an unknown or unadvertised method. */
export function methodNotFound(method: string): TasksError {
  return new TasksError(ErrorCode.MethodNotFound, `Method not found: ${method}`);
}

/**
 * What a `-32021` for the Tasks Extension refused: a call of a task-required `tool` (SEP-2663 E6), or a task
 * `method` (`tasks/get|update|cancel`, `subscriptions/listen` with `taskIds`, E35 E41).
 */
export type MissingTasksExtensionContext = { tool: string; asksInPlace?: true } | { method: string };

/** What the client must declare, in the words every Tasks Extension `-32021` message uses. */
const DECLARE_TASKS_EXTENSION = `The client must declare the Tasks Extension ("${TASKS_EXTENSION_ID}" in the extensions of _meta "${CLIENT_CAPABILITIES_META_KEY}", MCP 2026-07-28)`;

/**
 * The message of a `-32021` for the Tasks Extension: one model-safe line of at most ~400 characters (issue 27 §4 —
 * a model behind a client reads only the message) saying what was refused, what the client must declare, and the
 * alternatives.
 */
export function missingTasksExtensionMessage(context: MissingTasksExtensionContext): string {
  const text =
    'tool' in context && context.asksInPlace
      ? `Missing required client capability: tool ${context.tool} asks for input while it runs, and a call without a task cannot wait for the answer. ${DECLARE_TASKS_EXTENSION} so the call becomes a task. ` +
        'Alternative: an MCP 2025-11-25 session, which is asked directly.'
      : 'tool' in context
        ? `Missing required client capability: tool ${context.tool} runs only as a task. ${DECLARE_TASKS_EXTENSION}. ` +
          'Alternatives: MCP 2025-11-25 tasks, or a server run with --task-fallback-tools (answers with a task id to follow via get_task_status / get_task_result).'
        : `Missing required client capability: ${context.method} is a Tasks Extension method. ${DECLARE_TASKS_EXTENSION}. ` +
          'Alternatives: the 2025-11-25 tasks methods, or get_task_status / get_task_result / cancel_task where the server offers them.';
  return toModelLine(text);
}

/**
 * `-32021` naming the Tasks Extension as the missing client capability (SEP-2663 E6, E35, E41): `data` is the
 * spec's `requiredCapabilities`; the message says the same in words (see {@link missingTasksExtensionMessage}).
 */
export function missingTasksExtension(context: MissingTasksExtensionContext): TasksError {
  return new TasksError(ErrorCode.MissingRequiredClientCapability, missingTasksExtensionMessage(context), {
    requiredCapabilities: TASKS_EXTENSION_REQUIRED_CAPABILITIES as unknown as JsonValue,
  });
}

/**
 * The refusal of a question a tool asks in place (`elicits: 'in-place'`) during an inline 2026-07-28 call, which
 * cannot wait for an answer (its questions end the call, and the tool cannot be run again to reach them):
 * - a client without the Tasks Extension: `-32021` naming it, since declaring it makes the call a task;
 * - a client that declared it (the tool runs only inline here, `execution: 'sync'`): `-32603` with
 *   `data.reason: "input_needs_task"`, not a capability the client already has (a host following
 *   `requiredCapabilities` would retry the same request for ever).
 */
export function inPlaceInputRefused(tool: string, declaredTasks: boolean): TasksError {
  if (!declaredTasks) return missingTasksExtension({ tool, asksInPlace: true });
  return new TasksError(
    ErrorCode.InternalError,
    toModelLine(
      `Tool ${tool} asks for input while it runs, and this server runs it only without a task: an MCP 2026-07-28 call without a task cannot wait for the answer. ` +
        'Use an MCP 2025-11-25 session, or have the operator make the tool task-optional.',
    ),
    { reason: 'input_needs_task' },
  );
}

/**
 * `-31001`: a per-owner quota is full and nothing was created (issue 10 §2); `data` carries the stable `reason`,
 * the `limit` and `retryAfterMs` (ms until a retry can succeed: exact for the create rate, the poll interval for
 * active tasks, which end when they end).
 */
export function quotaExceeded(reason: 'active_tasks' | 'create_rate', limit: number, retryAfterMs: number): TasksError {
  const what =
    reason === 'active_tasks'
      ? `${limit} active tasks per owner (--max-active-tasks-per-owner)`
      : `${limit} task creates per minute per owner (--max-creates-per-minute)`;
  return new TasksError(ErrorCode.QuotaExceeded, `Quota exceeded: at most ${what}; retry in ${retryAfterMs} ms`, { reason, limit, retryAfterMs });
}

/**
 * `-31004`: the whole large result of `taskId` (`bytes` of JSON in `chunks` stored chunks) is more than this request
 * path may hold in one message (`limit` bytes, issue 23 §5). The message and `data` name the two bounded ways to read
 * it: a plain `resources/read` of the result URI over HTTP (streamed), or its chunk resources (`data.chunkUri` with
 * `{index}` = 0 … chunks − 1: base64 blobs whose bytes, concatenated in order, are the result's JSON text).
 */
export function resultReadTooLarge(taskId: string, bytes: number, chunks: number, limit: number): TasksError {
  const uri = resultResourceUri(taskId);
  const message =
    `Result is ${bytes} bytes of JSON, more than this request path answers in one message (${limit} bytes): read ${uri} with a ` +
    `plain resources/read over HTTP (streamed), or in ${chunks} chunks ${resultChunkUri(taskId, 0)} … ${resultChunkUri(taskId, chunks - 1)} (base64 blobs, concatenated in order)`;
  const chunkUri = `${uri}/chunks/{index}`;
  return new TasksError(ErrorCode.ResultReadTooLarge, message, { reason: ApplicationErrorReason.ReadInChunks, uri, bytes, limit, chunks, chunkUri });
}

/** The message of a run stopped at `limits.runtimeLimitMs` (`runtime_limit`), a task's run or an inline call alike. */
export function runtimeLimitMessage(toolName: string, runtimeLimitMs: number): string {
  return `Tool ${toolName} exceeded the runtime limit of ${runtimeLimitMs} ms`;
}

/** `-32603` for failures the runtime creates itself, with `data.reason`. */
export function runtimeFailure(reason: RuntimeFailureReason, message: string): JsonRpcErrorObject {
  return { code: ErrorCode.InternalError, message, data: { reason } };
}
