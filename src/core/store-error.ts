/**
 * Why a {@link TaskStore} call failed, independent of the wire (the server maps each code to a JSON-RPC error in
 * one place, `server/store-errors.ts`):
 * - `conflict`: a uniqueness rule of the port refused the write, e.g. an idempotency key already taken by the same
 *   owner. Nothing was written. Not retryable as is.
 * - `invalid`: the caller broke a precondition of the port (an outcome that does not fit the target status, an input
 *   request key used twice, a park with no request). Nothing was written. A bug of the caller, not of the backend.
 * - `unavailable`: the backend could not be reached or did not answer in time (connection refused or lost, server
 *   shutting down, pool exhausted past its timeout; at open, a migration that could not take a table lock on any
 *   try). Whether a write committed is unknown only when the connection was lost during COMMIT; every write of the
 *   port is conditional, so a retry is safe. Retryable.
 * - `schema_mismatch`: the database holds a schema this code must not run on: a newer migration marked breaking (or
 *   not marked) for older code, or a known version under another name (not an mcp-tasks database). A newer schema
 *   whose newer migrations are all marked compatible is no mismatch (`core/schema-compatibility.ts`). Raised when a
 *   store opens; nothing is written.
 * - `gone`: a create that requires its v1 session (`NewTask.requireSession`) found no record of that session (it
 *   was deleted or pruned). Nothing was written. The adapter answers the request as one of an unknown session.
 * - `fault`: any other storage failure (SQL error, disk full, the store was closed).
 */
export type StoreErrorCode = 'conflict' | 'invalid' | 'unavailable' | 'schema_mismatch' | 'gone' | 'fault';

/**
 * The one error type of the store port. The message is one line meant for operators and logs; the driver error,
 * if any, is the `cause`. `requestorMessage` is what a requestor (and a model reading its error) may see of a
 * `fault` or `schema_mismatch` instead: what failed, never the driver's detail or advice for the operator (see
 * `server/store-errors.ts`); without it they see "Task store failed".
 */
export class StoreError extends Error {
  override readonly name = 'StoreError';
  readonly requestorMessage: string | undefined;
  /**
   * A `fault` because the backend has no room for the write (SQLite `SQLITE_FULL`, PostgreSQL 53100 `disk_full`):
   * running the same write again fails the same way until an operator frees space, unlike a fault that passes (a
   * lock timeout, a deadlock past its retries, out of memory). `false` for every other error.
   */
  readonly outOfSpace: boolean;
  constructor(
    readonly code: StoreErrorCode,
    message: string,
    options?: { cause?: unknown; requestorMessage?: string; outOfSpace?: boolean },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.requestorMessage = options?.requestorMessage;
    this.outOfSpace = options?.outOfSpace === true;
  }
}

/**
 * What a requestor (a client, a model reading its error, a tool) may be told of `error`: the message of a
 * `conflict`, `invalid` or `gone` (written for the caller); "Task store unavailable" for `unavailable` (its message
 * names the host and port); the `requestorMessage` of a `fault` or `schema_mismatch`, else "Task store failed".
 */
export function requestorTextOf(error: StoreError): string {
  if (error.code === 'unavailable') return 'Task store unavailable';
  return error.code === 'fault' || error.code === 'schema_mismatch' ? (error.requestorMessage ?? 'Task store failed') : error.message;
}

/**
 * `error` as a tool may get it: its code and {@link requestorTextOf} its message, kept as `requestorMessage` too so
 * that a later crossing (to a tool's thread) tells the same; no `cause` (the driver's error).
 */
export function toolFacingError(error: StoreError): StoreError {
  const text = requestorTextOf(error);
  return new StoreError(error.code, text, { requestorMessage: text });
}

/** Whether `error` is a {@link StoreError}, optionally of one of `codes`. */
export function isStoreError(error: unknown, ...codes: StoreErrorCode[]): error is StoreError {
  return error instanceof StoreError && (codes.length === 0 || codes.includes(error.code));
}
