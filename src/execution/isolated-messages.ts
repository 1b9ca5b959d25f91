import type { ExecutionLogEntry } from '../core/executor.js';
import type { StoreErrorCode } from '../core/store-error.js';
import type { JsonValue } from '../core/task.js';

/**
 * The messages between an {@link IsolatedExecutor} and the thread that runs one tool call, over the call's own
 * `MessagePort`. Everything is structured-cloneable JSON; a thread never sees a store, a lease or a socket.
 */

/** The context operations that wait for the host's answer. */
export type HostMethod = 'getStep' | 'putStep' | 'getOwnerState' | 'putOwnerState' | 'elicit' | 'openOperation' | 'settleOperation';

/** Thread → host: a context operation of the running tool. `call`s are answered by a {@link HostReply} with the same `id`. */
export type ThreadMessage =
  | { op: 'setStatus'; message: string }
  | { op: 'progress'; done: number; total: number | undefined; message: string }
  | { op: 'log'; entry: ExecutionLogEntry }
  | { op: 'call'; id: number; method: HostMethod; args: JsonValue[] };

/** A thrown error as it crosses the port: a coded one (`TasksError`) keeps its JSON-RPC code and data. */
export interface CrossedError {
  message: string;
  /** A `TasksError`'s JSON-RPC code. */
  code?: number;
  data?: JsonValue;
  /** A `StoreError`'s code (e.g. `invalid` for an owner-state document over its limit). */
  storeCode?: StoreErrorCode;
}

/** Host → thread: the answer of a `call`, or the run's abort (the tool sees `ctx.signal.reason`). */
export type HostReply =
  | { op: 'reply'; id: number; ok: true; value: JsonValue | undefined }
  | { op: 'reply'; id: number; ok: false; error: CrossedError }
  | { op: 'abort'; reason: string };
