import { toVisibleLine } from '../protocol/model-text.js';
import type { JsonRpcErrorObject, JsonValue, TaskStatus } from '../protocol/types.js';
import type { InputRequest } from './input.js';
import { remoteLine } from './remote-text.js';
import { shellWord } from './shell-word.js';
import type { TaskSnapshot } from './types.js';

/** Most UTF-16 code units of an error's message (a server's words quoted in it included). */
const MESSAGE_MAX_CHARS = 4_000;

/**
 * Base class of every error the requestor library throws. `code` is the JSON-RPC error code when the server sent
 * one (e.g. `-32602`), or `null` when the failure happened on this side (network, timeout, invalid reply).
 *
 * `message` is one line of visible text whatever the server sent: escape sequences and control characters removed
 * (`toVisibleLine`), so it can be printed to a terminal or handed to a model as it is; the server's own words quoted
 * in it (an error message, a status) also have their role markers neutralised where they are quoted (`remoteLine`),
 * while this library's words (a tool named `user`) stay as they are. What the server sent exactly is in `code`,
 * `data`, the subclasses' fields (`TaskFailedError.error`) and `cause`.
 */
export class TasksClientError extends Error {
  override name = 'TasksClientError';
  constructor(
    message: string,
    /** JSON-RPC error code from the server, `null` when there is none. */
    readonly code: number | null = null,
    /** JSON-RPC `data` from the server, when present. */
    readonly data?: JsonValue,
    options?: { cause?: unknown },
  ) {
    super(toVisibleLine(message, MESSAGE_MAX_CHARS), options);
  }
}

/**
 * The server could not be reached or the transport failed: refused connection, reset socket, HTTP 401/5xx,
 * request timeout, lost legacy session. `retryable` says whether repeating a *read* (e.g. `tasks/get`) may succeed.
 */
export class TasksConnectionError extends TasksClientError {
  override name = 'TasksConnectionError';
  constructor(
    message: string,
    /** Whether a later read may succeed (timeouts, resets, HTTP 5xx/429, lost session); `false` for 401/403/404. */
    readonly retryable: boolean,
    options?: { cause?: unknown; httpStatus?: number; code?: number | null },
  ) {
    super(message, options?.code ?? null, undefined, options?.cause === undefined ? undefined : { cause: options.cause });
    this.httpStatus = options?.httpStatus;
  }
  /** HTTP status of the failed exchange, when one arrived. */
  readonly httpStatus: number | undefined;
}

/**
 * A `tools/call` was sent but its answer never arrived (connection lost, timeout, abort). The server may have
 * started the call — possibly as a task — and this library never resends a `tools/call`. Find out before repeating
 * it: a 2025-11-25 server that declares `tasks.list` can be asked with `listTasks()`; otherwise check on the server.
 */
export class ToolCallOutcomeUnknownError extends TasksConnectionError {
  override name = 'ToolCallOutcomeUnknownError';
  constructor(
    message: string,
    /** The tool that was called. */
    readonly tool: string,
    options?: { cause?: unknown; httpStatus?: number },
  ) {
    super(message, false, options);
  }
}

/**
 * The server answered with a JSON-RPC error (`code`, `data` as sent), sent a reply this library cannot accept
 * (`code` `null`), or the connection lacks what the operation needs (`code` `-32601`, e.g. no `tasks.cancel`).
 */
export class TasksProtocolError extends TasksClientError {
  override name = 'TasksProtocolError';
}

/**
 * The server answered a `tools/call` itself with a JSON-RPC error (`code`, `data` as sent): the call is over and its
 * outcome known — it failed. Whether the tool ran depends on the error: `-32603` "Internal error in tool …" is a tool
 * that ran and threw (an inline, `sync` call), as are a runtime limit (`-32603` `runtime_limit`) or `-31003`
 * `sync_timeout` (it ran until stopped); `-32602` (an unknown tool, refused arguments) ran nothing, and so did a
 * refusal by quota, load or kill switch, which is the subclass {@link ToolCallRefusedError}. Not a connection problem, so never a reason to repeat the call blindly. (A server whose task store failed
 * while it handled the call cannot say whether it was recorded: that is a {@link ToolCallOutcomeUnknownError}.)
 */
export class ToolCallFailedError extends TasksProtocolError {
  override name = 'ToolCallFailedError';
  constructor(
    /** The tool that was called. */
    readonly tool: string,
    message: string,
    code: number,
    data?: JsonValue,
    options?: { cause?: unknown },
  ) {
    super(message, code, data, options);
  }
}

/**
 * The server refused a `tools/call` before anything ran: a quota (`-31001`, `data.reason` `active_tasks` /
 * `create_rate`), load shedding (`-31002` `busy`) or the operator's kill switch or canary (`-31003` `kill_switch` /
 * `canary`). Nothing ran and nothing was recorded, so the call can be made again — after `retryAfterMs` when the
 * server gave it, or once the operator lifts the switch. A {@link ToolCallFailedError} (the call is over) that says
 * more; `-31003` `sync_timeout` is not one: that tool ran inline until it was stopped.
 */
export class ToolCallRefusedError extends ToolCallFailedError {
  override name = 'ToolCallRefusedError';
  /** `data.reason` as the server sent it (`active_tasks`, `create_rate`, `busy`, `kill_switch`, `canary`), if any. */
  readonly reason: string | undefined;
  /** `data.retryAfterMs`: when a new call may be admitted, in ms from the answer, if the server said. */
  readonly retryAfterMs: number | undefined;
  constructor(tool: string, message: string, code: number, data?: JsonValue, options?: { cause?: unknown }) {
    super(tool, message, code, data, options);
    const fields = typeof data === 'object' && data !== null && !Array.isArray(data) ? data : {};
    this.reason = typeof fields.reason === 'string' ? fields.reason : undefined;
    this.retryAfterMs = typeof fields.retryAfterMs === 'number' && fields.retryAfterMs >= 0 ? fields.retryAfterMs : undefined;
  }
}

/** The task id is unknown to the server: never existed, expired and purged, or owned by someone else (`-32602`). */
export class TaskNotFoundError extends TasksProtocolError {
  override name = 'TaskNotFoundError';
  constructor(
    /** The task that was asked for. */
    readonly taskId: string,
    message = `Task ${taskId} not found (unknown, expired, or not visible to these credentials)`,
    options?: { cause?: unknown },
  ) {
    super(message, -32602, undefined, options);
  }
}

/** The task ended `failed` with a JSON-RPC error; `code`, `message` and `data` are that error's. */
export class TaskFailedError extends TasksClientError {
  override name = 'TaskFailedError';
  constructor(
    readonly taskId: string,
    /** The error exactly as the server reported it. */
    readonly error: JsonRpcErrorObject,
    /** The terminal snapshot. */
    readonly snapshot: TaskSnapshot,
  ) {
    super(remoteLine(error.message), error.code, error.data);
  }
}

/** The task ended `cancelled`; there is no result. */
export class TaskCancelledError extends TasksClientError {
  override name = 'TaskCancelledError';
  constructor(
    readonly taskId: string,
    /** The terminal snapshot. */
    readonly snapshot: TaskSnapshot,
  ) {
    super(`Task ${taskId} was cancelled${snapshot.statusMessage ? `: ${remoteLine(snapshot.statusMessage)}` : ''}`);
  }
}

/**
 * The wait gave up before the task ended: its deadline passed, or a status budget (reads or time) was used up. The
 * task keeps running on the server; wait again to resume.
 */
export class TaskTimeoutError extends TasksClientError {
  override name = 'TaskTimeoutError';
  constructor(
    readonly taskId: string,
    /** When the wait gave up (epoch ms): the deadline, or the moment a budget ran out. */
    readonly deadline: number,
    /** The last snapshot seen, if any poll succeeded. */
    readonly snapshot: TaskSnapshot | undefined,
    /** What ran out. @defaultValue `'deadline'` */
    readonly budget: 'deadline' | 'statusReads' | 'statusMs' = 'deadline',
  ) {
    const what =
      budget === 'deadline'
        ? `at ${new Date(deadline).toISOString()}`
        : budget === 'statusReads'
          ? '(status read budget used up)'
          : '(status time budget used up)';
    // Only what the server said: a task this wait never got a status for is "not reached", never "still running".
    const seen = snapshot
      ? `its last status from the server was ${snapshot.status}${snapshot.lastUpdatedAt ? ` (updated ${snapshot.lastUpdatedAt})` : ''}`
      : 'not reached before the deadline (no status was read from the server)';
    super(`Gave up waiting for task ${taskId} ${what}; ${seen}`);
  }
}

/** `getResult()` was called for a task that has not reached a terminal status yet. */
export class TaskNotTerminalError extends TasksClientError {
  override name = 'TaskNotTerminalError';
  constructor(
    readonly taskId: string,
    readonly snapshot: TaskSnapshot,
  ) {
    super(`Task ${taskId} is still ${snapshot.status}; wait for it (waitForTask) before asking for its result`);
  }
}

/**
 * A `tools/call` needs answers before the server goes on — a 2026-07-28 MRTR round (`resultType:
 * "input_required"`) or a 2025-11-25 `elicitation/create` during the call — and the input handler gave none for
 * `requests` (or the client has none). On 2026-07-28 the server has started nothing (it never assumes a retry,
 * B17); call again with answers.
 */
export class InputNotAnsweredError extends TasksClientError {
  override name = 'InputNotAnsweredError';
  constructor(
    /** The tool that was called. */
    readonly tool: string,
    /** The questions left without an answer. */
    readonly requests: InputRequest[],
    options?: { cause?: unknown },
  ) {
    super(
      `tools/call ${tool} needs input before it can go on: ${requests.map((request) => `${request.key} (${request.params.message})`).join('; ')}`,
      null,
      undefined,
      options,
    );
  }
}

/**
 * The call was refused by policy before anything was sent: the connection lacks what the call's task policy and
 * needs require, and the fallback was `'reject'` (or could not apply, e.g. `'sync'` for a task-only tool).
 * The CLI exits 7.
 */
export class CapabilityMissingError extends TasksClientError {
  override name = 'CapabilityMissingError';
  constructor(
    /** The tool that was not called. */
    readonly tool: string,
    /** The call's task policy. */
    readonly policy: 'required' | 'preferred' | 'forbidden',
    /** What is missing, one sentence each. */
    readonly missing: string[],
    /** `capabilitiesDigest` of the manifest the decision was made on. */
    readonly capabilitiesDigest: string,
  ) {
    super(`tools/call ${tool} not sent (task policy ${policy}): ${missing.join('; ')}`);
  }
}

/**
 * Why a task's outcome is unknown to this client:
 * - `unreachable`: the server could not be reached within the reconciliation budget;
 * - `not_found`: `tasks/get` answers "not found" for a task this client saw (expired, purged, or no longer visible
 *   to these credentials);
 * - `unauthorized`: the server now refuses the credentials (HTTP 401/403);
 * - `result_unreachable`: the task is terminal but its result could not be retrieved within the result budget.
 */
export type OutcomeUnknownReason = 'unreachable' | 'not_found' | 'unauthorized' | 'result_unreachable';

/**
 * A task this client knew of can no longer be observed, so its outcome is unknown — never "failed": the work may
 * have completed. Carries the last status seen (from this wait or from the journal). The CLI exits 8.
 */
export class TaskOutcomeUnknownError extends TasksClientError {
  override name = 'TaskOutcomeUnknownError';
  constructor(
    readonly taskId: string,
    readonly reason: OutcomeUnknownReason,
    /** The last status observed, when any was. */
    readonly lastStatus: TaskStatus | undefined,
    /** The last snapshot observed in this process, when any was. */
    readonly snapshot: TaskSnapshot | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `Outcome of task ${taskId} unknown (${REASON_TEXT[reason]}); last observed status: ${lastStatus ?? 'none'}. It was not treated as failed; check with mcp-tasks get ${shellWord(taskId)} once the server answers.`,
      null,
      undefined,
      options,
    );
  }
}

const REASON_TEXT: Record<OutcomeUnknownReason, string> = {
  unreachable: 'the server could not be reached within the reconciliation budget',
  not_found: 'the server no longer knows the task: expired, purged, or not visible to these credentials',
  unauthorized: 'the server refuses these credentials now',
  result_unreachable: 'the task ended but its result could not be retrieved within the result budget',
};
