import { existsSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { MessagePort, type Worker } from 'node:worker_threads';

import { Piscina } from 'piscina';

import type { ExecutionOutcome, ExecutorReadiness } from '../core/executor.js';
import type { Logger } from '../core/logger.js';
import type { ToolModuleOptions, ToolSource } from '../core/tool-source.js';
import {
  isThreadReport,
  RUN_STATE,
  RunState,
  type ThreadNudge,
  type ThreadOutcome,
  type ThreadReport,
  type ThreadTask,
  type ThreadWarmData,
} from './isolated-messages.js';
import { ThreadChannels, type ThreadTermination } from './thread-channels.js';

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
  /**
   * How long runs wait for a thread before a new thread starts for them, unless threads came free that often in that
   * time — at least one per waiting run (ms). Loading a thread costs 150–600 ms of CPU; while threads come free that
   * often (short runs), the waiting runs take those, and when every thread holds a long-running tool (or runs that
   * wait on I/O free them too seldom), the next run starts its own thread this much later.
   * @defaultValue the median time the pool's threads took to load the tools, within
   * [{@link MIN_THREAD_START_DELAY_MS}, {@link MAX_THREAD_START_DELAY_MS}]: waiting as long as a new thread would take
   * to load costs a run at most twice the best choice made in hindsight (the ski-rental rule), and it grows with the
   * machine's load, which is when a thread started for nothing hurts most.
   */
  threadStartDelayMs?: number;
  /**
   * The machine's 1-minute load average, against the CPU count: at or above it the CPU is saturated and the pool
   * judges busy threads by their waiting time only (see `threadsIdle`). @defaultValue `os.loadavg()[0]`, read at most
   * once a second. Set by tests to show the pool a saturated (or an idle) machine.
   */
  loadAverage?: (now: number) => number;
}

/** Bounds of the default {@link WarmThreadPoolSettings.threadStartDelayMs} (ms). */
export const MIN_THREAD_START_DELAY_MS = 50;
export const MAX_THREAD_START_DELAY_MS = 1_000;

/** How a thread of the pool stands (by `threadId`): loading its tools, warm (takes runs), or failed to load them. */
type ThreadStanding = 'warm' | 'failed';

/** The share of the start delay the warm threads must be held by tools before a new thread starts (see `threadsIdle`). */
const BUSY_SHARE = 0.8;

/** A run handed to piscina: when (epoch ms), its {@link RunState} word, and whether an idle warm thread took it. */
export interface HandedRun {
  at: number;
  state: Int32Array;
  /** An idle warm thread was there to take it; otherwise it waits in piscina for a thread loading for it. */
  toWarm: boolean;
}

/**
 * Whether a run handed to piscina holds a thread: its thread moves the run's state word to `started` before the tool
 * and to `ended` as soon as the tool is done. A run an idle warm thread took that is still `pending` waits for that
 * thread's event loop to read its message: on a machine whose CPU is saturated, a thread starved of CPU, which another
 * thread would not make start sooner (in CI a third thread started that way where the runs waited for CPU), so it
 * holds none; otherwise that thread's loop is busy (a callback a tool left behind) and it does. A run waiting in
 * piscina for a thread that loads for it counts as held, as the demand that thread answers.
 */
export function holdsThread(run: HandedRun, saturated: boolean): boolean {
  const state = Atomics.load(run.state, RUN_STATE);
  if (state === RunState.pending) return !(run.toWarm && saturated);
  return state !== RunState.ended;
}

/** How long an idle thread above `minThreads` is kept (ms). */
const IDLE_TIMEOUT_MS = 60_000;
/** How often {@link WarmThreadPool.close} looks whether threads still load (ms). */
const CLOSE_POLL_MS = 10;

/** The middle value of `values` (the upper one of an even count); `undefined` when empty. */
function median(values: readonly number[]): number | undefined {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

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
  readonly piscina: Piscina<ThreadTask | ThreadNudge, ThreadOutcome>;
  /** The channels of the warm threads (see `ThreadChannels`): opened by their `warm` report, closed with the thread. */
  readonly channels = new ThreadChannels();
  /** Threads that reported their warm-up, by `threadId`; a thread not in here is still loading. */
  private readonly standing = new Map<number, ThreadStanding>();
  /** This pool's threads whose report was taken (see {@link watchWorker}), so their exit is handled once. */
  private readonly reported = new Set<Worker>();

  private lastError: string | undefined;
  private readonly warmMs: number[] = [];
  /** The median of {@link warmMs} (ms), once a thread loaded. */
  private warmUpMedianMs: number | undefined;
  private readonly listeners = new Set<() => void>();
  /**
   * Runs handed to piscina and not settled: one thread each. Runs beyond the idle warm threads wait in
   * {@link waiting} rather than in piscina, which starts a new thread for every run its balancer cannot place: a
   * burst of 32 short runs on a worker with one warm thread started 32 threads at once, each loading the tool
   * modules on 2 cores, while the one warm thread could have run them all (issue 25). Here new threads start only
   * while fewer than {@link maxLoading} load, and every waiting run goes to the first thread that is free.
   */
  private inFlight = 0;
  /**
   * Runs waiting for a thread, oldest first, with the time they started waiting. A new thread starts only for runs
   * that waited {@link startDelayMs} while fewer threads came free in that time than runs wait (or when no thread is
   * warm or loading at all): under a steady load of short runs, the first rule alone grew a worker to 36 threads in
   * 8 s on 2 cores (`bench:instances`), each spending 150–600 ms of CPU loading tools, and that CPU made the queue
   * longer still (issue 25). Threads that come free often enough to take every waiting run within that time run the
   * queue as soon as more threads would. A thread coming free now and then is not enough: one thread freed by 100 ms
   * runs that wait on I/O kept 8 clients on concurrency 8 to that one thread (12 runs/s instead of 65).
   */
  private readonly waiting: { go: (toWarm: boolean) => boolean; since: number }[] = [];
  private readonly maxLoading: number;
  private readonly cpus = availableParallelism();
  /** The pool's bound ({@link WarmThreadPoolSettings.maxThreads}); piscina itself is held to the threads it has (see {@link allowThreads}). */
  private readonly maxThreads: number;
  /**
   * Runs that gave their thread back within the last {@link startDelayMs}, oldest first: when (epoch ms) and how long
   * the tool held the thread (ms, measured in the thread).
   */
  private readonly freed: { at: number; heldMs: number; idleMs: number }[] = [];
  /**
   * Runs handed to piscina and not settled here: when (epoch ms), and their {@link RunState} word, which the thread
   * moves to `ended` as soon as the tool is done, before this event loop reads the outcome.
   */
  private readonly handedAt = new Set<HandedRun>();
  /** Looks at the waiting runs again once one may start a thread (see {@link recheckLater}), at `recheckAt`. */
  private recheckTimer: NodeJS.Timeout | undefined;
  private recheckAt = 0;

  constructor(private readonly settings: WarmThreadPoolSettings) {
    this.maxLoading = Math.max(1, settings.maxLoading ?? availableParallelism());
    const maxThreads = Math.max(1, settings.maxThreads);
    // Before piscina starts its first threads: every thread's reports are read on its own Worker (see watchWorker).
    watchWorkers(this);
    this.piscina = new Piscina<ThreadTask | ThreadNudge, ThreadOutcome>({
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
    this.maxThreads = maxThreads;
    this.allowThreads(0);
    this.piscina.on('workerDestroy', (worker: { id: number }) => {
      // Before the runs of the thread hear of its end (piscina settles them after this event), they get its messages.
      this.channels.close(worker.id);
      this.standing.delete(worker.id);
      this.allowThreads(0);
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
   * Run `task` on a thread of the pool, once one is free or may be started (see {@link inFlight}); `termination`
   * ends its thread. `skip()` is asked when the run's turn comes: a run withdrawn while it waited is never handed to
   * piscina (its result is then `undefined`; the caller has already settled it).
   */
  run(task: ThreadTask, termination: ThreadTermination, skip: () => boolean): Promise<ExecutionOutcome | undefined> {
    return new Promise<ExecutionOutcome | undefined>((resolve, reject) => {
      this.waiting.push({
        since: Date.now(),
        go: (toWarm) => {
          if (skip()) {
            resolve(undefined);
            return false;
          }
          this.inFlight += 1;
          const handed = { at: Date.now(), state: task.state, toWarm };
          this.handedAt.add(handed);
          let held: { heldMs?: number; idleMs?: number } = {};
          this.piscina
            .run(task, { signal: termination })
            .then(({ heldMs, idleMs, ...outcome }) => {
              held = { heldMs, idleMs };
              resolve(outcome as ExecutionOutcome);
            }, reject)
            .finally(() => {
              this.inFlight -= 1;
              this.handedAt.delete(handed);
              const now = Date.now();
              // A run that ended without the thread's figures (its thread was ended) held it all along, waiting.
              const heldMs = held.heldMs ?? now - handed.at;
              this.freed.push({ at: now, heldMs, idleMs: held.idleMs ?? heldMs });
              this.recentlyFreed(now);
              this.admitWaiting();
            });
          return true;
        },
      });
      this.admitWaiting();
    });
  }

  /**
   * Hand waiting runs to piscina while a warm thread is idle, or while a new thread may start loading: fewer than
   * {@link maxLoading} load, fewer threads came free in the last {@link startDelayMs} than runs wait, and more runs
   * have waited that long than threads are loading for them (or no thread is warm or loading at all).
   */
  private admitWaiting(): void {
    while (this.waiting.length > 0) {
      const { warm, loading } = this.counts();
      const idleWarm = warm - this.inFlight;
      // One clock reading for the rules and the recheck, so that the recheck never misses the moment a rule turns.
      const now = Date.now();
      if (idleWarm <= 0) {
        if (loading >= this.maxLoading || this.piscina.threads.length >= this.maxThreads) return;
        // Runs handed beyond the warm threads (-idleWarm) wait in piscina, each for a thread loading for it: only the
        // loading threads beyond those will take waiting runs.
        const loadingForWaiting = Math.max(0, loading + idleWarm);
        if (warm + loading > 0 && (this.recentlyFreed(now) >= this.waiting.length || this.agedRuns(now) <= loadingForWaiting || this.threadsIdle(now, warm))) {
          this.recheckLater(now, loadingForWaiting);
          return;
        }
      }
      // A run handed over with no idle warm thread makes piscina start one (the only one it may start now).
      if (idleWarm <= 0) this.allowThreads(1);
      const handed = (this.waiting.shift() as { go: (toWarm: boolean) => boolean }).go(idleWarm > 0);
      this.allowThreads(0);
      // Count that thread before the next run.
      if (handed && idleWarm <= 0 && this.counts().loading <= loading) return;
    }
  }

  /**
   * Let piscina start at most `more` threads beyond those it has (within {@link maxThreads}). piscina 5 starts a
   * thread for a queued run its balancer will not place whenever any thread comes free, again and again in one go
   * up to its `maxThreads`: one run waiting for a thread that loads made a worker under load jump from 1 to 20
   * threads, each loading the tools (issue 25). So its bound is kept at the threads it has, raised by one only while
   * {@link admitWaiting} hands over a run that is to start a thread.
   */
  private allowThreads(more: number): void {
    const options = this.piscina.options as { maxThreads: number };
    options.maxThreads = Math.min(this.maxThreads, Math.max(this.piscina.minThreads, this.piscina.threads.length + more));
  }

  /** Whether the machine's CPU is saturated: a 1-minute load average at or above its CPU count. */
  private saturated(now: number): boolean {
    return (this.settings.loadAverage ?? oneMinuteLoad)(now) >= this.cpus;
  }

  /** See {@link WarmThreadPoolSettings.threadStartDelayMs} (ms). */

  private get startDelayMs(): number {
    if (this.settings.threadStartDelayMs !== undefined) return Math.max(0, this.settings.threadStartDelayMs);
    return Math.min(MAX_THREAD_START_DELAY_MS, Math.max(MIN_THREAD_START_DELAY_MS, this.warmUpMedianMs ?? 0));
  }

  /** Threads that came free in the last {@link startDelayMs} (forgets the older ones). */
  private recentlyFreed(now: number): number {
    const cutoff = now - this.startDelayMs;
    while (this.freed.length > 0 && (this.freed[0] as { at: number }).at <= cutoff) this.freed.shift();
    return this.freed.length;
  }

  /**
   * Whether a new thread would not help the runs that wait: the tools held the `warm` threads less than
   * {@link BUSY_SHARE} of the last {@link startDelayMs}, counting the runs that ended in it by what their thread
   * reports, and the runs still in a thread since before it as holding theirs throughout. While the machine's CPU is
   * saturated (a 1-minute load average at or above its CPU count), time a tool spent computing does not count: another
   * thread would compete for the same CPU, only time spent waiting (on I/O, on timers) frees up for another run.
   * Runs then wait for a host loop too busy to hand them out and take their results, not for threads, and a new thread
   * only adds the CPU of loading the tools: on 2 cores shared with other work a worker grew to 36 threads that way,
   * each loading the tools, and ran 2.7 round trips/s instead of about 100 (`bench:instances`, issue 25).
   */
  private threadsIdle(now: number, warm: number): boolean {
    if (warm === 0) return false;
    const window = this.startDelayMs;
    if (window === 0) return false;
    const saturated = this.saturated(now);
    let held = 0;
    for (const run of this.freed) held += Math.min(saturated ? run.idleMs : run.heldMs, window);
    // A run whose tool is done holds no thread, however late this event loop takes its outcome: a busy loop made runs
    // look held for a whole delay, and a worker on 2 cores under load grew to its 20 threads that way (issue 25).
    for (const run of this.handedAt) if (run.at <= now - window && holdsThread(run, saturated)) held += window;
    return held < BUSY_SHARE * warm * window;
  }

  /** Waiting runs that have waited {@link startDelayMs} or longer. */
  private agedRuns(now: number): number {
    const cutoff = now - this.startDelayMs;
    let aged = 0;
    for (const run of this.waiting) {
      if (run.since > cutoff) break;
      aged += 1;
    }
    return aged;
  }

  /**
   * Run {@link admitWaiting} again when a run may next start a thread, called with the numbers it held back on: once
   * fewer threads came free in the last {@link startDelayMs} than runs wait, and more runs have waited that long than
   * the `loadingForWaiting` threads loading for them. Both only move that way while nothing else happens; a run
   * ending or a thread warming, failing or ending calls admitWaiting anyway.
   */
  private recheckLater(now: number, loadingForWaiting: number): void {
    // The run that must age before more runs have waited than threads load for them: without one, only a thread's
    // warm-up (or failure, or end) can change the choice, and that calls admitWaiting; no timer (it fired every
    // millisecond until then).
    const nextToAge = this.waiting[loadingForWaiting];
    if (!nextToAge) return;
    const frees = this.freed.length;
    const waiting = this.waiting.length;
    const fewerFreed = frees >= waiting ? (this.freed[frees - waiting] as { at: number }).at + this.startDelayMs : now;
    // While the threads sit idle, only a run held a whole start delay (or a run's end, which calls admitWaiting) can
    // show them busy: the first run in a thread to get there, if any.
    let busyFrom = now;
    if (this.threadsIdle(now, this.counts().warm)) {
      // A run still pending counts here whatever the load: its thread will start it, and it may then be held.
      const ageing = [...this.handedAt]
        .filter((run) => Atomics.load(run.state, RUN_STATE) !== RunState.ended)
        .map((run) => run.at + this.startDelayMs)
        .filter((at) => at > now);
      if (ageing.length === 0) return;
      busyFrom = Math.min(...ageing);
    }
    const at = Math.max(nextToAge.since + this.startDelayMs, fewerFreed, busyFrom);
    // More runs waiting can make the moment earlier than a recheck already set.
    if (this.recheckTimer) {
      if (this.recheckAt <= at) return;
      clearTimeout(this.recheckTimer);
    }
    this.recheckAt = at;
    this.recheckTimer = setTimeout(() => {
      this.recheckTimer = undefined;
      this.admitWaiting();
    }, at - now);
    this.recheckTimer.unref();
  }

  /** An idle warm thread for the next run, else `null` (the run waits). A failed thread only when none is warm. */
  private pick<W extends { id: number; currentUsage: number; terminating: boolean; destroyed: boolean }>(workers: readonly W[]): W | null {
    const idle = workers.filter((worker) => worker.currentUsage === 0 && !worker.terminating && !worker.destroyed);
    const warm = idle.find((worker) => this.standing.get(worker.id) === 'warm');
    if (warm) return warm;
    if ([...this.standing.values()].includes('warm')) return null;
    return idle.find((worker) => this.standing.get(worker.id) === 'failed') ?? null;
  }

  /**
   * Read the reports of `worker`, a thread of any pool of this process (`process` 'worker' event, emitted as it is
   * created, before it can post anything), when it is one of this pool's. A report is taken from the Worker that
   * posted it and names the thread by that Worker's `threadId`, never by what the message says: piscina's own
   * 'message' event does not tell which thread posted, so a tool that posted a forged `warm` report on its
   * `parentPort` could otherwise have replaced another thread's channel (and received its runs' replies and aborts),
   * or registered one as thread 0, which every run not yet taken names. A thread warms up once: a second `warm`
   * report of a thread (a tool's) is refused, so a tool cannot swap its own thread's channel for one it holds.
   */
  watchWorker(worker: Worker): void {
    const threadId = worker.threadId;
    worker.on('message', (message: unknown) => {
      if (!isThreadReport(message) || !this.piscina.threads.includes(worker)) return;
      this.reported.add(worker);
      this.onReport(message, threadId);
    });
    // piscina names a thread that already exited `-1` in 'workerDestroy': its exit is handled here, by its real id.
    worker.once('exit', () => {
      if (!this.reported.delete(worker)) return;
      this.channels.close(threadId);
      this.standing.delete(threadId);
      this.allowThreads(0);
      this.changed();
    });
  }

  private onReport(report: ThreadReport, threadId: number): void {
    const { logger } = this.settings;
    if (report.mcpTasksThread === 'stray-error') {
      logger.warn({ threadId, tool: report.tool, error: report.error }, 'a tool callback threw after its run ended; the thread goes on');
      return;
    }
    if (report.mcpTasksThread !== 'warm' || this.standing.has(threadId) || (report.ok && !(report.channel instanceof MessagePort))) {
      logger.warn({ threadId }, 'a thread posted a report that is not its first warm-up report; ignored (a tool posting on its parentPort?)');
      return;
    }
    if (report.ok) {
      // The channel before the standing: the balancer hands runs only to warm threads, each with its channel.
      this.channels.open(threadId, report.channel);
      this.standing.set(threadId, 'warm');
      this.warmMs.push(report.ms);
      if (this.warmMs.length > 100) this.warmMs.shift();
      this.warmUpMedianMs = median(this.warmMs);
      logger.debug({ threadId, warmUpMs: report.ms, tools: report.tools }, 'executor thread warm');
      // Runs that waited for this thread are handed out when a task ends (see ThreadNudge).
      if (this.piscina.queueSize > 0) void this.piscina.run({ nudge: true }).catch(() => {});
    } else {
      this.standing.set(threadId, 'failed');
      this.lastError = report.error;
      logger.error({ threadId, error: report.error }, 'the tool modules failed to load in a thread of the isolated executor');
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
    return {
      ready: failed === 0 && warm > 0,
      mode: 'isolated',
      threads: { warm, loading, failed, min: this.piscina.minThreads, max: this.maxThreads },
      ...(this.warmUpMedianMs === undefined ? {} : { warmUpMs: this.warmUpMedianMs }),
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
    pools.delete(this);
    // Runs still waiting for a thread were aborted by their owners (and settled) before close: none starts now.
    this.waiting.length = 0;
    if (this.recheckTimer) clearTimeout(this.recheckTimer);
    const deadline = Date.now() + loadWaitMs;
    while (this.counts().loading > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, CLOSE_POLL_MS));
    await this.piscina.destroy();
  }
}

/** The open pools of this process, each told of every new Worker by one `process` 'worker' listener. */
const pools = new Set<WarmThreadPool>();
let watching = false;

/** Tell `pool` of every Worker created from now on (see {@link WarmThreadPool.watchWorker}) until it closes. */
function watchWorkers(pool: WarmThreadPool): void {
  pools.add(pool);
  if (watching) return;
  watching = true;
  process.on('worker', (worker: Worker) => {
    for (const open of pools) open.watchWorker(worker);
  });
}

/** The 1-minute load average, read at most once a second (the kernel moves it every 5 s; a read is a file read). */
let load = { at: -Infinity, value: 0 };
function oneMinuteLoad(now: number): number {
  if (now - load.at >= 1_000 || now < load.at) load = { at: now, value: loadavg()[0] ?? 0 };
  return load.value;
}
