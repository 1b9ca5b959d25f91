/**
 * The task worker: its slot table (runs, reservations for creates, claims in flight, tasks in hand), the claim and
 * recovery loops that fill it, cancellation from the feed, and the drain that empties it. The invariants "a slot is
 * a lease" and "a drained slot never starts" live here, in the one class that writes the table. What happens inside
 * a slot is task-run.ts; lease renewal is lease-heartbeat.ts; options, a run's ctx host, outcome bounding and status
 * coalescing live in task-worker-options.ts, run-host.ts, large-result.ts and status-writer.ts.
 */
import type { OutcomeWrittenListener, ProgressListener, SlotReservation, WorkerHandOff } from '../core/hand-off.js';
import { redactTaskId } from '../core/logger.js';
import { settledWithin } from '../core/settled-within.js';
import type { TaskEvent } from '../core/store.js';
import type { TaskRecord } from '../core/task.js';
import { failByRuntime } from './fail-task.js';
import { InputWakes } from './input-wakes.js';
import { LeaseHeartbeat } from './lease-heartbeat.js';
import { failOrphan, interruptedMessage, type OrphanDeps, recoverAsking, safeToRerun } from './orphan-recovery.js';
import { StatusWriter } from './status-writer.js';
import { type AbortReason, type RunContext, runTask, type RuntimeFailure, type Slot } from './task-run.js';
import type { TaskWorkerOptions } from './task-worker-options.js';

export type { TaskWorkerOptions, TaskWorkerSettings } from './task-worker-options.js';

/** Beyond the abort grace, how long a drain waits for runs whose threads were terminated to report back (ms). */
const TERMINATION_MARGIN_MS = 500;
/** Most lapsed tasks one recovery pass takes. */
const RECOVERY_BATCH = 100;

/** Task ids remembered as hinted runnable while no claim can be sent (see `TaskWorker.hint`). */
const MAX_HINTED = 1024;

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
  private readonly leases: LeaseHeartbeat;
  /** What a run in a slot uses of this worker (see {@link runTask}). */
  private readonly run: RunContext;
  /** What recovery of a task whose run is gone uses of this worker (see `orphan-recovery.ts`). */
  private readonly orphans: OrphanDeps;
  private readonly progressListeners = new Map<string, Set<ProgressListener>>();
  /** Outcome writes of runs that have finished here and are not committed yet, by task id. */
  private readonly outcomeWrites = new Map<string, Promise<unknown>>();
  /** Who hears the outcomes this worker commits (see {@link WorkerHandOff.onOutcomeWritten}). */
  private readonly outcomeListeners = new Set<OutcomeWrittenListener>();
  /** Runs waiting for answers in place (`elicits: 'in-place'`), woken by the feed. */
  private readonly inputWakes = new InputWakes();
  private readonly timers: NodeJS.Timeout[] = [];
  private unsubscribe: () => void = () => {};
  private phase: 'created' | 'running' | 'draining' | 'stopped' = 'created';
  /**
   * Tasks hinted runnable since the last claim was issued (a claim covers every hint seen before it is sent). A claim
   * that comes back with a hinted task drops it, so an event read after the claim took its task asks for no claim.
   */
  private readonly hinted = new Set<string>();
  /** A hint that names no task (the poll fallback, a start, a failed claim) or a full claim: more may be runnable. */
  private unknownRunnable = true;
  /** Claims in flight (the slots they asked for are counted in `claiming` until they answer). */
  private readonly claims = new Set<Promise<void>>();
  private recovering = false;
  private recoverAgain = false;
  private draining: Promise<void> | undefined;

  constructor(private readonly options: TaskWorkerOptions) {
    this.statusWriter = new StatusWriter(options.store, options.clock, options.logger, options.settings.statusFlushIntervalMs);
    this.leases = new LeaseHeartbeat(options, {
      running: this.running,
      inHand: this.inHand,
      waitsInPlace: (taskId) => this.inputWakes.isWaiting(taskId),
      abortLocal: (taskId, reason) => this.abortLocal(taskId, reason),
    });
    this.orphans = { options, fail: (record, reason, message) => this.fail(record, reason, message) };
    this.run = {
      options,
      statusWriter: this.statusWriter,
      progressListeners: this.progressListeners,
      outcomeWrites: this.outcomeWrites,
      outcomeWritten: (record, outcome) => {
        for (const listener of this.outcomeListeners) {
          try {
            listener(record, outcome);
          } catch (error) {
            this.options.logger.warn({ err: error }, 'an outcome listener failed');
          }
        }
      },
      inputWaits: this.inputWakes,
      abortLocal: (taskId, reason) => this.abortLocal(taskId, reason),
      isCurrentRun: (taskId, slot) => this.isCurrentRun(taskId, slot),
      fail: (record, reason, message, leaseOwner) => this.fail(record, reason, message, leaseOwner),
      releaseSlot: (taskId, slot) => this.releaseSlot(taskId, slot),
    };
    this.handOff = {
      reserve: (taskId) => this.reserve(taskId),
      pendingOutcome: (taskId) => this.outcomeWrites.get(taskId),
      onOutcomeWritten: (listener) => {
        this.outcomeListeners.add(listener);
        return () => this.outcomeListeners.delete(listener);
      },
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
      // A pass holds the free slots while its statement is out; hints that came meanwhile could not claim then.
      this.claim();
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
      if (record.status === 'input_required') {
        await recoverAsking(this.orphans, record);
        continue;
      }
      const tool = tools.get(record.toolName);
      const neverStarted = record.attempt === 0;
      const rerunnable = safeToRerun(tool);
      if (tool && (neverStarted || rerunnable) && record.attempt < settings.maxAttempts) {
        if (this.phase !== 'running' || this.freeSlots() <= 0) {
          // Draining, or a create took the slot meanwhile: the lease just taken (no run counted) goes back at once,
          // and the release event tells other workers.
          await store.releaseLeases(settings.instanceId, [record.taskId]);
          continue;
        }
        // `runsSoFar`: the runs counted before this recovery (the new run's `attempt` is one more), not this run's number.
        logger.info({ taskId: redactTaskId(record.taskId), runsSoFar: record.attempt }, 'recovering task');
        this.options.observer?.orphanRecovered?.('rerun');
        this.launch(record.taskId);
      } else if (tool && rerunnable) {
        this.options.observer?.orphanRecovered?.('attempts_exhausted');
        await failOrphan(this.orphans, record, 'attempts_exhausted', `Task ran ${record.attempt} times without finishing`);
      } else {
        this.options.observer?.orphanRecovered?.('interrupted');
        await failOrphan(this.orphans, record, 'interrupted', interruptedMessage(record.toolName, 'ran'));
      }
    }
  }

  /**
   * Tasks may have become runnable (`taskIds`), or anything may have (the poll fallback ticked): claim when slots are
   * free. Any named task counts, one this worker still runs included: a run parked for input keeps its slot until it
   * unwinds, and its task is runnable again as soon as the answer lands (`created` hints of tasks this worker already
   * took are dropped before they get here, see {@link hintAfterBatch}).
   */
  private hint(taskIds?: Iterable<string>): void {
    if (taskIds === undefined) this.unknownRunnable = true;
    else for (const taskId of taskIds) this.hinted.add(taskId);
    // While every slot is busy hints pile up: past a bound, one "anything may be runnable" stands for them.
    if (this.hinted.size > MAX_HINTED) {
      this.hinted.clear();
      this.unknownRunnable = true;
    }
    this.claim();
  }

  /**
   * Claim runnable tasks into the free slots. The store write is issued synchronously, so a claim made when a run
   * frees its slot shares that run's outcome commit.
   */
  private claim(): void {
    if (this.phase !== 'running' || (!this.unknownRunnable && this.hinted.size === 0)) return;
    const limit = this.freeForClaims();
    if (limit <= 0) return;
    // Every hint seen so far is covered: its commit came before this claim's statement.
    this.hinted.clear();
    this.unknownRunnable = false;
    const { store, settings, logger } = this.options;
    this.claiming += limit;
    const claim: Promise<void> = store.claimRunnable(settings.instanceId, settings.leaseMs, limit).then(
      (records) => {
        this.claiming -= limit;
        this.claims.delete(claim);
        // Hints that arrived meanwhile for tasks this claim took are answered; the others may have committed after it.
        for (const record of records) this.hinted.delete(record.taskId);
        if (records.length === limit) this.unknownRunnable = true;
        for (const record of records) this.startClaimed(record);
        this.claim();
      },
      (error: unknown) => {
        this.claiming -= limit;
        this.claims.delete(claim);
        this.unknownRunnable = true;
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
    void runTask(this.run, taskId, slot, started)
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

  private async fail(record: TaskRecord, reason: RuntimeFailure, message: string, leaseOwner?: string): Promise<TaskRecord | undefined> {
    this.statusWriter.takePending(record.taskId);
    return failByRuntime(this.options.store, record.taskId, reason, message, this.options.clock.now(), leaseOwner);
  }

  /**
   * Whether the run in `slot` is still this worker's run of `taskId`: no later run of the task was started here, into
   * a slot of its own or in hand. A run that waited in place asks this once its answers are in, after reading its task
   * row as held here (see `run-host.ts`): a claim here of the answered task, handed back meanwhile, leaves that same
   * row. Such a claim committed before that read, so it was sent before the read answered: the claims in flight now
   * are waited for first, and what they started is in the table then. A claim sent later finds the task leased.
   */
  private async isCurrentRun(taskId: string, slot: Slot): Promise<boolean> {
    if (this.claims.size > 0) await Promise.allSettled([...this.claims]);
    return this.running.get(taskId) === slot && !this.inHand.some((record) => record.taskId === taskId);
  }

  private abortLocal(taskId: string, reason: AbortReason): void {
    const slot = this.running.get(taskId);
    if (slot && !slot.controller.signal.aborted) {
      slot.controller.abort(reason);
      if (reason === 'cancelled' && slot.record) this.options.observer?.cancelDelivered?.(slot.record.toolName);
    }
  }

  private onEvent(event: TaskEvent): void {
    if (event.kind === 'input' || event.kind === 'status') this.inputWakes.notify(event.taskId);
    if (event.kind === 'expired') this.abortLocal(event.taskId, 'expired');
    else if (event.kind === 'status' && event.status === 'cancelled') this.abortLocal(event.taskId, 'cancelled');
    // Settled elsewhere while it runs here (the input-timeout sweep, or the API failing an answer past its limits while
    // the run waits in place): its outcome is decided, so the run stops now rather than at the next heartbeat. A run
    // of this worker has left its slot before its own outcome commits, so its own event finds nothing to abort.
    else if (event.kind === 'status' && (event.status === 'failed' || event.status === 'completed')) this.abortLocal(event.taskId, 'settled');
    else if (event.kind === 'status' && event.status === 'working') this.hint([event.taskId]);
    else if (event.kind === 'created' && !this.reservedIds.has(event.taskId)) this.hintAfterBatch(event.taskId);
    else if (event.kind === 'attempt') {
      // Its run started (here or elsewhere): no claim will find it.
      this.maybeRunnable.delete(event.taskId);
      this.hinted.delete(event.taskId);
    }
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
      // A created task this worker already took (its claim answered before the event was read) is no reason.
      const runnable = [...this.maybeRunnable].filter((taskId) => !this.running.has(taskId) && !this.inHand.some((record) => record.taskId === taskId));
      this.maybeRunnable.clear();
      if (runnable.length > 0) this.hint(runnable);
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

  /** Renew the held leases (see {@link LeaseHeartbeat}); a stopped worker holds none. */
  private async heartbeat(): Promise<void> {
    if (this.phase === 'stopped') return;
    await this.leases.beat();
  }

  private async drainOnce(ms: number): Promise<void> {
    const { logger, store } = this.options;
    const wasRunning = this.phase === 'running';
    this.phase = 'draining';
    // A draining worker starts no tool (issue 22): runs that have not started theirs (waiting for a thread, say) are
    // withdrawn and give themselves back as they end; tasks in hand, never launched, go back at once. Both uncounted.
    for (const slot of this.running.values()) slot.withdraw.abort('shutdown');
    // A run waiting in place for an answer waits for a person, not for work to finish: it is stopped now (its
    // upstream call cancelled), and its task is settled below rather than left with a question no run will take.
    const asking = [...this.running.entries()].filter(([taskId]) => this.inputWakes.isWaiting(taskId));
    for (const [taskId] of asking) this.abortLocal(taskId, 'shutdown');
    const inHand = this.inHand.splice(0).map((record) => record.taskId);
    if (inHand.length > 0)
      await store
        .releaseUnstarted(this.instanceId, inHand)
        .catch((error: unknown) => logger.warn({ err: error }, 'giving back tasks in hand failed; their leases lapse on their own'));
    const ends = (): Array<Promise<void>> => [...this.running.values()].map((slot) => slot.ended);
    const busy = (): boolean => this.running.size + this.creating + this.claiming + this.inHand.length > 0;
    if (wasRunning && busy() && ms > 0) {
      logger.info({ runs: this.running.size, drainMs: ms }, 'draining: waiting for runs to finish');
      const drained = (async () => {
        while (busy()) await Promise.all([...ends(), pause(10)]);
      })();
      await settledWithin(drained, ms);
    }
    const left = [...this.running.entries()];
    for (const [taskId] of left) this.abortLocal(taskId, 'shutdown');
    if (left.length > 0) {
      logger.info({ runs: left.length }, 'drain: aborting runs that are still going (reason shutdown) and releasing their leases');
      await settledWithin(Promise.all(ends()), this.options.settings.abortGraceMs + TERMINATION_MARGIN_MS);
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
    await this.settleAsking(asking.map(([, slot]) => slot));
  }

  /**
   * The tasks whose runs the drain stopped while they waited in place: one whose tool is not safe to re-run fails
   * `interrupted` now, as recovery would fail a running one — its question would otherwise stay open for a run that
   * is gone, and an answer could only fail it. One that is safe to re-run keeps its question: its lease lapses, and
   * once answered any worker recovers it and runs it again (the answers replayed in order).
   */
  private async settleAsking(slots: readonly Slot[]): Promise<void> {
    const { store, tools, logger } = this.options;
    for (const record of slots.flatMap((slot) => (slot.record ? [slot.record] : []))) {
      if (safeToRerun(tools.get(record.toolName))) continue;
      await failByRuntime(store, record.taskId, 'interrupted', interruptedMessage(record.toolName, 'waited for input'), this.options.clock.now()).catch(
        (error: unknown) => logger.warn({ err: error, taskId: redactTaskId(record.taskId) }, 'failing a task that waited in place failed'),
      );
    }
  }
}

/** Resolve when `work` settles or after `ms`, whichever comes first. */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
