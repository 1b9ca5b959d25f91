import type { MessagePort } from 'node:worker_threads';

import type { ExecutionLogEntry, ExecutionOutcome, ExecutionRequest } from '../core/executor.js';
import type { StoreErrorCode } from '../core/store-error.js';
import type { JsonValue } from '../core/task.js';
import type { ToolModuleOptions, ToolSource } from '../core/tool-source.js';

/**
 * The messages between an {@link IsolatedExecutor} and its threads. Over the thread's own channel (a `MessageChannel`
 * the thread creates when it warms up and whose host end travels in its `warm` report, one per thread for its whole
 * life): context operations, a run's start and its abort, each naming its run by the host's run id. Per thread, over
 * the thread's `parentPort` (the pool's `message` event): the outcome of its warm-up and errors thrown by tool
 * callbacks outside any run. The run itself (request, run id, state word) goes with the piscina task, with nothing to
 * transfer (a `MessageChannel` made and transferred per run cost about 30 µs of CPU per run; issue 25).
 * Everything is structured-cloneable JSON (and one shared state word per run); a thread never sees a store, a lease
 * or a socket.
 */

/** The context operations that wait for the host's answer. */
export type HostMethod = 'getStep' | 'putStep' | 'getOwnerState' | 'putOwnerState' | 'elicit' | 'openOperation' | 'settleOperation';

/**
 * Thread → host, on the thread's channel, for run `run`: `started` once the run has started (the tool's code runs
 * from now on; the host arms the runtime limit), then the context operations of the running tool. `call`s are
 * answered by a {@link HostReply} with the same `id` (unique on its thread). A message of a run the host no longer
 * knows (a callback the tool left behind), or of a run another thread took, is dropped, and its `call` answered with
 * an error: it never reaches another run.
 */
export type ThreadMessage = { run: number } & (
  | { op: 'started' }
  | { op: 'setStatus'; message: string }
  | { op: 'progress'; done: number; total: number | undefined; message: string }
  | { op: 'log'; entry: ExecutionLogEntry }
  | { op: 'observeShadowJob'; jobId: string }
  | { op: 'call'; id: number; method: HostMethod; args: JsonValue[] }
);

const HOST_METHODS: ReadonlySet<string> = new Set<HostMethod>([
  'getStep',
  'putStep',
  'getOwnerState',
  'putOwnerState',
  'elicit',
  'openOperation',
  'settleOperation',
]);

/**
 * Whether a message on a thread's channel has the shape of a {@link ThreadMessage}. The channel is reachable by the
 * thread's tools (its port is a handle of the thread), so the host checks every message before it reads a field:
 * anything else is dropped, never thrown in the host's event loop.
 */
export function isThreadMessage(message: unknown): message is ThreadMessage {
  if (typeof message !== 'object' || message === null) return false;
  const m = message as Record<string, unknown>;
  if (typeof m.run !== 'number') return false;
  switch (m.op) {
    case 'started':
      return true;
    case 'setStatus':
      return typeof m.message === 'string';
    case 'progress':
      return typeof m.done === 'number' && (m.total === undefined || typeof m.total === 'number') && typeof m.message === 'string';
    case 'log':
      return typeof m.entry === 'object' && m.entry !== null;
    case 'observeShadowJob':
      return typeof m.jobId === 'string';
    case 'call':
      return typeof m.id === 'number' && typeof m.method === 'string' && HOST_METHODS.has(m.method) && Array.isArray(m.args);
    default:
      return false;
  }
}

/** A thrown error as it crosses the port: a coded one (`TasksError`) keeps its JSON-RPC code and data. */
export interface CrossedError {
  message: string;
  /** A `TasksError`'s JSON-RPC code. */
  code?: number;
  data?: JsonValue;
  /** A `StoreError`'s code (e.g. `invalid` for an owner-state document over its limit). */
  storeCode?: StoreErrorCode;
}

/**
 * Host → thread, on the thread's channel: the answer of a `call` (by its thread-wide `id`), or the abort of run `run`
 * (the tool sees `ctx.signal.reason`; an abort of a run the thread no longer runs is dropped).
 */
export type HostReply =
  | { op: 'reply'; id: number; ok: true; value: JsonValue | undefined }
  | { op: 'reply'; id: number; ok: false; error: CrossedError }
  | { op: 'abort'; run: number; reason: string };

/**
 * Thread → host, on the thread's `parentPort`: the warm-up ended (`ok`: the tools are loaded and the thread takes
 * runs over `channel`, the host's end of its channel, transferred; else `error`, the loader's message, and the
 * thread fails every run it gets without a channel), or a tool callback threw while no run of that tool was in
 * progress (`tool`: the tool whose run scheduled it, when known). `threadId` is the thread's `threadId`.
 */
export type ThreadReport =
  | { mcpTasksThread: 'warm'; threadId: number; ok: true; ms: number; tools: number; channel: MessagePort }
  | { mcpTasksThread: 'warm'; threadId: number; ok: false; ms: number; error: string }
  | { mcpTasksThread: 'stray-error'; threadId: number; tool: string | undefined; error: string };

/** What every thread of a pool is started with (`workerData`): where it loads the tools from, once. */
export interface ThreadWarmData {
  sources: ToolSource[];
  moduleOptions: ToolModuleOptions;
}

/**
 * The per-run state word (element {@link RUN_STATE} of an `Int32Array` over a `SharedArrayBuffer` of
 * {@link RUN_WORDS} elements), moved by `Atomics.compareExchange` on both sides, so a run is either started by its
 * thread or aborted before it started, never both: the thread moves `pending → started` before it runs the tool; the
 * host moves `pending → aborted` when the run's signal aborts first (the run then ends at once, and the thread skips
 * it when it gets it). The thread moves `started → ended` as soon as the run's outcome is decided: a host whose event
 * loop was too busy to read the outcome before the abort grace elapsed sees that the tool did stop, and does not
 * terminate its thread.
 */
export const RunState = { pending: 0, started: 1, abortedBeforeStart: 2, ended: 3 } as const;

/** Index of the {@link RunState} word in a run's state array. */
export const RUN_STATE = 0;
/**
 * Index of the word in which the thread that took the run stores its `threadId`, before it moves the run out of
 * `pending`: a host that finds the run started knows from it which thread's channel carries the run's abort and its
 * messages (0 = no thread took it yet; thread ids start at 1).
 */
export const RUN_THREAD = 1;
/**
 * Words in a run's state array. A buffer per run rather than a slot in one shared buffer: allocating and cloning it
 * costs about 1 µs of CPU per run over a plain number field (a `MessageChannel` transferred with the run cost 30 µs;
 * measured, issue 25), and a slot would have to outlive a run aborted before start until its thread had skipped it.
 */
export const RUN_WORDS = 2;

/** One run handed to a thread. */
export interface ThreadTask {
  request: ExecutionRequest;
  /** The host's id of this run, which every message about it on the thread's channel carries. */
  run: number;
  /** This run's state array ({@link RUN_STATE}, {@link RUN_THREAD}). */
  state: Int32Array;
}

/**
 * What a thread returns for a run: its outcome, how long the run held the thread (`heldMs`, measured in the thread
 * from taking the run to deciding its outcome) and how much of that the thread's event loop sat idle (`idleMs`: the
 * tool waited on I/O or timers). The pool tells from them whether runs wait for threads that tools hold, and whether
 * a new thread would need CPU that the machine lacks (see `WarmThreadPool`); it strips both before the outcome
 * reaches the executor.
 */
export type ThreadOutcome = ExecutionOutcome & { heldMs?: number; idleMs?: number };

/**
 * A task with no run, posted to the pool when a thread turns warm while runs wait: piscina hands queued runs out only
 * when a thread becomes ready or finishes a task, and counts the threads it starts with as ready at once, before they
 * loaded anything. This task's end makes it look at its queue again.
 */
export interface ThreadNudge {
  nudge: true;
}

/** Whether a message on a thread's `parentPort` is one of ours (piscina sends its own there too). */
export function isThreadReport(message: unknown): message is ThreadReport {
  return typeof message === 'object' && message !== null && 'mcpTasksThread' in message;
}
