import { ProtocolError } from '@modelcontextprotocol/server';
import { TasksError } from './errors.js';
import type { JsonRpcErrorObject, JsonValue } from './task.js';
import { ErrorCode } from '../protocol/constants.js';

/** Codes of the spec-reserved block -32020…-32099 that the spec defines (base 2026-07-28 §8). */
const DEFINED_RESERVED = new Set<number>([ErrorCode.HeaderMismatch, ErrorCode.MissingRequiredClientCapability, ErrorCode.UnsupportedProtocolVersion]);

/**
 * The JSON-RPC error a thrown value stands for, or `undefined` when it is not a deliberate protocol error.
 * Only our `TasksError` and the SDK's `ProtocolError` count — an arbitrary error that happens to carry a numeric
 * `code` (an HTTP library's `code: 500`, a Node `errno`) is an internal failure, not a wire error. A code from the
 * spec-reserved block -32020…-32099 that the spec does not define becomes `-32603` (base §8: MUST NOT emit those).
 */
export function toProtocolError(error: unknown): JsonRpcErrorObject | undefined {
  if (!(error instanceof TasksError || error instanceof ProtocolError)) return undefined;
  if (!Number.isSafeInteger(error.code)) return undefined;
  const reservedButUndefined = error.code <= -32020 && error.code >= -32099 && !DEFINED_RESERVED.has(error.code);
  const code = reservedButUndefined ? ErrorCode.InternalError : error.code;
  const data = error.data === undefined ? undefined : (error.data as JsonValue);
  return data === undefined ? { code, message: error.message } : { code, message: error.message, data };
}
