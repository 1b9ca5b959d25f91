import { ErrorCode } from '../protocol/constants.js';
import { TasksError } from './errors.js';
import type { JsonRpcErrorObject, JsonValue } from './task.js';

/** Codes of the spec-reserved block -32020…-32099 that the spec defines (base 2026-07-28 §8). */
const DEFINED_RESERVED = new Set<number>([ErrorCode.HeaderMismatch, ErrorCode.MissingRequiredClientCapability, ErrorCode.UnsupportedProtocolVersion]);

/**
 * The brand set the MCP SDK puts on its error instances (`Symbol.for`, so every bundled copy of the SDK shares it):
 * the SDK's own `instanceof ProtocolError` is this check. Reading it here instead of importing `ProtocolError` keeps
 * the SDK (≈100 modules, ~0.3 s of CPU) out of every tool thread, which loads this module to map a tool's error;
 * test/core/protocol-errors.test.ts pins it against the SDK's class.
 */
const SDK_ERROR_BRANDS = Symbol.for('mcp.sdk.errorBrands');
const SDK_PROTOCOL_ERROR_BRAND = 'mcp.ProtocolError';

/** Whether `error` is the MCP SDK's `ProtocolError` (or a subclass), by the SDK's own brand. */
function isSdkProtocolError(error: unknown): error is Error & { code: number; data?: unknown } {
  if (typeof error !== 'object' || error === null || !Object.prototype.hasOwnProperty.call(error, SDK_ERROR_BRANDS)) return false;
  const brands = (error as Record<symbol, unknown>)[SDK_ERROR_BRANDS];
  return typeof (brands as { has?: unknown } | undefined)?.has === 'function' && (brands as { has(brand: string): boolean }).has(SDK_PROTOCOL_ERROR_BRAND);
}

/**
 * The JSON-RPC error a thrown value stands for, or `undefined` when it is not a deliberate protocol error.
 * Only our `TasksError` and the SDK's `ProtocolError` count — an arbitrary error that happens to carry a numeric
 * `code` (an HTTP library's `code: 500`, a Node `errno`) is an internal failure, not a wire error. A code from the
 * spec-reserved block -32020…-32099 that the spec does not define becomes `-32603` (base §8: MUST NOT emit those).
 */
export function toProtocolError(error: unknown): JsonRpcErrorObject | undefined {
  if (!(error instanceof TasksError || isSdkProtocolError(error))) return undefined;
  if (!Number.isSafeInteger(error.code)) return undefined;
  const reservedButUndefined = error.code <= -32020 && error.code >= -32099 && !DEFINED_RESERVED.has(error.code);
  const code = reservedButUndefined ? ErrorCode.InternalError : error.code;
  const data = error.data === undefined ? undefined : (error.data as JsonValue);
  return data === undefined ? { code, message: error.message } : { code, message: error.message, data };
}
