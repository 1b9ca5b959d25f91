import type { TaskGeneration, TaskRecord } from '../core/task.js';
import type { RequestTrace } from '../core/trace-context.js';
import type { Actor } from './access.js';

/**
 * The operations of the task service (`service/services.ts`: the tasks/* door, tools/call, the viewer), each
 * reached by every entry path that offers it. The task fallback
 * tools are these operations too: `get_task_status` and `get_task_result` are `get`, `cancel_task` is `cancel`.
 */
export type TaskOperation =
  | 'listTools'
  | 'callTool'
  | 'get'
  | 'list'
  | 'cancel'
  | 'answerInput'
  | 'waitForTerminal'
  | 'subscribe'
  | 'browse'
  | 'inspect'
  | 'watchVisible'
  | 'operations'
  | 'reconcile'
  | 'overview'
  | 'readResource';

/** What a hook learns about one operation before it runs. */
export interface TaskOperationContext {
  readonly operation: TaskOperation;
  /** Who asks: an MCP requestor's identity, or a viewer of the dashboard / admin API (its scopes are re-checked). */
  readonly actor: Actor;
  /**
   * The task generation the operation works in: the MCP request's (`null` for a caller that may not use tasks and
   * for the viewer's own reads, which span both generations); for a viewer's cancel or answer, the task's.
   */
  readonly generation: TaskGeneration | null;
  /** The task the operation is about (absent for `listTools`, `list`, `subscribe` and a `callTool` before its task exists). */
  readonly taskId?: string;
  /** The tool of a `callTool`. */
  readonly tool?: string;
  /** The tasks a `subscribe` asks for. */
  readonly taskIds?: readonly string[];
  /** `callTool` of a tool with a canary: the caller's cohort (a bounded metrics label). */
  readonly cohort?: 'canary' | 'stable';
  /** `callTool`: SHA-256 of the canonical tool + arguments (never the arguments themselves). */
  readonly argumentsDigest?: string;
  /** `answerInput`: the action of each answer by key (never the answered values). */
  readonly answers?: ReadonlyArray<{ key: string; action: string }>;
  /**
   * `callTool`: the request's W3C trace context (`_meta.traceparent`/`tracestate`, both generations). A tracing
   * hook sets `trace.request` to its request span's context before calling `next`; a task created by the call
   * stores `request ?? incoming`, and its runs link to it.
   */
  readonly trace?: RequestTrace;
}

/**
 * The seam of the task service: a hook runs around every operation, for every entry path alike (SDK handlers, the
 * HTTP fast path, stdio, listen streams, v1 elicitation replies), in the order hooks are given — the first one
 * outermost. Authorization (scopes), quotas, idempotency, audit, metrics and tracing plug in here, once.
 * A hook refuses an operation by throwing a `TasksError` (its code and message reach the wire, so say nothing a
 * caller may not learn, e.g. whether another owner's task exists); it must call `next` at most once.
 */
export interface TaskServiceHook {
  around<T>(context: TaskOperationContext, next: () => Promise<T>): Promise<T>;
  /**
   * Called with the task an operation is about once the service has read it (owner and generation already
   * checked) and before it acts on it — every read of the task inside the operation, so a long `waitForTerminal`
   * is judged again on each wake-up. Throw a `TasksError` to refuse (the unknown-task answer, so a refusal never
   * tells a task exists). Synchronous: it judges what the record and the caller say, no lookups.
   */
  admitTask?(context: TaskOperationContext, record: TaskRecord): void;
}

/** Run every hook's {@link TaskServiceHook.admitTask} on `record` (first hook first). */
export function admitTask(hooks: readonly TaskServiceHook[], context: TaskOperationContext, record: TaskRecord): void {
  for (const hook of hooks) hook.admitTask?.(context, record);
}

/** Run `operation` inside `hooks` (first hook outermost). */
export function runHooked<T>(hooks: readonly TaskServiceHook[], context: TaskOperationContext, operation: () => Promise<T>): Promise<T> {
  const at = (index: number): Promise<T> => {
    const hook = hooks[index];
    return hook ? hook.around(context, () => at(index + 1)) : operation();
  };
  return at(0);
}
