import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { TransferListItem } from 'node:worker_threads';

import { Piscina } from 'piscina';

import type { ExecutionOutcome, ExecutorReadiness } from '../core/executor.js';
import type { Logger } from '../core/logger.js';
import type { ToolModuleOptions, ToolSource } from '../core/tool-source.js';
import { isThreadReport, type ThreadNudge, type ThreadReport, type ThreadTask, type ThreadWarmData } from './isolated-messages.js';

/** Settings of a {@link WarmThreadPool}. */
export interface WarmThreadPoolSettings {
  /** Where the threads load the tools from (once each, when they start). */
  sources: readonly ToolSource[];
  moduleOptions: ToolModuleOptions;
  /** Threads loaded when the pool starts and kept loaded. */
  minThreads: number;
  /** Threads at most (one run each); those above `minThreads` load on demand and retire after a minute idle. */
  maxThreads: number;
  /** V8 old-generation heap limit of each thread (MB): a tool that exceeds it ends its thread, never the process. */
  threadHeapMb: number;
  /** The threads' `process.env` (see `threadEnvironment`). */
  env: Record<string, string>;
  logger: Logger;
  /**
   * piscina's `atomics` mode. `disabled` (the default here) keeps each thread's event loop running between runs, so
   * a callback a tool left behind fires while the thread is idle and is reported as that tool's; piscina's own
   * default `sync` parks an idle thread in `Atomics.wait`, and such a callback would fire in the middle of the next
   * tool's run. Settable for the benchmark (bench/isolation.mjs) that measures what this costs.
   */
  atomics?: 'disabled' | 'sync';
  /** Threads that may load the tools at the same time while runs wait for one. @defaultValue the CPU count */
  maxLoading?: number;
}

/** How a thread of the pool stands (by `threadId`): loading its tools, warm (takes runs), or failed to load them. */
type ThreadStanding = 'warm' | 'failed';

/** How long an idle thread above `minThreads` is kept (ms). */
const IDLE_TIMEOUT_MS = 60_000;
/** How often {@link WarmThreadPool.close} looks whether threads still load (ms). */
const CLOSE_POLL_MS = 10;

/**
 * The thread module (`isolated-entry.cjs`): next to this file when running the build; from `dist/` when this module
 * runs as TypeScript source (the test runner), since a worker thread cannot load `.ts`.
 */
function entryModule(): string {
  const beside = new URL('./isolated-entry.cjs', import.meta.url);
  if (existsSync(fileURLToPath(beside))) return fileURLToPath(beside);
  return fileURLToPath(new URL('../../dist/execution/isolated-entry.cjs', import.meta.url));
}

/**
 * The piscina pool of the isolated executor, kept warm: each thread loads the tools once when it starts (see
 * `warmThread`) and takes runs only once that is done. piscina itself counts a thread as ready before its task
 * module has loaded (the threads of the first `minThreads` at once) and its default balancer may hand a run to a
 * thread that is still starting; a run aborted there would terminate a thread in the middle of loading modules,
 * which can abort the whole process (issue 22). This pool's balancer therefore picks only threads that reported
 * their warm-up, and {@link close} waits for threads still loading before it ends them.
 */
export class WarmThreadPool {
  readonly piscina: Piscina<ThreadTask | ThreadNudge, ExecutionOutcome>;
  /** Threads that reported their warm-up, by `threadId`; a thread not in here is still loading. */
  private readonly standing = new Map<number, ThreadStanding>();
  private lastError: string | undefined;
  private readonly warmMs: number[] = [];
  private readonly listeners = new Set<() => void>();
  /**
   * Runs handed to piscina and not settled: one thread each. Runs beyond the idle warm threads wait in
   * {@link waiting} rather than in piscina, which starts a new thread for every run its balancer cannot place: a
   * burst of 32 short runs on a worker with one warm thread started 32 threads at once, each loading the tool
   * modules on 2 cores, while the one warm thread could have run them all (issue 25). Here new threads start only
   * while fewer than {@link maxLoading} load, and every waiting run goes to the first thread that is free.
   */
  private inFlight = 0;
  private readonly waiting: { go: () => boolean }[] = [];
  private readonly maxLoading: number;

  constructor(private readonly settings: WarmThreadPoolSettings) {
    this.maxLoading = Math.max(1, settings.maxLoading ?? availableParallelism());
    const maxThreads = Math.max(1, settings.maxThreads);
    this.piscina = new Piscina<ThreadTask | ThreadNudge, ExecutionOutcome>({
      filename: entryModule(),
      minThreads: Math.min(Math.max(1, settings.minThreads), maxThreads),
      maxThreads,
      idleTimeout: IDLE_TIMEOUT_MS,
      atomics: settings.atomics ?? 'disabled',
      resourceLimits: { maxOldGenerationSizeMb: settings.threadHeapMb },
      env: settings.env,
      workerData: { sources: [...settings.sources], moduleOptions: settings.moduleOptions } satisfies ThreadWarmData,
      loadBalancer: (_task, workers) => this.pick(workers),
    });
    this.piscina.on('message', (message: unknown) => {
      if (isThreadReport(message)) this.onReport(message);
    });
    this.piscina.on('workerDestroy', (worker: { id: number }) => {
      this.standing.delete(worker.id);
      this.changed();
    });
    this.listeners.add(() => this.admitWaiting());
    // piscina emits 'error' for a thread that failed while it held no run; without a listener that would end the
    // process. Runs that were in the thread have been failed by their own promise.
    this.piscina.on('error', (error: unknown) =>
      settings.logger.error({ err: error }, 'a thread of the isolated executor failed outside any run; it is replaced'),
    );
  }

  /**
   * Run `task` on a thread of the pool, once one is free or may be started (see {@link inFlight}). `skip()` is
   * asked when the run's turn comes: a run withdrawn while it waited is never handed to piscina (its result is then
   * `undefined`; the caller has already settled it).
   */
  run(task: ThreadTask, options: { transferList: TransferListItem[]; signal: AbortSignal }, skip: () => boolean): Promise<ExecutionOutcome | undefined> {
    return new Promise<ExecutionOutcome | undefined>((resolve, reject) => {
      this.waiting.push({
        go: () => {
          if (skip()) {
            resolve(undefined);
            return false;
          }
          this.inFlight += 1;
          this.piscina
            .run(task, options as Parameters<typeof this.piscina.run>[1])
            .then(resolve, reject)
            .finally(() => {
              this.inFlight -= 1;
              this.admitWaiting();
            });
          return true;
        },
      });
      this.admitWaiting();
    });
  }

  /** Hand waiting runs to piscina while a warm thread is idle, or a new thread may start loading. */
  private admitWaiting(): void {
    while (this.waiting.length > 0) {
      const { warm, loading } = this.counts();
      const idleWarm = warm - this.inFlight;
      const mayStart = loading < this.maxLoading && this.piscina.threads.length < this.piscina.maxThreads;
      if (idleWarm <= 0 && !mayStart) return;
      const handed = (this.waiting.shift() as { go: () => boolean }).go();
      // A run handed over with no idle warm thread made piscina start one: count it before the next.
      if (handed && idleWarm <= 0 && this.counts().loading <= loading) return;
    }
  }

  /** An idle warm thread for the next run, else `null` (the run waits). A failed thread only when none is warm. */
  private pick<W extends { id: number; currentUsage: number; terminating: boolean; destroyed: boolean }>(workers: readonly W[]): W | null {
    const idle = workers.filter((worker) => worker.currentUsage === 0 && !worker.terminating && !worker.destroyed);
    const warm = idle.find((worker) => this.standing.get(worker.id) === 'warm');
    if (warm) return warm;
    if ([...this.standing.values()].includes('warm')) return null;
    return idle.find((worker) => this.standing.get(worker.id) === 'failed') ?? null;
  }

  private onReport(report: ThreadReport): void {
    const { logger } = this.settings;
    if (report.mcpTasksThread === 'stray-error') {
      logger.warn({ threadId: report.threadId, tool: report.tool, error: report.error }, 'a tool callback threw after its run ended; the thread goes on');
      return;
    }
    if (report.ok) {
      this.standing.set(report.threadId, 'warm');
      this.warmMs.push(report.ms);
      if (this.warmMs.length > 100) this.warmMs.shift();
      logger.debug({ threadId: report.threadId, warmUpMs: report.ms, tools: report.tools }, 'executor thread warm');
      // Runs that waited for this thread are handed out when a task ends (see ThreadNudge).
      if (this.piscina.queueSize > 0) void this.piscina.run({ nudge: true }).catch(() => {});
    } else {
      this.standing.set(report.threadId, 'failed');
      this.lastError = report.error;
      logger.error({ threadId: report.threadId, error: report.error }, 'the tool modules failed to load in a thread of the isolated executor');
    }
    this.changed();
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }

  /** Threads of the pool now: warm, failed to load, still loading. */
  private counts(): { warm: number; failed: number; loading: number } {
    const ids = this.piscina.threads.map((thread) => thread.threadId);
    const of = (standing: ThreadStanding): number => ids.filter((id) => this.standing.get(id) === standing).length;
    const warm = of('warm');
    const failed = of('failed');
    return { warm, failed, loading: ids.length - warm - failed };
  }

  /** See {@link ExecutorReadiness}: ready while no thread failed to load the tools and at least one is warm. */
  readiness(): ExecutorReadiness {
    const { warm, failed, loading } = this.counts();
    const sorted = [...this.warmMs].sort((a, b) => a - b);
    return {
      ready: failed === 0 && warm > 0,
      mode: 'isolated',
      threads: { warm, loading, failed, min: this.piscina.minThreads, max: this.piscina.maxThreads },
      ...(sorted.length > 0 ? { warmUpMs: sorted[Math.floor(sorted.length / 2)] as number } : {}),
      ...(this.lastError === undefined ? {} : { error: this.lastError }),
    };
  }

  /**
   * Resolve once `minThreads` threads are warm.
   * @throws Error with the loader's message when a thread fails to load the tools, or when `timeoutMs` passes.
   */
  warm(timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const check = (): void => {
        const { warm, failed } = this.counts();
        if (failed > 0) finish(new Error(`the tool modules failed to load in a worker thread: ${this.lastError ?? 'unknown error'}`));
        else if (warm >= this.piscina.minThreads) finish();
      };
      const timer = setTimeout(() => finish(new Error(`the tool modules did not load in the executor's threads within ${timeoutMs} ms`)), timeoutMs);
      const finish = (error?: Error): void => {
        clearTimeout(timer);
        this.listeners.delete(check);
        if (error) reject(error);
        else resolve();
      };
      this.listeners.add(check);
      check();
    });
  }

  /**
   * End every thread, after those still loading their tools finished (at most `loadWaitMs`): a thread is never
   * terminated in the middle of loading modules. Runs in progress were aborted by their owners first.
   */
  async close(loadWaitMs: number): Promise<void> {
    // Runs still waiting for a thread were aborted by their owners (and settled) before close: none starts now.
    this.waiting.length = 0;
    const deadline = Date.now() + loadWaitMs;
    while (this.counts().loading > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, CLOSE_POLL_MS));
    await this.piscina.destroy();
  }
}
