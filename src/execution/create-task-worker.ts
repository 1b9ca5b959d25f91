import { type Clock, systemClock } from '../core/clock.js';
import type { PathConfinement } from '../core/confinement.js';
import { TaskEventFeed } from '../core/event-feed.js';
import type { Executor } from '../core/executor.js';
import { newInstanceId } from '../core/ids.js';
import { resolveLimits, type TasksServerLimits } from '../core/limits.js';
import { type Logger, silentLogger } from '../core/logger.js';
import type { RunTracer } from '../core/run-tracer.js';
import type { TaskStore } from '../core/store.js';
import type { AnyToolDefinition } from '../core/tool.js';
import { ToolRegistry } from '../core/tool-registry.js';
import type { WorkerObserver } from '../core/worker-observer.js';
import { InProcessExecutor } from './in-process-executor.js';
import type { ShadowSettings } from './shadow-watch.js';
import { StructuredContentBound } from './structured-content-bound.js';
import { Sweeper } from './sweeper.js';
import { TaskWorker } from './task-worker.js';

/** Options of {@link createTaskWorker}. */
export interface CreateTaskWorkerOptions {
  /** Where tasks live (`openSqliteTaskStore`, `openPostgresTaskStore` from `mcp-tasks/postgres`). Not closed by the worker. */
  store: TaskStore;
  /** The tools it runs: the same set, from the same settings, as the API processes serve (see `ToolSource`). */
  tools: readonly AnyToolDefinition[];
  /** Runs at once. @defaultValue `limits.concurrency` (16) */
  concurrency?: number;
  /** Absolute directories tools may read. @defaultValue [] */
  roots?: readonly string[];
  /** Absolute paths no tool may touch whatever the roots: the server's own state (see `serverStatePaths`). @defaultValue [] */
  deniedPaths?: readonly string[];
  /** Limits and timings (lease, runtime limit, attempts, intervals); the same resolver as the server's. */
  limits?: Partial<TasksServerLimits>;
  /** Lease owner id. @defaultValue random */
  instanceId?: string;
  /** Runs the tools. @defaultValue in process */
  executor?: Executor;
  /** Also sweep expired and timed-out tasks (no lease is held for it). @defaultValue true */
  sweeper?: boolean;
  /** @defaultValue a silent logger */
  logger?: Logger;
  /** @defaultValue the system clock */
  clock?: Clock;
  /** Told about runs, lease takeovers and cancellations (e.g. the Prometheus metrics of `mcp-tasks worker`). @defaultValue none */
  observer?: WorkerObserver;
  /** Traces runs, steps and operations (e.g. `TasksTracing.runTracer()`). @defaultValue none */
  tracer?: RunTracer;
  /** Shadow mode: compare the tasks of these tools with the jobs they name (issue 15 item 8). @defaultValue none */
  shadow?: ShadowSettings;
}

/** A running worker (see {@link createTaskWorker}). */
export interface TaskWorkerHandle {
  readonly worker: TaskWorker;
  readonly instanceId: string;
  /** Stop claiming, let runs finish for up to `ms`, abort the rest with `shutdown`, release their leases; then stop. */
  drain(ms: number): Promise<void>;
  /** `drain(0)`. */
  close(): Promise<void>;
}

/** The parts of one process that run tasks: a worker and (optionally) a sweeper, sharing the process's feed. */
export interface ExecutionParts {
  worker: TaskWorker;
  sweeper: Sweeper | undefined;
  /** Start both (the feed must have been started). */
  start(): Promise<void>;
  /** Drain the worker for up to `ms`, then stop the sweeper. */
  stop(ms: number): Promise<void>;
}

/**
 * Build the worker and sweeper of a process from resolved limits: used by {@link createTaskWorker} and by an
 * embedded worker of `createTasksServer`, so both run tasks with the same settings.
 */
export function createExecutionParts(input: {
  store: TaskStore;
  tools: ToolRegistry;
  feed: TaskEventFeed;
  limits: Readonly<TasksServerLimits>;
  instanceId: string;
  confinement: PathConfinement;
  executor: Executor;
  sweeper: boolean;
  clock: Clock;
  logger: Logger;
  observer?: WorkerObserver | undefined;
  tracer?: RunTracer | undefined;
  shadow?: ShadowSettings | undefined;
}): ExecutionParts {
  const { limits } = input;
  const worker = new TaskWorker({
    store: input.store,
    tools: input.tools,
    executor: new StructuredContentBound(input.executor, { maxBytes: limits.structuredContentMaxBytes, logger: input.logger, observer: input.observer }),
    feed: input.feed,
    settings: {
      instanceId: input.instanceId,
      concurrency: limits.concurrency,
      leaseMs: limits.leaseMs,
      recoveryIntervalMs: limits.recoveryIntervalMs,
      claimIntervalMs: limits.claimIntervalMs,
      statusFlushIntervalMs: limits.statusFlushIntervalMs,
      runtimeLimitMs: limits.runtimeLimitMs,
      maxAttempts: limits.maxAttempts,
      confinement: input.confinement,
      ...(input.shadow ? { shadow: input.shadow } : {}),
      resultLimits: { maxResultBytes: limits.maxResultBytes, maxStoredResultBytes: limits.maxStoredResultBytes },
      abortGraceMs: limits.abortGraceMs,
    },
    clock: input.clock,
    logger: input.logger,
    ...(input.observer ? { observer: input.observer } : {}),
    ...(input.tracer ? { tracer: input.tracer } : {}),
  });
  const sweeper = input.sweeper
    ? new Sweeper(
        input.store,
        { sweepIntervalMs: limits.sweepIntervalMs, inputTimeoutMs: limits.inputTimeoutMs, auditRetentionMs: limits.auditRetentionMs },
        input.clock,
        input.logger,
      )
    : undefined;
  return {
    worker,
    sweeper,
    async start() {
      await worker.start();
      sweeper?.start();
    },
    async stop(ms) {
      await worker.drain(ms);
      await sweeper?.close();
    },
  };
}

/**
 * A worker without an MCP server (the `mcp-tasks worker` role): claims runnable tasks of the store by lease, runs
 * its tools in bounded slots, renews leases, recovers lapsed ones, and (by default) sweeps. Any number of workers
 * and API processes may share one store; each run is held by exactly one lease.
 * @throws TasksError `-32602` for invalid limits (every problem listed), duplicate tool names or an elicting
 *   tool that is not safe to re-run; the store's `StoreError` when it cannot be read at start.
 */
export async function createTaskWorker(options: CreateTaskWorkerOptions): Promise<TaskWorkerHandle> {
  const limits = resolveLimits({ ...options.limits, ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }) });
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? systemClock;
  const tools = new ToolRegistry(options.tools);
  const instanceId = options.instanceId ?? newInstanceId();
  const feed = new TaskEventFeed(options.store, logger);
  const executor = options.executor ?? new InProcessExecutor(tools);
  const parts = createExecutionParts({
    store: options.store,
    tools,
    feed,
    limits,
    instanceId,
    confinement: { roots: options.roots ?? [], deniedPaths: options.deniedPaths ?? [] },
    executor,
    sweeper: options.sweeper !== false,
    clock,
    logger,
    observer: options.observer,
    tracer: options.tracer,
    shadow: options.shadow,
  });
  await feed.start(limits.tailIntervalMs);
  await parts.start();
  let stopping: Promise<void> | undefined;
  const drain = (ms: number): Promise<void> => {
    stopping ??= (async () => {
      await parts.stop(ms);
      feed.close();
      if (!options.executor) await executor.close();
    })();
    return stopping;
  };
  return { worker: parts.worker, instanceId, drain, close: () => drain(0) };
}
