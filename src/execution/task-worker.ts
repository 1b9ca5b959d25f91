/**
 * The task worker's run loop (≈640 lines, over the ~500 guide on purpose): claiming, slots, lease renewal,
 * recovery, runtime limits, cancellation and drain all read and write one slot table and one lease state, and
 * splitting that table across modules would put the invariants "a slot is a lease" and "a drained slot never starts"
 * in two places. What is not that state lives apart: its options (task-worker-options.ts), a run's ctx host and
 * tracing (run-host.ts), outcome bounding (large-result.ts), status coalescing (status-writer.ts).
 */
import { type ExecutionOutcome, GATHERED_STEP } from '../core/executor.js';
import type { ProgressListener, SlotReservation, WorkerHandOff } from '../core/hand-off.js';
import { type Logger, redactTaskId } from '../core/logger.js';
import type { RunTrace, RunTracer } from '../core/run-tracer.js';
import type { TaskEvent } from '../core/store.js';
import type { TaskRecord } from '../core/task.js';
import { immediateResponseOf, settleExecution } from '../core/tool-outcome.js';
import { TRACE_STEP, traceCarrierFromJson } from '../core/trace-context.js';
import { appendAudit, shadowMismatchEntry, taskEndedEntry } from '../ledger/audit.js';
import { failByRuntime } from './fail-task.js';
import { boundLargeResult } from './large-result.js';
import { judgeUnrenewedLease } from './lease-verdict.js';
import { runHost, tracedHost } from './run-host.js';
import { inShadowMode, type ShadowSettings, type ShadowSink, ShadowWatch } from './shadow-watch.js';
import { StatusWriter } from './status-writer.js';
import type { TaskWorkerOptions } from './task-worker-options.js';

export type { TaskWorkerOptions, TaskWorkerSettings } from './task-worker-options.js';

/**
 * Why a run was aborted. `lease_lost`: another owner holds the task's lease; `settled`: the task reached a terminal
 * status elsewhere (its outcome is already decided); `shutdown`: the worker drained and the run outlived it.
 */
type AbortReason = 'cancelled' | 'expired' | 'runtime_limit' | 'lease_lost' | 'settled' | 'shutdown';

interface Slot {
  controller: AbortController;
  /** Aborted by a drain: the run does not start its tool if it has not yet (see `Executor.execute`). */
  withdraw: AbortController;
  /** Set once the run has started (its `attempt` is counted). */
  record: TaskRecord | undefined;
  /** Set once the executor started the tool (`ExecutionHost.started`): the run may have done something. */
  toolStarted: boolean;
  /** Settles when the run has left its slot. */
  ended: Promise<void>;
  /** Set when `ended` settles. */
  done: boolean;
}

/** Beyond the abort grace, how long a drain waits for runs whose threads were terminated to report back (ms). */
const TERMINATION_MARGIN_MS = 500;
/** Most lapsed tasks one recovery pass takes. */
const RECOVERY_BATCH = 100;

/**
 * Runs tasks: claims runnable ones by lease (woken by the event feed, with a poll fallback), runs them through its
 * {@link Executor} in bounded slots, renews the leases of its runs (issue 9: a run is stopped for a lost lease only
 * when another owner really holds it), recovers tasks whose lease lapsed (re-running idempotent or step-journaled
 * tools, failing others as `interrupted`, at most `maxAttempts` runs), enforces the runtime limit and TTL, and
 * delivers cancellation from the feed to the running tool. It holds no task the store does not say it holds: a
 * slot is a lease. Through {@link handOff} a task service in the same process hands new tasks to a free slot in
 * the same write that creates them.
 */
export class TaskWorker {
  /** The narrow interface a task service in this process uses (see {@link WorkerHandOff}). */
  readonly handOff: WorkerHandOff;
  /** Highest number of runs at once since start (for tests and metrics). */
  maxInFlight = 0;
  private readonly running = new Map<string, Slot>();
  /** Slots promised to creates in flight (the hand-off). */
  private creating = 0;
  /** Slots asked for by claims and recoveries in flight. */
  private claiming = 0;
  /**
   * Tasks a claim started (leased, run counted) after their slot went to a create meanwhile: they run first when a
   * slot frees, and their leases are renewed with the runs'. A create never waits for a claim in flight.
   */
  private readonly inHand: TaskRecord[] = [];
  /** Tasks being created into a reserved slot: their `created` event is no reason to claim. */
  private readonly reservedIds = new Set<string>();
  /** Tasks whose `created` event arrived without their `attempt` event yet (a create into another worker's slot has both). */
  private readonly maybeRunnable = new Set<string>();
  private readonly statusWriter: StatusWriter;
  private readonly progressListeners = new Map<string, Set<ProgressListener>>();
  /** Outcome writes of runs that have finished here and are not committed yet, by task id. */
  private readonly outcomeWrites = new Map<string, Promise<unknown>>();
  private readonly timers: NodeJS.Timeout[] = [];
  private unsubscribe: () => void = () => {};
  private phase: 'created' | 'running' | 'draining' | 'stopped' = 'created';
  /** A heartbeat is renewing or judging leases; ticks meanwhile are skipped, so renewals never pile up. */
  private heartbeating = false;
  /** Bumped by every hint that a task may be runnable; `satisfied` is its value when a claim last came back short. */
  private wanted = 1;
  private satisfied = 0;
  /** Claims in flight (the slots they asked for are counted in `claiming` until they answer). */
  private readonly claims = new Set<Promise<void>>();
  private recovering = false;
  private recoverAgain = false;
  private draining: Promise<void> | undefined;

  constructor(private readonly options: TaskWorkerOptions) {
    this.statusWriter = new StatusWriter(options.store, options.clock, options.logger, options.settings.statusFlushIntervalMs);
    this.handOff = {
      reserve: (taskId) => this.reserve(taskId),
      pendingOutcome: (taskId) => this.outcomeWrites.get(taskId),
      onProgress: (taskId, listener) => this.onProgress(taskId, listener),
    };
  }

  /** This worker's lease owner id. */
  get instanceId(): string {
    return this.options.settings.instanceId;
  }

  /** Runs in progress now. */
  get activeRuns(): number {
    return this.running.size;
  }

  /**
   * Start working: follow the feed, renew leases every `leaseMs / 3`, claim runnable tasks (now, on every hint and
   * every `claimIntervalMs`) and recover lapsed ones (now and every `recoveryIntervalMs`). The feed must be started
   * by its owner.
   */
  async start(): Promise<void> {
    if (this.phase !== 'created') return;
    this.phase = 'running';
    const { settings, logger } = this.options;
    this.unsubscribe = this.options.feed.subscribeAll((event) => this.onEvent(event));
    const every = (ms: number, job: () => unknown): void => {
      const timer = setInterval(() => {
        void Promise.resolve()
          .then(job)
          .catch((error: unknown) => logger.error({ err: error }, 'worker job failed'));
      }, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(Math.max(1, Math.floor(settings.leaseMs / 3)), () => this.heartbeat());
    every(settings.recoveryIntervalMs, () => this.recover());
    every(settings.claimIntervalMs, () => this.hint());
    await this.recover();
    this.claim();
  }

  /**
   * Drain: stop taking work (no reservation, claim or recovery), let runs finish for up to `ms`, then abort the
   * rest with reason `shutdown` and release their leases at once, so another worker recovers them without waiting
   * for a lease to lapse. Heartbeats go on while runs finish. Resolves when every slot is empty; later calls return
   * the same promise.
   */
  drain(ms: number): Promise<void> {
    this.draining ??= this.drainOnce(ms);
    return this.draining;
  }

  /** {@link drain} without waiting: every run aborted with `shutdown` at once. */
  close(): Promise<void> {
    return this.drain(0);
  }

  /** Look for tasks whose lease lapsed and take them over (also callable directly, e.g. in tests). */
  async recover(): Promise<void> {
    if (this.phase !== 'running') return;
    if (this.recovering) {
      this.recoverAgain = true;
      return;
    }
    this.recovering = true;
    try {
      do {
        this.recoverAgain = false;
        await this.recoverOnce();
      } while (this.recoverAgain && this.phase === 'running');
    } finally {
      this.recovering = false;
    }
  }

  /**
   * Take over tasks whose lease lapsed, up to the free slots: re-run what is safe to re-run, fail the rest. A
   * claimed task that runs in this very process only lapsed because this process was busy (issue 9): the claim has
   * just renewed its lease, and the run goes on untouched.
   */
  private async recoverOnce(): Promise<void> {
    // Slots asked for by a claim in flight are not busy: wait for its answer before counting what is free.
    while (this.claims.size > 0) await Promise.all(this.claims);
    const limit = Math.min(this.freeForClaims(), RECOVERY_BATCH);
    if (limit <= 0) return;
    const { store, tools, settings, logger } = this.options;
    this.claiming += limit;
    let claimed: TaskRecord[];
    try {
      claimed = await store.claimLapsed(settings.instanceId, settings.leaseMs, limit);
    } finally {
      this.claiming -= limit;
    }
    if (claimed.length > 0) this.options.observer?.leasesTakenOver?.(claimed.length);
    for (const record of claimed) {
      if (this.running.has(record.taskId)) continue;
      const tool = tools.get(record.toolName);
      const neverStarted = record.attempt === 0;
      const rerunnable = tool !== undefined && (tool.idempotent === true || tool.journaled === true);
      if (tool && (neverStarted || rerunnable) && record.attempt < settings.maxAttempts) {
        if (this.phase !== 'running' || this.freeSlots() <= 0) {
          // Draining, or a create took the slot meanwhile: the lease just taken (no run counted) goes back at once,
          // and the release event tells other workers.
          await store.releaseLeases(settings.instanceId, [record.taskId]);
          continue;
        }
        logger.info({ taskId: redactTaskId(record.taskId), attempt: record.attempt }, 'recovering task');
        this.options.observer?.orphanRecovered?.('rerun');
        this.launch(record.taskId);
      } else if (tool && rerunnable) {
        this.options.observer?.orphanRecovered?.('attempts_exhausted');
        await this.fail(record, 'attempts_exhausted', `Task ran ${record.attempt} times without finishing`);
      } else {
        this.options.observer?.orphanRecovered?.('interrupted');
        await this.fail(record, 'interrupted', `Task was interrupted (its worker stopped while ${record.toolName} ran) and is not safe to re-run`);
      }
    }
  }

  /** A task may have become runnable (or the poll fallback ticked): claim when slots are free. */
  private hint(): void {
    this.wanted += 1;
    this.claim();
  }

  /**
   * Claim runnable tasks into the free slots. The store write is issued synchronously, so a claim made when a run
   * frees its slot shares that run's outcome commit.
   */
  private claim(): void {
    if (this.phase !== 'running' || this.wanted === this.satisfied) return;
    const limit = this.freeForClaims();
    if (limit <= 0) return;
    const asked = this.wanted;
    const { store, settings, logger } = this.options;
    this.claiming += limit;
    const claim: Promise<void> = store.claimRunnable(settings.instanceId, settings.leaseMs, limit).then(
      (records) => {
        this.claiming -= limit;
        this.claims.delete(claim);
        if (records.length < limit && this.wanted === asked) this.satisfied = asked;
        for (const record of records) this.startClaimed(record);
        this.claim();
      },
      (error: unknown) => {
        this.claiming -= limit;
        this.claims.delete(claim);
        logger.warn({ err: error }, 'claiming runnable tasks failed; retrying at the next hint');
      },
    );
    this.claims.add(claim);
  }

  /** Run a task this worker has just leased and started: in a free slot, else first when one frees (its run is counted). */
  private startClaimed(record: TaskRecord): void {
    if (this.freeSlots() > 0) this.launch(record.taskId, record);
    else this.inHand.push(record);
  }

  private reserve(taskId: string): SlotReservation | undefined {
    if (this.phase !== 'running' || this.freeSlots() <= 0) return undefined;
    this.creating += 1;
    this.reservedIds.add(taskId);
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      this.creating -= 1;
      this.reservedIds.delete(taskId);
      return true;
    };
    return {
      leaseOwner: this.instanceId,
      leaseMs: this.options.settings.leaseMs,
      // A drain that began meanwhile waits for this run like any other: its first run is already counted.
      start: (record) => {
        if (settle()) this.launch(record.taskId, record);
      },
      cancel: () => {
        if (settle()) this.fillSlot();
      },
    };
  }

  /** Slots neither running nor promised to a create or a task in hand: what a create may take. */
  private freeSlots(): number {
    return this.options.settings.concurrency - this.running.size - this.creating - this.inHand.length;
  }

  /** {@link freeSlots} less what claims in flight asked for: what a new claim may ask for. */
  private freeForClaims(): number {
    return this.freeSlots() - this.claiming;
  }

  /** A slot became free: a task in hand runs first, else a claim. */
  private fillSlot(): void {
    const next = this.inHand.shift();
    if (next) this.launch(next.taskId, next);
    else this.claim();
  }

  /** Run a task in a slot: `started` when its run was already counted (created into a slot, or claimed), else after `startAttempt`. */
  private launch(taskId: string, started?: TaskRecord): void {
    let leave!: () => void;
    const slot: Slot = {
      controller: new AbortController(),
      withdraw: new AbortController(),
      record: undefined,
      toolStarted: false,
      done: false,
      ended: new Promise<void>((resolve) => (leave = resolve)),
    };
    // Launched during a drain (a create handed it over just before): it does not start either.
    if (this.phase !== 'running') slot.withdraw.abort('shutdown');
    this.running.set(taskId, slot);
    this.maxInFlight = Math.max(this.maxInFlight, this.running.size);
    void this.execute(taskId, slot, started)
      .catch((error: unknown) => this.options.logger.error({ err: error, taskId: redactTaskId(taskId) }, 'task execution failed'))
      .finally(() => {
        this.releaseSlot(taskId, slot);
        slot.done = true;
        leave();
      });
  }

  /** Free `slot` (once; a later run of the same task has a slot of its own) and fill it. */
  private releaseSlot(taskId: string, slot: Slot): void {
    if (this.running.get(taskId) !== slot) return;
    this.running.delete(taskId);
    this.fillSlot();
  }

  private async execute(taskId: string, slot: Slot, started?: TaskRecord): Promise<void> {
    const { store, tools, settings, clock, executor } = this.options;
    const startedAt = clock.now();
    const record = started ?? (await store.startAttempt(taskId, settings.instanceId, settings.leaseMs));
    if (!record || slot.controller.signal.aborted) return;
    slot.record = record;
    const tool = tools.get(record.toolName);
    if (!tool) {
      await this.fail(record, 'interrupted', `Tool ${record.toolName} is not registered in this process`);
      return;
    }
    const logFields = { taskId: redactTaskId(taskId), tool: tool.name, attempt: record.attempt };
    const observer = this.options.observer;
    observer?.runStarted?.({
      tool: tool.name,
      generation: record.generation,
      attempt: record.attempt,
      queueWaitMs: Math.max(0, startedAt - (record.attempt <= 1 ? record.createdAt : record.lastUpdatedAt)),
    });
    const trace = this.options.tracer ? await this.startTrace(this.options.tracer, record) : undefined;
    const ended = (outcome: string, message?: string): void => {
      observer?.runEnded?.({ tool: tool.name, generation: record.generation, outcome, durationMs: Math.max(0, clock.now() - startedAt) });
      trace?.end(outcome, message);
    };
    const logger = this.options.logger.child(logFields);
    const shadow =
      tool.shadow && inShadowMode(settings.shadow, tool)
        ? new ShadowWatch(tool.shadow, record, settings.shadow as ShadowSettings, this.shadowSink(record, logger), logger)
        : undefined;
    // The TTL is absolute: it runs from now, whatever the run waits for. The runtime limit is the tool's own time:
    // it starts when the executor says the tool started (after any wait for a thread and its warm-up, issue 22).
    const timers: NodeJS.Timeout[] = [];
    const armAt = (ms: number, reason: 'expired' | 'runtime_limit'): void => {
      const timer = setTimeout(
        () => {
          if (slot.controller.signal.aborted) return;
          this.abortLocal(taskId, reason);
          if (reason === 'runtime_limit')
            void this.fail(record, 'runtime_limit', `Tool ${tool.name} exceeded the runtime limit of ${settings.runtimeLimitMs} ms`);
        },
        Math.max(0, ms),
      );
      timer.unref();
      timers.push(timer);
    };
    if (record.expiresAt !== null) armAt(record.expiresAt - startedAt, 'expired');
    const toolStarted = (): void => {
      if (slot.toolStarted) return;
      slot.toolStarted = true;
      armAt(settings.runtimeLimitMs, 'runtime_limit');
    };
    // A new run starts with the tool's immediate response, else empty ("queued" or the last run's words are over).
    const parsed = tool.inputSchema.safeParse(record.arguments);
    const initial = (parsed.success ? immediateResponseOf(tool, parsed.data) : undefined) ?? null;
    if (record.statusMessage !== initial) this.statusWriter.set(taskId, initial);
    let outcome: ExecutionOutcome;
    try {
      const gathered = tool.gather || tool.resolvesTasks?.length ? (await store.getStep(taskId, GATHERED_STEP))?.value : undefined;
      const request = { taskId, toolName: tool.name, arguments: record.arguments, confinement: settings.confinement, logFields };
      const host = runHost(
        {
          store: this.options.store,
          clock: this.options.clock,
          leaseOwner: this.options.settings.instanceId,
          statusWriter: this.statusWriter,
          progressListeners: this.progressListeners,
        },
        record,
        logger,
      );
      host.started = toolStarted;
      if (shadow) host.observeShadowJob = (jobId) => shadow.observe(jobId);
      outcome = await executor.execute(
        gathered === undefined ? request : { ...request, gathered },
        trace ? tracedHost(host, trace) : host,
        slot.controller.signal,
        slot.withdraw.signal,
      );
    } catch (error) {
      logger.error({ err: error }, 'executor failed');
      outcome = { kind: 'crashed', message: `Internal error in tool ${tool.name}` };
    } finally {
      for (const timer of timers) clearTimeout(timer);
    }
    if (outcome.kind === 'aborted' && !slot.toolStarted && slot.withdraw.signal.aborted && !slot.controller.signal.aborted) {
      // Withdrawn by a drain before its tool started: given back now, uncounted, for any worker to run (issue 22).
      this.statusWriter.takePending(taskId);
      void shadow?.finish(undefined);
      ended('withdrawn');
      const given = await store
        .releaseUnstarted(settings.instanceId, [taskId])
        .catch((error: unknown) => logger.warn({ err: error }, 'giving back a withdrawn run failed; its lease lapses on its own'));
      logger.info({ givenBack: given?.length === 1 }, 'run withdrawn by the drain before its tool started; given back uncounted');
      return;
    }
    if (outcome.kind === 'parked' || outcome.kind === 'aborted' || slot.controller.signal.aborted) {
      // A parked run already wrote its input requests; the next run starts when they are answered.
      this.statusWriter.takePending(taskId);
      const reason = String(slot.controller.signal.reason ?? 'unknown');
      void shadow?.finish(outcome.kind === 'parked' ? undefined : reason === 'cancelled' ? 'cancelled' : reason === 'runtime_limit' ? 'failed' : undefined);
      ended(outcome.kind === 'parked' ? 'parked' : `aborted_${reason}`);
      logger.info(
        { reason: outcome.kind === 'parked' ? 'parked' : slot.controller.signal.reason },
        outcome.kind === 'parked' ? 'task parked for input' : 'tool run aborted; its outcome is discarded',
      );
      return;
    }
    const settled = await boundLargeResult(store, taskId, settleExecution(record.generation, outcome), settings.resultLimits);
    ended(settled.status, settled.statusMessage ?? undefined);
    void shadow?.finish(settled.status === 'completed' || settled.status === 'failed' ? settled.status : undefined);
    const pending = this.statusWriter.takePending(taskId);
    const write = store.transition(taskId, {
      to: settled.status,
      outcome: settled.outcome,
      statusMessage: settled.statusMessage ?? pending,
      leaseOwner: settings.instanceId,
      releaseLease: true,
      now: clock.now(),
    });
    this.outcomeWrites.set(taskId, write);
    // The tool is done: its slot goes to the next runnable task now, whose claim then shares this commit.
    this.releaseSlot(taskId, slot);
    let written: TaskRecord | undefined;
    try {
      written = await write;
    } finally {
      if (this.outcomeWrites.get(taskId) === write) this.outcomeWrites.delete(taskId);
    }
    if (!written) logger.info({}, 'task changed meanwhile (cancelled, expired or lease lost); outcome discarded');
    else await appendAudit(store, [taskEndedEntry(written, clock)], logger);
  }

  /** Where the shadow watch of a run reports: the audit trail (`shadow.mismatch`) and the observer (metrics). */
  private shadowSink(record: TaskRecord, logger: Logger): ShadowSink {
    const { observer, store, clock } = this.options;
    return {
      checked: (result) => observer?.shadowChecked?.(record.toolName, result),
      mismatch: async (difference) => {
        observer?.shadowMismatch?.(record.toolName);
        logger.warn({ phase: difference.phase, taskState: difference.taskState, jobState: difference.jobState }, 'shadow mode: the task and its job disagree');
        await appendAudit(store, [shadowMismatchEntry(record, difference, clock.now())], logger);
      },
    };
  }

  /** The run's trace, linked to the context stored with the task (one read, only when tracing is on). */
  private async startTrace(tracer: RunTracer, record: TaskRecord): Promise<RunTrace> {
    const stored = await this.options.store.getStep(record.taskId, TRACE_STEP).catch(() => undefined);
    return tracer.startRun({
      taskId: record.taskId,
      tool: record.toolName,
      generation: record.generation,
      attempt: record.attempt,
      link: traceCarrierFromJson(stored?.value),
    });
  }

  private async fail(record: TaskRecord, reason: Parameters<typeof failByRuntime>[2], message: string): Promise<void> {
    this.statusWriter.takePending(record.taskId);
    await failByRuntime(this.options.store, record.taskId, reason, message, this.options.clock.now());
  }

  private abortLocal(taskId: string, reason: AbortReason): void {
    const slot = this.running.get(taskId);
    if (slot && !slot.controller.signal.aborted) {
      slot.controller.abort(reason);
      if (reason === 'cancelled' && slot.record) this.options.observer?.cancelDelivered?.(slot.record.toolName);
    }
  }

  private onEvent(event: TaskEvent): void {
    if (event.kind === 'expired') this.abortLocal(event.taskId, 'expired');
    else if (event.kind === 'status' && event.status === 'cancelled') this.abortLocal(event.taskId, 'cancelled');
    else if (event.kind === 'status' && event.status === 'working') this.hint();
    else if (event.kind === 'created' && !this.reservedIds.has(event.taskId)) this.hintAfterBatch(event.taskId);
    else if (event.kind === 'attempt') this.maybeRunnable.delete(event.taskId);
    // Another worker drained and let its runs go: take them over now instead of a lease later.
    else if (event.kind === 'released' && event.payload?.leaseOwner !== this.instanceId)
      void this.recover().catch((error: unknown) => this.options.logger.warn({ err: error }, 'recovery after a release failed'));
  }

  /**
   * A task created elsewhere is a reason to claim unless its run started with its creation (a create into another
   * worker's slot commits `created` and `attempt` together): events of one commit arrive in one synchronous batch,
   * so the decision waits for the batch to end.
   */
  private hintAfterBatch(taskId: string): void {
    this.maybeRunnable.add(taskId);
    if (this.maybeRunnable.size > 1) return;
    queueMicrotask(() => {
      const runnable = this.maybeRunnable.size > 0;
      this.maybeRunnable.clear();
      if (runnable) this.hint();
    });
  }

  private onProgress(taskId: string, listener: ProgressListener): () => void {
    let listeners = this.progressListeners.get(taskId);
    if (!listeners) {
      listeners = new Set();
      this.progressListeners.set(taskId, listeners);
    }
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.progressListeners.get(taskId) === listeners) this.progressListeners.delete(taskId);
    };
  }

  /**
   * Renew the leases of every run of this worker. Only the runs that were running when the renewal was sent are
   * judged by its answer, each only while the same run is still in its slot: a run launched meanwhile holds a lease
   * written after that snapshot. A run the renewal missed is judged from its row (see {@link judgeUnrenewedLease}):
   * aborted as `lease_lost` only when another owner holds the lease (issue 9).
   */
  private async heartbeat(): Promise<void> {
    if (this.heartbeating || this.phase === 'stopped') return;
    const slots = new Map(this.running);
    const inHand = [...this.inHand];
    if (slots.size + inHand.length === 0) return;
    this.heartbeating = true;
    try {
      const held = [...slots.keys(), ...inHand.map((record) => record.taskId)];
      const renewed = new Set(await this.options.store.renewLeases(this.instanceId, held, this.options.settings.leaseMs));
      for (const [taskId, slot] of slots) {
        if (!renewed.has(taskId)) await this.checkLease(taskId, slot);
      }
      // A task in hand whose lease is not ours any more (cancelled, expired, taken) is dropped before it runs.
      for (const record of inHand) {
        if (renewed.has(record.taskId) || !this.inHand.includes(record)) continue;
        const verdict = judgeUnrenewedLease(await this.options.store.getUnscoped(record.taskId), this.instanceId);
        if (verdict.kind === 'retake') await this.options.store.renewLeases(this.instanceId, [record.taskId], this.options.settings.leaseMs);
        else if (verdict.kind === 'abort') this.inHand.splice(this.inHand.indexOf(record), 1);
      }
    } finally {
      this.heartbeating = false;
    }
  }

  /** Judge one run the renewal missed, from its row; see {@link judgeUnrenewedLease}. */
  private async checkLease(taskId: string, slot: Slot): Promise<void> {
    // A run still starting is judged by its own conditional `startAttempt`; a finished or aborted one needs nothing.
    const current = (): boolean => this.running.get(taskId) === slot && slot.record !== undefined && !slot.controller.signal.aborted;
    if (!current()) return;
    const verdict = judgeUnrenewedLease(await this.options.store.getUnscoped(taskId), this.instanceId);
    if (!current()) return;
    if (verdict.kind === 'retake') {
      await this.options.store.renewLeases(this.instanceId, [taskId], this.options.settings.leaseMs);
    } else if (verdict.kind === 'abort') {
      if (verdict.reason === 'lease_lost') {
        this.options.logger.warn(
          { taskId: redactTaskId(taskId), leaseOwner: verdict.leaseOwner },
          'another owner holds the lease of a run of this process; aborting it',
        );
      }
      this.abortLocal(taskId, verdict.reason);
    }
  }

  private async drainOnce(ms: number): Promise<void> {
    const { logger, store } = this.options;
    const wasRunning = this.phase === 'running';
    this.phase = 'draining';
    // A draining worker starts no tool (issue 22): runs that have not started theirs (waiting for a thread, say) are
    // withdrawn and give themselves back as they end; tasks in hand, never launched, go back at once. Both uncounted.
    for (const slot of this.running.values()) slot.withdraw.abort('shutdown');
    const inHand = this.inHand.splice(0).map((record) => record.taskId);
    if (inHand.length > 0)
      await store
        .releaseUnstarted(this.instanceId, inHand)
        .catch((error: unknown) => logger.warn({ err: error }, 'giving back tasks in hand failed; their leases lapse on their own'));
    const ends = (): Array<Promise<void>> => [...this.running.values()].map((slot) => slot.ended);
    const busy = (): boolean => this.running.size + this.creating + this.claiming + this.inHand.length > 0;
    if (wasRunning && busy() && ms > 0) {
      logger.info({ runs: this.running.size, drainMs: ms }, 'draining: waiting for runs to finish');
      await settledWithin(ms, async () => {
        while (busy()) await Promise.all([...ends(), pause(10)]);
      });
    }
    const left = [...this.running.entries()];
    for (const [taskId] of left) this.abortLocal(taskId, 'shutdown');
    if (left.length > 0) {
      logger.info({ runs: left.length }, 'drain: aborting runs that are still going (reason shutdown) and releasing their leases');
      await settledWithin(this.options.settings.abortGraceMs + TERMINATION_MARGIN_MS, () => Promise.all(ends()));
    }
    this.phase = 'stopped';
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    this.unsubscribe();
    await this.statusWriter.close();
    // Aborted runs are released for recovery, which re-runs them if their tool is safe to re-run. One that never
    // started its tool (the drain's abort came before the executor) did nothing: it goes back uncounted.
    const unstarted = left.filter(([, slot]) => slot.done && !slot.toolStarted).map(([taskId]) => taskId);
    const started = left.filter(([, slot]) => !slot.done || slot.toolStarted).map(([taskId]) => taskId);
    await Promise.all([store.releaseUnstarted(this.instanceId, unstarted), store.releaseLeases(this.instanceId, started)]).catch((error: unknown) =>
      logger.warn({ err: error }, 'releasing leases failed; they lapse on their own'),
    );
  }
}

/** Resolve when `work` settles or after `ms`, whichever comes first. */
function settledWithin(ms: number, work: () => Promise<unknown>): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    void work().finally(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
