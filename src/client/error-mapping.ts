import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError, UnauthorizedError } from '@modelcontextprotocol/client';

import { ApplicationErrorReason, ErrorCode, type KillSwitchReason } from '../protocol/constants.js';
import type { JsonValue } from '../protocol/types.js';
import {
  TasksClientError,
  TasksConnectionError,
  TasksProtocolError,
  ToolCallFailedError,
  ToolCallOutcomeUnknownError,
  ToolCallRefusedError,
} from './errors.js';
import { remoteLine } from './remote-text.js';

/**
 * Network failures that happen before any byte of the request reaches the server: the request was not delivered,
 * so nothing can have started.
 */
const UNDELIVERED_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * The innermost `code` (or message) in an error's `cause` chain, e.g. `ECONNREFUSED` under undici's `fetch failed`.
 * The outer error's own code (an SDK code such as `ERA_NEGOTIATION_FAILED`) counts only when it has no cause.
 */
export function rootCause(error: unknown): string | undefined {
  let current: unknown = error instanceof Error && error.cause !== undefined ? error.cause : error;
  let found: string | undefined;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') found = code;
    else if (current !== error) found = current.message;
    current = current.cause;
  }
  return found;
}

/** Whether a failed fetch certainly never reached the server (refused, unresolvable, unroutable, bad port). */
export function neverDelivered(error: unknown): boolean {
  const cause = rootCause(error);
  return cause !== undefined && (UNDELIVERED_CODES.has(cause) || cause === 'bad port');
}

/** An `AbortError`/`TimeoutError` raised by an `AbortSignal`. */
export function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}

/** HTTP statuses after which repeating a read can help. */
function retryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** A JSON-RPC error embedded in an HTTP error body, e.g. `{"jsonrpc":"2.0","error":{"code":-32001,…}}`. */
function embeddedRpcError(text: unknown): { code: number; message: string } | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (typeof body.error?.code === 'number') return { code: body.error.code, message: String(body.error.message ?? '') };
  } catch {
    // Not JSON: the caller reports the HTTP status alone.
  }
  return undefined;
}

function httpError(status: number, text: unknown, url: string, cause: unknown): TasksConnectionError {
  const rpc = embeddedRpcError(text);
  const detail = rpc ? `: ${remoteLine(rpc.message)} (JSON-RPC ${rpc.code})` : '';
  const hint = status === 401 ? ' — the server wants a valid bearer token (--token / MCP_TASKS_TOKEN)' : status === 403 ? ' — access denied' : '';
  return new TasksConnectionError(`HTTP ${status} from ${url}${detail}${hint}`, retryableStatus(status), {
    cause,
    httpStatus: status,
    code: rpc?.code ?? null,
  });
}

/**
 * Translate whatever the SDK client, `fetch` or a server threw into a typed {@link TasksClientError}.
 * `what` names the operation for the message (e.g. `tasks/get`). Abort errors are returned unchanged, so a caller's
 * own cancellation stays recognisable.
 */
export function toClientError(error: unknown, what: string, url: string): Error {
  if (error instanceof TasksClientError || isAbort(error)) return error as Error;
  if (error instanceof ProtocolError) {
    return new TasksProtocolError(`${what}: ${remoteLine(error.message)} (JSON-RPC ${error.code})`, error.code, error.data as JsonValue | undefined, {
      cause: error,
    });
  }
  if (error instanceof UnauthorizedError) return httpError(401, undefined, url, error);
  if (error instanceof SdkHttpError) return httpError(error.status, error.data.text, url, error);
  if (error instanceof SdkError) {
    switch (error.code) {
      case SdkErrorCode.RequestTimeout:
        return new TasksConnectionError(`${what}: no answer from ${url} in time`, true, { cause: error });
      case SdkErrorCode.ConnectionClosed:
      case SdkErrorCode.SendFailed:
      case SdkErrorCode.NotConnected:
        return new TasksConnectionError(`${what}: connection to ${url} lost (${error.message})`, true, { cause: error });
      case SdkErrorCode.InvalidResult:
        return new TasksProtocolError(`${what}: the server sent an invalid reply (${remoteLine(error.message)})`, null, undefined, { cause: error });
      case SdkErrorCode.MethodNotSupportedByProtocolVersion:
      case SdkErrorCode.CapabilityNotSupported:
        return new TasksProtocolError(`${what}: ${error.message}`, ErrorCode.MethodNotFound, undefined, { cause: error });
      case SdkErrorCode.EraNegotiationFailed: {
        const status = (error.cause as { status?: unknown } | undefined)?.status;
        if (typeof status === 'number') return httpError(status, undefined, url, error);
        if (neverDelivered(error)) return new TasksConnectionError(`cannot reach ${url}: ${rootCause(error)}`, true, { cause: error });
        if (error.cause !== undefined) return new TasksConnectionError(`cannot talk MCP with ${url}: ${error.message}`, false, { cause: error });
        // The server answered, but not with a protocol version this connection accepts.
        return new TasksProtocolError(`${url}: ${error.message}`, null, undefined, { cause: error });
      }
      default:
        return new TasksConnectionError(`${what}: ${error.message}`, false, { cause: error });
    }
  }
  if (error instanceof TypeError && error.message === 'fetch failed') {
    return new TasksConnectionError(`cannot reach ${url}: ${rootCause(error) ?? 'network error'}`, true, { cause: error });
  }
  return new TasksConnectionError(`${what}: ${error instanceof Error ? error.message : String(error)}`, false, { cause: error });
}

/**
 * The refusals before anything ran, by code and `data.reason` (this project's application codes, issue 10 §2): both
 * must match, so another server's use of these codes, or a reason added later, is a plain failure, never "nothing
 * ran" said on its behalf.
 */
const REFUSAL_REASONS: ReadonlyMap<number, readonly string[]> = new Map([
  [ErrorCode.QuotaExceeded, [ApplicationErrorReason.ActiveTasks, ApplicationErrorReason.CreateRate]],
  [ErrorCode.ServerBusy, [ApplicationErrorReason.Busy]],
  [ErrorCode.KillSwitch, ['kill_switch', 'canary'] satisfies KillSwitchReason[]],
]);

/** Messages of a store failure from servers that answer without `data.reason` (before stop 43). */
const STORE_FAILURE_MESSAGE = /^Task store (unavailable|failed)\b/;

/**
 * The error for a JSON-RPC error that answers a `tools/call` itself (`code`, `message`, `data` as sent): a
 * {@link ToolCallFailedError} — the call is over and failed — unless the server says its task store failed while it
 * handled the call (`data.reason` `store_unavailable` / `store_failed`, or such a message with `-32603`): then it
 * cannot know whether the call was recorded (a connection lost at COMMIT), so the outcome is unknown
 * ({@link ToolCallOutcomeUnknownError}: the journal's pending entry stays, and a resend with the same idempotency key
 * is safe). A refusal before anything ran — a quota, load shedding, the kill switch or a canary, not the kill
 * switch's `sync_timeout` of a tool that ran — is a {@link ToolCallRefusedError}.
 */
export function callErrorAnswer(name: string, url: string, code: number, message: string, data: JsonValue | undefined, cause?: unknown): Error {
  const reason = typeof data === 'object' && data !== null && !Array.isArray(data) ? data.reason : undefined;
  const storeFailed =
    reason === ApplicationErrorReason.StoreUnavailable ||
    reason === ApplicationErrorReason.StoreFailed ||
    (reason === undefined && code === ErrorCode.InternalError && STORE_FAILURE_MESSAGE.test(message));
  if (storeFailed)
    return new ToolCallOutcomeUnknownError(
      `tools/call ${name} reached ${url}, whose task store failed while handling it (${remoteLine(message)}); it may have been recorded there, and it was not sent again. Check on the server, or resume it (same idempotency key), before calling again.`,
      name,
      cause === undefined ? undefined : { cause },
    );
  const refused = typeof reason === 'string' && REFUSAL_REASONS.get(code)?.includes(reason) === true;
  const Failure = refused ? ToolCallRefusedError : ToolCallFailedError;
  return new Failure(name, `tools/call ${name}: ${remoteLine(message)} (JSON-RPC ${code})`, code, data, cause === undefined ? undefined : { cause });
}
