import type { Logger } from '../core/logger.js';
import { toProtocolError } from '../core/protocol-errors.js';
import { requestorTextOf, StoreError } from '../core/store-error.js';
import type { JsonRpcErrorObject } from '../core/task.js';
import { ApplicationErrorReason, ErrorCode } from '../protocol/constants.js';

/**
 * The one place where the store's error codes meet JSON-RPC (base 2026-07-28 §8):
 * - `conflict` (an idempotency key already used for another request) → `-32602` with the store's message;
 * - `unavailable` → `-32603` "Task store unavailable" (no driver detail: host names and ports stay in the log),
 *   `data.reason` `store_unavailable`;
 * - `gone` (a create of a v1 session deleted meanwhile) → `-32001` "Session not found", the answer of an unknown
 *   session (the HTTP fast path sends it with status 404);
 * - `invalid` → `-32603` with the store's one-line message (it names the caller's mistake: a limit, a precondition);
 * - `fault`, `schema_mismatch` → `-32603` with the error's `requestorMessage` ("Task store failed to write", "This
 *   server cannot decrypt this task's stored data"), else "Task store failed": their message is the operator's — the
 *   driver's text (constraint and table names, file paths) and advice ("add its key to …", "restart the process")
 *   that a model must not read as an instruction (issue 23 §3). The whole message goes to the log. `data.reason`
 *   `store_failed`: with `store_unavailable`, what tells a requestor that a call's outcome is unknown (stop 43).
 */
export function storeErrorToWire(error: StoreError): JsonRpcErrorObject {
  switch (error.code) {
    case 'conflict':
      return { code: ErrorCode.InvalidParams, message: error.message };
    case 'gone':
      return { code: ErrorCode.SessionNotFound, message: 'Session not found' };
    case 'unavailable':
      return { code: ErrorCode.InternalError, message: requestorTextOf(error), data: { reason: ApplicationErrorReason.StoreUnavailable } };
    case 'fault':
    case 'schema_mismatch':
      return { code: ErrorCode.InternalError, message: requestorTextOf(error), data: { reason: ApplicationErrorReason.StoreFailed } };
    default:
      return { code: ErrorCode.InternalError, message: requestorTextOf(error) };
  }
}

/**
 * The JSON-RPC error a request handler's thrown value stands for: a {@link StoreError} as mapped above (logged
 * unless it is a conflict, which is the requestor's doing), a deliberate protocol error as itself, and `undefined`
 * for anything else (the caller logs it and answers a generic `-32603`).
 */
export function wireErrorOf(error: unknown, logger: Logger): JsonRpcErrorObject | undefined {
  if (error instanceof StoreError) {
    if (error.code !== 'conflict' && error.code !== 'gone') logger.error({ err: error, storeError: error.code }, 'task store failed');
    return storeErrorToWire(error);
  }
  return toProtocolError(error);
}
