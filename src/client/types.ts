import type { OperationMetaEntry } from '../protocol/constants.js';
import type { JsonRpcErrorObject, TaskStatus } from '../protocol/types.js';
import type { Budgets } from './budgets.js';
import type { HandoffRecord } from './router.js';

export type { JsonRpcErrorObject, TaskStatus };

/** Task generation of a connection: `v1` = 2025-11-25 experimental tasks, `v2` = 2026-07-28 Tasks Extension. */
export type TaskGeneration = 'v1' | 'v2';

/**
 * Which protocol to speak: `auto` probes 2026-07-28 (`server/discover`) and falls back to a 2025-11-25
 * `initialize` session; a version pins it (no fallback).
 */
export type ProtocolChoice = 'auto' | '2025-11-25' | '2026-07-28';

/** A `CallToolResult` as the server sent it (without the 2026-07-28 `resultType` envelope field). */
export interface CallToolResult {
  content: Array<{ type: string; [key: string]: unknown }>;
  structuredContent?: Record<string, unknown>;
  /** The tool ran and reported a failure (a tool error, not a protocol error). */
  isError?: boolean;
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

/**
 * One observation of a task, the same shape for both generations (v1 `ttl`/`pollInterval` are renamed).
 * Times are ISO 8601 strings exactly as the server sent them; durations are milliseconds.
 */
export interface TaskSnapshot {
  taskId: string;
  status: TaskStatus;
  /** Human-readable progress or diagnostic text from the server. */
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  /** Retention from `createdAt` in ms; `null` = unlimited. */
  ttlMs: number | null;
  /** The server's polling hint in ms, when it gave one. */
  pollIntervalMs?: number;
  /** v2 only: the inline `CallToolResult` of a `completed` task. */
  result?: CallToolResult;
  /** v2 only: the inline JSON-RPC error of a `failed` task. */
  error?: JsonRpcErrorObject;
  /**
   * v2 only, on `input_required`: every outstanding question, key → `{method, params}` (E19). On 2025-11-25 the
   * questions arrive as requests on the `tasks/result` stream instead and are not part of a snapshot.
   */
  inputRequests?: Record<string, { method: string; params?: Record<string, unknown> }>;
  /**
   * The task's domain operations, when the server reports them (`_meta["dev.mcp-tasks/operations"]`, either
   * generation, any status): what the system of record did, which the task status alone does not say.
   */
  operations?: OperationMetaEntry[];
  /**
   * The run this status belongs to, 1 for the first, when the server reports it (`_meta["dev.mcp-tasks/attempt"]`,
   * either generation): a larger number than seen before means the server re-ran the task (its process died).
   */
  attempt?: number;
}

/** The keys that identify one call: sent in its `_meta` and kept in the journal. */
export interface CallIdentity {
  /** Sent as `_meta["dev.mcp-tasks/idempotency-key"]`; a server that honours it never runs the call twice. */
  idempotencyKey: string;
  /** Sent as `_meta["dev.mcp-tasks/correlation-id"]`, to find the call in the server's logs. */
  correlationId: string;
}

/**
 * What `callTool` got back:
 * - `task`: a task to follow;
 * - `result`: the tool's result at once — `route: 'sync'` when this client chose an inline call (policy
 *   `forbidden`, the `'sync'` fallback, or a connection without tasks and no policy), `'task'` when it asked for a
 *   task and the server answered inline;
 * - `jobApi`: the value the caller's job API returned;
 * - `handoff`: a record for a person; nothing was sent.
 */
export type CallToolOutcome =
  | (CallIdentity & {
      kind: 'task';
      taskId: string;
      generation: TaskGeneration;
      /** The task as created (usually `working`). */
      task: TaskSnapshot;
      /** Whether the task was recorded in the journal for `resume` (false when the journal is off or unwritable). */
      journaled: boolean;
      /**
       * Text for the model while the task runs: v1 `_meta["io.modelcontextprotocol/model-immediate-response"]` of the
       * `CreateTaskResult` (R15), on v2 the created task's `statusMessage`. Absent when the server gave none.
       */
      immediateResponse?: string;
    })
  | (CallIdentity & { kind: 'result'; result: CallToolResult; route: 'task' | 'sync' })
  | (CallIdentity & { kind: 'jobApi'; value: unknown; missing: string[] })
  | { kind: 'handoff'; handoff: HandoffRecord };

/** A change in reachability while a task is observed: the client says so instead of freezing. */
export type ConnectionEvent =
  | {
      state: 'unreachable';
      taskId: string;
      /** The failure (a retryable TasksConnectionError). */
      error: Error;
      /** When the outage began (epoch ms). */
      since: number;
      /** The next attempt comes after this many ms. */
      retryInMs: number;
    }
  | { state: 'reachable'; taskId: string; /** How long it was unreachable, ms. */ downMs: number };

/** Options of `waitForTask` and `resume`. Without `deadline`/`timeoutMs` the wait is unbounded. */
export interface WaitOptions {
  /** Absolute deadline, epoch milliseconds. */
  deadline?: number;
  /** Relative deadline in ms from the call; the earlier of `deadline` and this wins. */
  timeoutMs?: number;
  /** Aborts the wait (never the task); the wait rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called with every snapshot observed (polled or pushed), in order. Exceptions thrown by it abort the wait. */
  onUpdate?: (snapshot: TaskSnapshot) => void;
  /**
   * Observe the task through 2026-07-28 `subscriptions/listen` notifications instead of polling, when the server
   * accepts the subscription; polling takes over when it refuses or the stream ends early. No effect on v1.
   * @defaultValue false
   */
  notifications?: boolean;
  /** Status-read, result and reconciliation budgets (the create budget belongs to `callTool`). */
  budgets?: Budgets;
  /** Hears when the server becomes unreachable (each retry) and reachable again; the task keeps its id meanwhile. */
  onConnection?: (event: ConnectionEvent) => void;
}
