/**
 * One run of a task in a worker slot, from its attempt to its outcome write: the runtime limit and TTL timers, the
 * executor call with the run's host, shadow watch and trace, and what the outcome does to the task. The worker
 * (task-worker.ts) owns the slot table and decides when a run starts; this module owns what happens inside a slot.
 */
import { runtimeLimitMessage } from '../core/errors.js';
import { type ExecutionOutcome, GATHERED_STEP } from '../core/executor.js';
import type { ProgressListener } from '../core/hand-off.js';
import { type Logger, redactTaskId } from '../core/logger.js';
import type { RunTrace, RunTracer } from '../core/run-tracer.js';
import type { TaskStore } from '../core/store.js';
import { isStoreError, requestorTextOf } from '../core/store-error.js';
import type { TaskOutcome, TaskRecord } from '../core/task.js';
import { immediateResponseOf, settleExecution } from '../core/tool-outcome.js';
import { TRACE_STEP, traceCarrierFromJson } from '../core/trace-context.js';
import { discardUnservedChunks } from '../core/unserved-chunks.js';
import { appendAudit, shadowMismatchEntry } from '../ledger/audit.js';
import type { failByRuntime } from './fail-task.js';
import { boundLargeResult } from './large-result.js';
import { runHost, tracedHost } from './run-host.js';
import { inShadowMode, type ShadowSettings, type ShadowSink, ShadowWatch } from './shadow-watch.js';
import type { StatusWriter } from './status-writer.js';
import type { InputWaits } from './task-elicitor.js';
import type { TaskWorkerOptions } from './task-worker-options.js';

/**
 * Why a run was aborted. `lease_lost`: another owner holds the task's lease; `settled`: the task reached a terminal
 * status elsewhere (its outcome is already decided); `shutdown`: the worker drained and the run outlived it.
 */
export type AbortReason = 'cancelled' | 'expired' | 'runtime_limit' | 'lease_lost' | 'settled' | 'shutdown';

/** Why the runtime failed a task itself (see {@link failByRuntime}). */
export type RuntimeFailure = Parameters<typeof failByRuntime>[2];

/** One place of a worker's bounded concurrency, held by one run of one task. A slot is a lease. */
export interface Slot {
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

/**
 * What a run needs of its worker: the worker's options and shared writers, and the three moves that touch the slot
 * table or other runs (abort a run, fail a task and drop its pending status, free a slot), which stay the worker's.
 */
export interface RunContext {
  readonly options: TaskWorkerOptions;
  readonly statusWriter: StatusWriter;
  readonly progressListeners: ReadonlyMap<string, ReadonlySet<ProgressListener>>;
  /** Outcome writes of runs that have finished here and are not committed yet, by task id (the hand-off reads them). */
  readonly outcomeWrites: Map<string, Promise<unknown>>;
  /** Tell the hand-off's listeners about an outcome committed here (before its `outcomeWrites` entry settles). */
  outcomeWritten(record: TaskRecord, outcome: TaskOutcome | undefined): void;
  /** What a run that waits for its answers in place (a tool with `elicits: 'in-place'`) needs of its worker. */
  readonly inputWaits: InputWaits;
  abortLocal(taskId: string, reason: AbortReason): void;
  /**
   * Whether the run in `slot` is still this worker's run of `taskId`: no later run of the task has started here (the
   * store's fence tells processes apart, not runs of one process). See `TaskWorker.isCurrentRun`.
   */
  isCurrentRun(taskId: string, slot: Slot): Promise<boolean>;
  /**
   * Fail `record`'s task for a reason of the runtime (its pending status text dropped); with `leaseOwner`, only while
   * that owner holds the lease. Resolves to the failed task, or `undefined` when the failure did not apply.
   */
  fail(record: TaskRecord, reason: RuntimeFailure, message: string, leaseOwner?: string): Promise<TaskRecord | undefined>;
  releaseSlot(taskId: string, slot: Slot): void;
}

/**
 * Run `taskId` in `slot`: start its attempt (unless `started`, a run already counted), arm its TTL and runtime limit,
 * execute its tool, and settle the outcome — written with the lease released, the slot freed as soon as the tool is
 * done so the next claim shares that commit. A run withdrawn by a drain before its tool started is given back
 * uncounted; an aborted or parked run writes nothing. A rejection is the caller's to log; the caller frees the slot
 * when the run ends, whatever happened (freeing twice is harmless, see `releaseSlot`).
 */
export async function runTask(context: RunContext, taskId: string, slot: Slot, started?: TaskRecord): Promise<void> {
  const { store, tools, settings, clock, executor } = context.options;
  const startedAt = clock.now();
  const record = started ?? (await store.startAttempt(taskId, settings.instanceId, settings.leaseMs));
  if (!record || slot.controller.signal.aborted) return;
  slot.record = record;
  if (record.unreadableArguments !== undefined) {
    // Its arguments cannot be decoded here (a key this process lacks, an altered value; every process of a store has
    // the same keys, see the settings digest): its tool cannot run, and failing it lets the claims behind it go on.
    context.options.logger.error(
      { taskId: redactTaskId(taskId), reason: record.unreadableArguments },
      'a task cannot be decoded; failing it without running its tool',
    );
    // The requestor (or a model) reads this: no operator advice (adding the key back does not revive a failed task).
    await context.fail(record, 'task_unreadable', 'Task was not run: this server cannot decrypt its stored arguments; call the tool again');
    return;
  }
  const tool = tools.get(record.toolName);
  if (!tool) {
    await context.fail(record, 'interrupted', `Tool ${record.toolName} is not registered in this process`);
    return;
  }
  const logFields = { taskId: redactTaskId(taskId), tool: tool.name, attempt: record.attempt };
  const observer = context.options.observer;
  observer?.runStarted?.({
    tool: tool.name,
    generation: record.generation,
    attempt: record.attempt,
    queueWaitMs: Math.max(0, startedAt - (record.attempt <= 1 ? record.createdAt : record.lastUpdatedAt)),
  });
  const trace = context.options.tracer ? await startTrace(store, context.options.tracer, record) : undefined;
  /** Count the run as `outcome`; its duration ends `endedAt` (the tool's end, when its outcome is written later). */
  const ended = (outcome: string, message?: string, endedAt = clock.now()): void => {
    observer?.runEnded?.({ tool: tool.name, generation: record.generation, outcome, durationMs: Math.max(0, endedAt - startedAt) });
    trace?.end(outcome, message);
  };
  const logger = context.options.logger.child(logFields);
  const shadow =
    tool.shadow && inShadowMode(settings.shadow, tool)
      ? new ShadowWatch(tool.shadow, record, settings.shadow as ShadowSettings, shadowSink(context.options, record, logger), logger)
      : undefined;
  // The TTL is absolute: it runs from now, whatever the run waits for. The runtime limit is the tool's own time:
  // it starts when the executor says the tool started (after any wait for a thread and its warm-up, issue 22).
  const timers: NodeJS.Timeout[] = [];
  const runtimeLimitMs = tool.runtimeLimitMs ?? settings.runtimeLimitMs;
  const armAt = (ms: number, reason: 'expired' | 'runtime_limit'): void => {
    const timer = setTimeout(
      () => {
        if (slot.controller.signal.aborted) return;
        context.abortLocal(taskId, reason);
        if (reason === 'runtime_limit') void context.fail(record, 'runtime_limit', runtimeLimitMessage(tool.name, runtimeLimitMs));
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
    armAt(runtimeLimitMs, 'runtime_limit');
  };
  // A new run starts with the tool's immediate response, else empty ("queued" or the last run's words are over).
  const parsed = tool.inputSchema.safeParse(record.arguments);
  const initial = (parsed.success ? immediateResponseOf(tool, parsed.data) : undefined) ?? null;
  if (record.statusMessage !== initial) context.statusWriter.set(taskId, initial);
  let outcome: ExecutionOutcome;
  try {
    const gathered = tool.gather || tool.resolvesTasks?.length ? (await store.getStep(taskId, GATHERED_STEP))?.value : undefined;
    const request = { taskId, toolName: tool.name, arguments: record.arguments, confinement: settings.confinement, logFields, ownerKey: record.ownerKey };
    const host = runHost(
      {
        store: store,
        clock,
        leaseOwner: settings.instanceId,
        leaseMs: settings.leaseMs,
        statusWriter: context.statusWriter,
        progressListeners: context.progressListeners,
        ...(tool.elicits === 'in-place' ? { inPlace: { waits: context.inputWaits, signal: slot.controller.signal } } : {}),
        run: {
          signal: slot.controller.signal,
          lose: (reason) => {
            if (!slot.controller.signal.aborted) slot.controller.abort(reason satisfies AbortReason);
          },
          current: () => context.isCurrentRun(taskId, slot),
        },
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
    context.statusWriter.takePending(taskId);
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
    context.statusWriter.takePending(taskId);
    const reason = String(slot.controller.signal.reason ?? 'unknown');
    void shadow?.finish(outcome.kind === 'parked' ? undefined : reason === 'cancelled' ? 'cancelled' : reason === 'runtime_limit' ? 'failed' : undefined);
    ended(outcome.kind === 'parked' ? 'parked' : `aborted_${reason}`);
    logger.info(
      { reason: outcome.kind === 'parked' ? 'parked' : slot.controller.signal.reason },
      outcome.kind === 'parked' ? 'task parked for input' : 'tool run aborted; its outcome is discarded',
    );
    return;
  }
  // The tool is done: from here its outcome is written, and the run is counted by what became of it.
  const toolEndedAt = clock.now();
  shadow?.toolEnded();
  /**
   * The run's outcome was not stored: the store failed (the lease lapses and recovery decides), or the task is no
   * longer this run's (cancelled, expired, taken over).
   */
  const discarded = (): void => {
    void shadow?.finish(undefined);
    ended('discarded', undefined, toolEndedAt);
  };
  /**
   * The outcome's write failed. A store that is away (`unavailable`) or a fault that passes (a lock timeout, a
   * deadlock past its retries): the lease lapses and recovery decides, as for a worker that stopped — a re-run may
   * store it. A store out of space (`StoreError.outOfSpace`) or an outcome it refuses (`invalid`) would fail the same
   * way on every re-run, and recovery would call the task "interrupted (its worker stopped)": it fails now with
   * `result_not_stored`, if that smaller write can be made, and its tool is not run again; chunks the run stored
   * first (`chunksStored`) are deleted then, since nothing will serve them — on a full disk, that is space back.
   * Throws `error` otherwise.
   */
  const notStored = async (error: unknown, chunksStored = false): Promise<void> => {
    if (!(isStoreError(error, 'invalid') || (isStoreError(error, 'fault') && error.outOfSpace))) {
      discarded();
      throw error;
    }
    const message = `Tool ${tool.name} ran, but its result could not be stored (${requestorTextOf(error)}); it is not run again`;
    let failed: TaskRecord | undefined;
    try {
      // Only while this run holds the lease: a write that failed late may find the task taken over and running again.
      failed = await context.fail(record, 'result_not_stored', message, settings.instanceId);
    } catch {
      discarded();
      throw error;
    }
    // Failed here, or cancelled meanwhile: either way nothing will serve the chunks (a takeover's run keeps its own).
    if (chunksStored) await discardUnservedChunks(store, taskId, logger);
    if (!failed) {
      discarded();
      logger.info({}, 'task changed meanwhile (cancelled, expired or lease lost); its result, which could not be stored, is discarded');
      return;
    }
    logger.error({ err: error }, 'task result could not be stored; the task failed');
    ended('failed', message, toolEndedAt);
    void shadow?.finish('failed');
  };
  const unbounded = settleExecution(record.generation, outcome);
  let settled: Awaited<ReturnType<typeof boundLargeResult>>;
  try {
    settled = await boundLargeResult(store, taskId, unbounded, settings.resultLimits, settings.instanceId);
  } catch (error) {
    return notStored(error);
  }
  if (settled === undefined) {
    // Its large result could not be stored: the task is no longer this run's (cancelled, deleted, taken over).
    context.statusWriter.takePending(taskId);
    discarded();
    logger.info({}, 'task changed meanwhile (cancelled, expired or lease lost); its large result is discarded');
    return;
  }
  const pending = context.statusWriter.takePending(taskId);
  const write = store
    .transition(taskId, {
      to: settled.status,
      outcome: settled.outcome,
      statusMessage: settled.statusMessage ?? pending,
      leaseOwner: settings.instanceId,
      releaseLease: true,
      now: clock.now(),
      endedAudit: {},
    })
    .then((written) => {
      // Heard before the entry below settles, so a read woken by this commit finds the task in its cache (issue 25).
      if (written) context.outcomeWritten(written, settled.outcome);
      return written;
    });
  context.outcomeWrites.set(taskId, write);
  // The tool is done: its slot goes to the next runnable task now, whose claim then shares this commit.
  context.releaseSlot(taskId, slot);
  let written: TaskRecord | undefined;
  try {
    written = await write;
  } catch (error) {
    return notStored(error, settled !== unbounded && settled.outcome.kind === 'result');
  } finally {
    if (context.outcomeWrites.get(taskId) === write) context.outcomeWrites.delete(taskId);
  }
  // Counted once the write tells what became of the outcome, as a large result is: a run whose task was cancelled,
  // expired or taken over between the tool's end and the write is `discarded`, not `completed` (stop 41's notes).
  if (!written) {
    discarded();
    logger.info({}, 'task changed meanwhile (cancelled, expired or lease lost); outcome discarded');
    // A bounded result stands for chunks this run wrote: if a cancel won since, nothing will serve them (issue 10 §2).
    if (settled !== unbounded && settled.outcome.kind === 'result') await discardUnservedChunks(store, taskId, logger);
    return;
  }
  ended(settled.status, settled.statusMessage ?? undefined, toolEndedAt);
  void shadow?.finish(settled.status === 'completed' || settled.status === 'failed' ? settled.status : undefined);
}

/** Where the shadow watch of a run reports: the audit trail (`shadow.mismatch`) and the observer (metrics). */
function shadowSink(options: TaskWorkerOptions, record: TaskRecord, logger: Logger): ShadowSink {
  const { observer, store, clock } = options;
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
async function startTrace(store: TaskStore, tracer: RunTracer, record: TaskRecord): Promise<RunTrace> {
  const stored = await store.getStep(record.taskId, TRACE_STEP).catch(() => undefined);
  return tracer.startRun({
    taskId: record.taskId,
    tool: record.toolName,
    generation: record.generation,
    attempt: record.attempt,
    link: traceCarrierFromJson(stored?.value),
  });
}
