import type { JsonRpcErrorObject, TaskStatus } from '../protocol/types.js';

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
}

/** What `callTool` got back: a task to follow, or the tool's result at once (the call ran inline). */
export type CallToolOutcome =
  | {
      kind: 'task';
      taskId: string;
      generation: TaskGeneration;
      /** The task as created (usually `working`). */
      task: TaskSnapshot;
      /** Whether the task was recorded in the journal for `resume` (false when the journal is off or unwritable). */
      journaled: boolean;
    }
  | { kind: 'result'; result: CallToolResult };

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
}
