import { AsyncLocalStorage } from 'node:async_hooks';
import { MessageChannel, type MessagePort, parentPort, threadId, workerData } from 'node:worker_threads';

import { TasksError } from '../core/errors.js';
import type { ExecutionHost, ExecutionOutcome } from '../core/executor.js';
import type { OperationRecord, OperationSettlement } from '../core/ledger.js';
import { StoreError } from '../core/store-error.js';
import type { JsonValue } from '../core/task.js';
import type { ElicitRequest, ElicitResult, OperationSpec } from '../core/tool.js';
import { MAX_RESULT_DEPTH, nestedDeeperThan, tooDeepArgument } from '../core/tool-outcome.js';
import { ToolRegistry } from '../core/tool-registry.js';
import { loadToolSources } from '../core/tool-source.js';
import { keepProcessKillForCrashPoints } from '../ledger/crash-points.js';
import { InProcessExecutor } from './in-process-executor.js';
import {
  type CrossedError,
  type HostMethod,
  type HostReply,
  RUN_STATE,
  RUN_THREAD,
  RunState,
  type ThreadMessage,
  type ThreadNudge,
  type ThreadOutcome,
  type ThreadReport,
  type ThreadTask,
  type ThreadWarmData,
} from './isolated-messages.js';

/**
 * The body of a thread of the isolated executor's pool. {@link warmThread} runs once, when the thread starts (the
 * CommonJS entry `isolated-entry.cts` awaits it before piscina reports the thread ready): it guards the process
 * against the tools, loads the tools from their sources with the same loader as the in-process executor, and
 * reports the outcome to the host, with the host's end of the channel it made for its runs (see {@link ThreadLink}).
 * Each run is then started against a host whose every operation is a message on that channel naming the run,
 * unless the host aborted it before it started (see {@link RunState}).
 *
 * A tool cannot end the process from here: `process.exit`, `process.abort` and signals to the process itself throw
 * in the tool instead, and an error thrown by a tool's callback (a timer, an event handler, a promise nobody awaits)
 * fails the run that scheduled it — found through an `AsyncLocalStorage` — instead of ending the thread.
 */

/** Why a run failed for what its tool did to the thread, rather than for what it threw at its caller. */
type ThreadFault = { kind: 'exit'; call: string } | { kind: 'uncaught' };

/** A run in progress on this thread, as its callbacks see it (through {@link runs}). */
interface ThreadRun {
  toolName: string;
  /** Set once the run's outcome is decided: callbacks that throw later are reported as strays. */
  ended: boolean;
  fault(fault: ThreadFault): void;
}

const runs = new AsyncLocalStorage<ThreadRun>();

/** Thrown into a tool that tries to end the process from its thread. */
class ProcessExitRefused extends Error {
  override readonly name = 'ProcessExitRefused';
  constructor(readonly call: string) {
    super(`${call} is refused in a tool thread: it would end the server process; this run fails instead`);
  }
}

function report(message: ThreadReport, transfer: MessagePort[] = []): void {
  parentPort?.postMessage(message, transfer);
}

/**
 * This thread's end of its channel to the host, made once when the thread warms up (its other end goes to the host in
 * the `warm` report), and what arrives on it: the answers to the context calls of its runs, by a thread-wide call id,
 * and the aborts of its runs, by run id. An answer or an abort for a run that has ended here is dropped.
 */
class ThreadLink {
  private readonly port: MessagePort;
  /** The host's end, to transfer in the `warm` report. */
  readonly hostEnd: MessagePort;
  /** The runs in progress on this thread, by the host's run id: what their abort aborts. */
  private readonly runs = new Map<number, AbortController>();
  private readonly calls = new Map<number, { resolve: (value: JsonValue | undefined) => void; reject: (error: Error) => void }>();
  private lastCall = 0;

  constructor() {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.hostEnd = port2;
    port1.on('message', (message: HostReply) => this.receive(message));
    // piscina's own port keeps the thread alive; this one must not keep a retiring thread from ending.
    port1.unref();
  }

  /** Run `run` has started, with `controller` behind its `ctx.signal`; {@link end} it when its outcome is decided. */
  begin(run: number, controller: AbortController): void {
    this.runs.set(run, controller);
  }

  end(run: number): void {
    this.runs.delete(run);
  }

  /**
   * Post `message` to the host. A log line whose fields nest past {@link MAX_RESULT_DEPTH} goes without them: the
   * host could not read it (a structured clone past the main thread's stack is dropped there, unseen).
   */
  send(message: ThreadMessage): void {
    if (message.op === 'log' && nestedDeeperThan(message.entry.fields, MAX_RESULT_DEPTH - 1)) {
      const entry = { ...message.entry, fields: { droppedFields: `nested more than ${MAX_RESULT_DEPTH} levels deep` } };
      this.port.postMessage({ ...message, entry });
    } else this.port.postMessage(message);
  }

  /**
   * Call `method` of run `run`'s host; settles with the host's answer (its error rebuilt with its type). Arguments
   * nested past {@link MAX_RESULT_DEPTH} are refused here: the host could not read them, and would never answer.
   */
  call(run: number, method: HostMethod, args: JsonValue[]): Promise<JsonValue | undefined> {
    if (nestedDeeperThan(args, MAX_RESULT_DEPTH)) return Promise.reject(new Error(tooDeepArgument(method)));
    return new Promise((resolve, reject) => {
      this.lastCall += 1;
      this.calls.set(this.lastCall, { resolve, reject });
      this.send({ run, op: 'call', id: this.lastCall, method, args });
    });
  }

  private receive(message: HostReply): void {
    if (message.op === 'abort') {
      const controller = this.runs.get(message.run);
      if (controller && !controller.signal.aborted) controller.abort(message.reason);
      return;
    }
    const waiter = this.calls.get(message.id);
    if (!waiter) return;
    this.calls.delete(message.id);
    if (message.ok) waiter.resolve(message.value);
    else waiter.reject(rebuilt(message.error));
  }
}

function messageOf(error: unknown): string {
  return (error instanceof Error ? `${error.name}: ${error.message}` : String(error)).split('\n')[0] ?? '';
}

/** Make the process-ending calls throw in this thread (and fault the run that made them). */
function guardProcess(): void {
  const refuse = (call: string): never => {
    runs.getStore()?.fault({ kind: 'exit', call });
    throw new ProcessExitRefused(call);
  };
  process.exit = ((code?: number | string | null) => refuse(`process.exit(${code ?? ''})`)) as typeof process.exit;
  process.abort = (() => refuse('process.abort()')) as typeof process.abort;
  const kill = process.kill.bind(process);
  keepProcessKillForCrashPoints(kill);
  // pid 0 and negative pids signal a process group, the server's included.
  process.kill = ((pid: number, signal?: string | number) =>
    pid === process.pid || pid <= 0 ? refuse(`process.kill(${pid})`) : kill(pid, signal)) as typeof process.kill;
  process.on('uncaughtException', (error) => {
    const run = runs.getStore();
    if (run && !run.ended) run.fault({ kind: 'uncaught' });
    else report({ mcpTasksThread: 'stray-error', threadId, tool: run?.toolName, error: messageOf(error) });
  });
}

/**
 * Warm this thread up (see the module comment) and return the run handler piscina calls. When the tools cannot be
 * loaded, the handler fails every run with that reason, so a run never waits for a thread that cannot serve it.
 * `startedAt` is the `performance.now()` at which the entry began loading this module: the warm-up report counts from it.
 */
export async function warmThread(startedAt: number): Promise<(task: ThreadTask | ThreadNudge) => Promise<ThreadOutcome>> {
  guardProcess();
  const { sources, moduleOptions } = workerData as ThreadWarmData;
  try {
    const tools = await loadToolSources(sources, moduleOptions);
    const executor = new InProcessExecutor(new ToolRegistry(tools));
    const link = new ThreadLink();
    report({ mcpTasksThread: 'warm', threadId, ok: true, ms: Math.round(performance.now() - startedAt), tools: tools.length, channel: link.hostEnd }, [
      link.hostEnd,
    ]);
    return async (task) => {
      if ('nudge' in task) return NUDGED;
      const took = performance.now();
      const loop = performance.eventLoopUtilization();
      // An outcome piscina cannot post is never answered, and the run would hold its slot for good. The executor makes
      // results and errors JSON, bounded in depth (`MAX_RESULT_DEPTH`); anything else that cannot cross fails the run.
      let outcome = await runInThread(executor, link, task);
      if (outcome.kind !== 'returned' && !crosses(outcome))
        outcome = { kind: 'crashed', message: `Tool ${task.request.toolName} ended in a way that cannot be reported from its thread; only this run failed` };
      return { ...outcome, heldMs: performance.now() - took, idleMs: performance.eventLoopUtilization(loop).idle } satisfies ThreadOutcome;
    };
  } catch (error) {
    report({ mcpTasksThread: 'warm', threadId, ok: false, ms: Math.round(performance.now() - startedAt), error: messageOf(error) });
    return async (task) => {
      if ('nudge' in task) return NUDGED;
      return { kind: 'crashed', message: `Tool ${task.request.toolName} is unavailable: the tool modules failed to load in the executor's thread` };
    };
  }
}

/** Whether `outcome` survives a structured clone (small: a result, the one large kind, is JSON by then). */
function crosses(outcome: ExecutionOutcome): boolean {
  try {
    structuredClone(outcome);
    return true;
  } catch {
    return false;
  }
}

/** What a {@link ThreadNudge} returns (nobody reads it). */
const NUDGED: ExecutionOutcome = { kind: 'aborted', reason: 'nudge' };

/** The outcome of a run that `fault` ended. */
function faultOutcome(toolName: string, fault: ThreadFault): ExecutionOutcome {
  if (fault.kind === 'exit')
    return { kind: 'crashed', message: `Tool ${toolName} called ${fault.call}, which is refused in a tool thread; only this run failed` };
  return {
    kind: 'crashed',
    message: `Tool ${toolName} threw an uncaught error from a callback (a timer, an event handler or a promise nobody awaited); only this run failed`,
  };
}

/** Start one run, unless the host aborted it first (see the module comment); its messages go over `link`. */
async function runInThread(executor: InProcessExecutor, link: ThreadLink, task: ThreadTask): Promise<ExecutionOutcome> {
  const { request, run: id } = task;
  // Which thread took the run, before it leaves `pending`: a host that finds it started sends its abort here.
  Atomics.store(task.state, RUN_THREAD, threadId);
  if (Atomics.compareExchange(task.state, RUN_STATE, RunState.pending, RunState.started) !== RunState.pending)
    return { kind: 'aborted', reason: 'aborted before it started' };
  const controller = new AbortController();
  // Registered before anything can yield, so an abort the host sends once it sees `started` finds the run.
  link.begin(id, controller);
  const call = (method: HostMethod, args: JsonValue[]): Promise<JsonValue | undefined> => link.call(id, method, args);
  const host: ExecutionHost = {
    started: () => link.send({ run: id, op: 'started' }),
    setStatus: (message) => link.send({ run: id, op: 'setStatus', message }),
    progress: (done, total, message) => link.send({ run: id, op: 'progress', done, total, message }),
    log: (entry) => link.send({ run: id, op: 'log', entry }),
    observeShadowJob: (jobId) => link.send({ run: id, op: 'observeShadowJob', jobId }),
    getStep: async (name) => (await call('getStep', [name])) as { value: JsonValue } | undefined,
    putStep: async (name, value) => (await call('putStep', [name, value])) as JsonValue,
    getOwnerState: (key) => call('getOwnerState', [key]),
    putOwnerState: async (key, value) => {
      await call('putOwnerState', [key, value]);
    },
    openOperation: async (spec: OperationSpec) =>
      (await call('openOperation', [spec as unknown as JsonValue])) as unknown as { operation: OperationRecord; opened: boolean },
    settleOperation: async (operationId: string, settlement: Omit<OperationSettlement, 'now'>) =>
      (await call('settleOperation', [operationId, settlement as unknown as JsonValue])) as unknown as OperationRecord | undefined,
    elicit: async (requests: readonly ElicitRequest[]) =>
      (await call('elicit', [requests as unknown as JsonValue])) as unknown as { answers: ElicitResult[] } | { parked: true },
  };
  let faulted: ThreadFault | undefined;
  let onFault: () => void = () => {};
  const faultSeen = new Promise<void>((resolve) => (onFault = resolve));
  const run: ThreadRun = {
    toolName: request.toolName,
    ended: false,
    fault(fault) {
      if (run.ended || faulted) return;
      faulted = fault;
      // The tool is told to stop; the run's outcome is the fault, whatever the tool does next.
      if (!controller.signal.aborted) controller.abort('tool fault');
      onFault();
    },
  };
  try {
    const outcome = await runs.run(run, () => Promise.race([executor.execute(request, host, controller.signal), faultSeen]));
    return faulted ? faultOutcome(request.toolName, faulted) : (outcome as ExecutionOutcome);
  } finally {
    run.ended = true;
    link.end(id);
    Atomics.store(task.state, RUN_STATE, RunState.ended);
  }
}

/** The error a host operation threw, as the tool would have seen it in process. */
function rebuilt(error: CrossedError): Error {
  if (error.code !== undefined) return new TasksError(error.code, error.message, error.data);
  if (error.storeCode !== undefined) return new StoreError(error.storeCode, error.message);
  return new Error(error.message);
}
