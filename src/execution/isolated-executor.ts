import { TasksError } from '../core/errors.js';
import type { ExecutionHost, ExecutionOutcome, ExecutionRequest, Executor, ExecutorReadiness } from '../core/executor.js';
import type { OperationSettlement } from '../core/ledger.js';
import { DEFAULT_MIN_THREADS, DEFAULT_THREAD_HEAP_MB } from '../core/limits.js';
import type { Logger } from '../core/logger.js';
import { requestorTextOf, StoreError } from '../core/store-error.js';
import type { JsonValue } from '../core/task.js';
import type { ElicitRequest, OperationSpec } from '../core/tool.js';
import type { ToolModuleOptions, ToolSource } from '../core/tool-source.js';
import type { WorkerObserver } from '../core/worker-observer.js';
import { CRASH_AT_VARIABLE } from '../ledger/crash-points.js';
import { type CrossedError, type HostMethod, type HostReply, RUN_STATE, RUN_THREAD, RUN_WORDS, RunState, type ThreadMessage } from './isolated-messages.js';
import { type ThreadChannel, ThreadTermination } from './thread-channels.js';
import { WarmThreadPool } from './thread-pool.js';

/** Options of an {@link IsolatedExecutor}. */
export interface IsolatedExecutorOptions {
  /** Where the threads load the tools from: the same sources (and options) the process loaded its registry from. */
  sources: readonly ToolSource[];
  moduleOptions: ToolModuleOptions;
  /** Threads at most (one run per thread): the worker's concurrency plus room for inline calls. */
  maxThreads: number;
  /**
   * Threads that load the tools when the executor is created and stay loaded (the warm pool); more load on demand,
   * up to `maxThreads`, and a run waits for one without that time counting as its own.
   * @defaultValue {@link DEFAULT_MIN_THREADS} (at most `maxThreads`)
   */
  minThreads?: number;
  /**
   * How long a started run whose signal was aborted (cancel, runtime limit, TTL, lost lease, drain) may take to
   * return before its thread is terminated (ms). @defaultValue `DEFAULT_LIMITS.abortGraceMs`
   */
  abortGraceMs: number;
  /** Heap limit of each thread (MB): a tool that exceeds it fails its run. @defaultValue {@link DEFAULT_THREAD_HEAP_MB} */
  threadHeapMb?: number;
  /** The threads' environment. @defaultValue `threadEnvironment(process.env)`: without the server's own secrets */
  env?: Record<string, string>;
  logger: Logger;
  /** piscina's `atomics` mode, for the benchmark only (see `WarmThreadPoolSettings.atomics`). @defaultValue `disabled` */
  atomics?: 'disabled' | 'sync';
  /** Threads that may load the tools at the same time while runs wait (see `WarmThreadPoolSettings.maxLoading`). */
  maxLoading?: number;
  /** How long a run waits for a busy warm thread before one starts for it (see `WarmThreadPoolSettings.threadStartDelayMs`). */
  threadStartDelayMs?: number;
  /** The machine's 1-minute load average (see `WarmThreadPoolSettings.loadAverage`); tests only. */
  loadAverage?: (now: number) => number;
  /** Told about terminated threads (`threadTerminated`, the metric `mcp_tasks_thread_terminations_total`). */
  observer?: Pick<WorkerObserver, 'threadTerminated'>;
}

/** Longest {@link IsolatedExecutor.close} waits for threads still loading the tools before it ends them (ms). */
const CLOSE_LOAD_WAIT_MS = 10_000;

/**
 * The environment of the tool threads: the server's, less what is the server's own secret — every `MCP_TASKS_*`
 * variable (the secret, the at-rest keys, the store URL with its password, tokens), the PostgreSQL password
 * variables the store driver reads, and OTLP exporter headers (which carry collector credentials).
 */
export function threadEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (
      value === undefined ||
      (/^MCP_TASKS_/i.test(name) && name !== CRASH_AT_VARIABLE) ||
      /^PGPASS(WORD|FILE)$/i.test(name) ||
      /^OTEL_EXPORTER_OTLP(_TRACES)?_HEADERS$/i.test(name)
    )
      continue;
    kept[name] = value;
  }
  return kept;
}

/**
 * The {@link Executor} that runs each tool call in a worker thread of a warm piscina pool (issue 11 item 2, issue
 * 22): the event loop that renews leases, delivers cancellation and answers HTTP never waits on tool code, however
 * long a tool computes or blocks, and nothing a tool does in its thread ends the process (see `isolated-thread.ts`).
 *
 * A run's abort reaches it wherever it is. A run that has not started (it waits for a warm thread) ends `aborted` at
 * once and never starts: its per-run state word decides, with the thread, which came first. A started run's tool
 * sees `ctx.signal` abort; if it has not returned `abortGraceMs` later, its thread is terminated (counted by
 * `threadTerminated`) and the run ends `aborted` — the caller settles the task exactly as for a tool that stopped in
 * time. Only such a thread is ever terminated, never one that is loading the tools. A withdrawn run (a drain) ends
 * `aborted` like an aborted one if it has not started, and goes on untouched if it has: the same state word decides.
 */
export class IsolatedExecutor implements Executor {
  private readonly pool: WarmThreadPool;
  /** Runs whose thread was terminated after the grace period (for tests; the metric counts the same). */
  terminated = 0;
  private readonly heapMb: number;

  constructor(private readonly options: IsolatedExecutorOptions) {
    this.heapMb = options.threadHeapMb ?? DEFAULT_THREAD_HEAP_MB;
    this.pool = new WarmThreadPool({
      sources: options.sources,
      moduleOptions: options.moduleOptions,
      minThreads: options.minThreads ?? DEFAULT_MIN_THREADS,
      maxThreads: options.maxThreads,
      threadHeapMb: this.heapMb,
      env: options.env ?? threadEnvironment(process.env),
      logger: options.logger,
      ...(options.atomics ? { atomics: options.atomics } : {}),
      ...(options.maxLoading ? { maxLoading: options.maxLoading } : {}),
      ...(options.threadStartDelayMs === undefined ? {} : { threadStartDelayMs: options.threadStartDelayMs }),
      ...(options.loadAverage ? { loadAverage: options.loadAverage } : {}),
    });
  }

  /**
   * Resolve once the warm pool has loaded the tools in every one of its `minThreads` threads (`serve` and `worker`
   * wait for it before they take work).
   * @throws Error naming the loader's error when a thread cannot load the tools, or after `timeoutMs`.
   */
  warm(timeoutMs: number): Promise<void> {
    return this.pool.warm(timeoutMs);
  }

  readiness(): ExecutorReadiness {
    return this.pool.readiness();
  }

  async execute(request: ExecutionRequest, host: ExecutionHost, signal: AbortSignal, withdraw?: AbortSignal): Promise<ExecutionOutcome> {
    const aborted = (): ExecutionOutcome => ({ kind: 'aborted', reason: String(signal.reason) });
    if (signal.aborted) return aborted();
    if (withdraw?.aborted) return { kind: 'aborted', reason: String(withdraw.reason) };
    const state = new Int32Array(new SharedArrayBuffer(RUN_WORDS * Int32Array.BYTES_PER_ELEMENT));
    const { channels } = this.pool;
    const run = channels.listen((message, channel) => {
      if (message.op === 'started') host.started?.();
      else this.answer(message, host, channel);
    }, state);
    const termination = new ThreadTermination();
    let grace: NodeJS.Timeout | undefined;
    let endBeforeStart: (outcome: ExecutionOutcome) => void = () => {};
    const beforeStart = new Promise<ExecutionOutcome>((resolve) => (endBeforeStart = resolve));
    const onAbort = (): void => {
      if (Atomics.compareExchange(state, RUN_STATE, RunState.pending, RunState.abortedBeforeStart) === RunState.pending) {
        // Not started: it ends now, and its thread (if it ever gets it) skips it. Nothing is terminated.
        endBeforeStart(aborted());
        return;
      }
      // Started: the thread that took it wrote its id before it started it.
      channels.post(Atomics.load(state, RUN_THREAD), { op: 'abort', run, reason: String(signal.reason) } satisfies HostReply);
      grace = setTimeout(() => {
        // A run that ended has stopped in time, even if this loop has not read its outcome yet.
        if (Atomics.load(state, RUN_STATE) !== RunState.ended) termination.terminate('abort grace elapsed');
      }, this.options.abortGraceMs);
      grace.unref();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    // Withdrawn: ends like an abort if it has not started; a started run goes on untouched.
    const onWithdraw = (): void => {
      if (Atomics.compareExchange(state, RUN_STATE, RunState.pending, RunState.abortedBeforeStart) === RunState.pending)
        endBeforeStart({ kind: 'aborted', reason: String(withdraw?.reason) });
    };
    withdraw?.addEventListener('abort', onWithdraw, { once: true });
    // The outcome comes on piscina's port; what the tool sent on its thread's channel before it ended (its start, its
    // last status, log lines) may still wait there: take it first. (A thread that ended has had its channel drained.)
    const drain = (): void => channels.drain(Atomics.load(state, RUN_THREAD));
    // A run withdrawn or aborted while it waited for a thread has already ended through `beforeStart`.
    const notPending = (): boolean => Atomics.load(state, RUN_STATE) !== RunState.pending;
    const outcome = this.pool.run({ request, run, state }, termination, notPending).then(
      (ended) => {
        drain();
        return signal.aborted || ended === undefined ? aborted() : ended;
      },
      (error: unknown) => {
        drain();
        return this.ended(error, request, signal, termination.aborted);
      },
    );
    try {
      return await Promise.race([outcome, beforeStart]);
    } finally {
      clearTimeout(grace);
      signal.removeEventListener('abort', onAbort);
      withdraw?.removeEventListener('abort', onWithdraw);
      channels.forget(run);
    }
  }

  /** The outcome of a run whose thread ended under it (see the class comment). */
  private ended(error: unknown, request: ExecutionRequest, signal: AbortSignal, terminated: boolean): ExecutionOutcome {
    const { logger } = this.options;
    const aborted: ExecutionOutcome = { kind: 'aborted', reason: String(signal.reason) };
    if (terminated) {
      this.terminated += 1;
      this.options.observer?.threadTerminated?.(request.toolName);
      logger.warn(
        { ...request.logFields, reason: String(signal.reason), abortGraceMs: this.options.abortGraceMs },
        'tool ignored its abort signal; its thread was terminated',
      );
      return aborted;
    }
    if (signal.aborted) return aborted;
    if ((error as { code?: unknown } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
      logger.error({ ...request.logFields, threadHeapMb: this.heapMb }, 'tool ran out of memory in its thread; the thread is replaced');
      return { kind: 'crashed', message: `Tool ${request.toolName} ran out of memory (its thread's heap limit is ${this.heapMb} MB); only this run failed` };
    }
    logger.error({ ...request.logFields, err: error }, 'tool thread failed');
    return { kind: 'crashed', message: `Tool ${request.toolName} failed: its thread stopped unexpectedly; only this run failed` };
  }

  /** Answer one context operation of a running tool on its thread's `channel`. */
  private answer(message: Exclude<ThreadMessage, { op: 'started' }>, host: ExecutionHost, channel: ThreadChannel): void {
    if (message.op === 'setStatus') host.setStatus(message.message);
    else if (message.op === 'progress') host.progress(message.done, message.total, message.message);
    else if (message.op === 'log') host.log(message.entry);
    else if (message.op === 'observeShadowJob') host.observeShadowJob?.(message.jobId);
    else {
      const [first, second] = message.args;
      const operations: Record<HostMethod, () => Promise<unknown>> = {
        getStep: () => host.getStep(String(first)),
        putStep: () => host.putStep(String(first), second as JsonValue),
        getOwnerState: () => host.getOwnerState(String(first)),
        putOwnerState: () => host.putOwnerState(String(first), second as JsonValue),
        elicit: () => host.elicit(first as unknown as readonly ElicitRequest[]),
        openOperation: () => host.openOperation(first as unknown as OperationSpec),
        settleOperation: () => host.settleOperation(String(first), second as unknown as Omit<OperationSettlement, 'now'>),
      };
      const work = Promise.resolve().then(operations[message.method]);
      // An answer that cannot be posted (a structured clone past the stack) is answered as that error, never left
      // unanswered — nor thrown from here as an unhandled rejection.
      const fail = (error: unknown): void => channel.post({ op: 'reply', id: message.id, ok: false, error: crossed(error) });
      work.then((value) => {
        try {
          channel.post({ op: 'reply', id: message.id, ok: true, value: value as JsonValue | undefined });
        } catch (error) {
          fail(error);
        }
      }, fail);
    }
  }

  /** End the pool's threads (runs in progress were aborted by their owners first); threads still loading finish first. */
  async close(): Promise<void> {
    await this.pool.close(CLOSE_LOAD_WAIT_MS);
  }
}

function crossed(error: unknown): CrossedError {
  if (error instanceof TasksError) return { message: error.message, code: error.code, ...(error.data === undefined ? {} : { data: error.data }) };
  // A tool is a requestor-side audience (the run's host logged the whole error, see `run-host.ts`).
  if (error instanceof StoreError) return { message: requestorTextOf(error), storeCode: error.code };
  return { message: error instanceof Error ? error.message : String(error) };
}
