/**
 * The {@link ExecutionHost} of one run: what a tool's `ctx` does, whichever executor runs it — statuses and progress
 * (sanitised, coalesced by the status writer), the step journal, owner state, questions, domain operations with
 * their audit entries, logs — and the same host with a trace span per step and operation.
 */
import type { Clock } from '../core/clock.js';
import type { ExecutionHost } from '../core/executor.js';
import type { ProgressListener } from '../core/hand-off.js';
import { newTaskId } from '../core/ids.js';
import type { Logger } from '../core/logger.js';
import type { RunTrace } from '../core/run-tracer.js';
import type { TaskStore } from '../core/store.js';
import { StoreError, toolFacingError } from '../core/store-error.js';
import type { JsonValue, TaskRecord } from '../core/task.js';
import { MAX_RESULT_DEPTH, nestedDeeperThan, sanitizeModelText, tooDeepArgument } from '../core/tool-outcome.js';
import { appendAudit, operationEntry } from '../ledger/audit.js';
import { judgeUnrenewedLease } from './lease-verdict.js';
import type { StatusWriter } from './status-writer.js';
import { createTaskElicitor, type InPlaceWait } from './task-elicitor.js';

/** What a run's host works with: the worker's store, clock, lease owner, status writer and progress listeners. */
export interface RunHostDeps {
  store: TaskStore;
  clock: Clock;
  leaseOwner: string;
  /** The worker's lease length (ms): a run counted again takes a lease this long (see `confirmHeld` below). */
  leaseMs: number;
  statusWriter: StatusWriter;
  progressListeners: ReadonlyMap<string, ReadonlySet<ProgressListener>>;
  /**
   * The tool waits for its answers in place (`elicits: 'in-place'`): see {@link InPlaceWait}; the host adds the check
   * made once the answers are in ({@link InPlaceWait.confirmHeld}).
   */
  inPlace?: Omit<InPlaceWait, 'confirmHeld'>;
  /**
   * This run, apart from any other run of the same task in this process (the fence in the store tells processes
   * apart, not runs): `signal` is aborted once the run is over (cancelled, expired, lease lost, shutdown), and
   * `lose(reason)` aborts it when the store says the task is no longer this run's (another owner, ended, deleted);
   * `current()` resolves whether no later run of the task has started in this process (see `confirmHeld` below).
   */
  run: { signal: AbortSignal; lose(reason: 'lease_lost' | 'expired' | 'cancelled' | 'settled'): void; current(): Promise<boolean> };
}

/** The host of `record`'s run (see the module comment). */
export function runHost(deps: RunHostDeps, record: TaskRecord, logger: Logger): ExecutionHost {
  const { store, clock, statusWriter, progressListeners } = deps;
  const { taskId } = record;
  const { elicit, openOperation, settleOperation } = hostCalls(deps, record, logger);
  // While the run waits in place for an answer, the task's statusMessage is its question and its lastUpdatedAt the
  // start of the input timeout: what the tool says meanwhile (an upstream's progress) must change neither. Progress
  // listeners (notifications to a live client) still hear it.
  const asking = (): boolean => deps.inPlace?.waits.isWaiting(taskId) === true;
  let parked = false;
  /** This run is over: aborted (cancelled, expired, lease lost, shutdown), or parked for input. */
  const over = (): boolean => deps.run.signal.aborted || parked;
  /**
   * The error for a step the store refused (`not_held`), the run stopped as the heartbeat would stop it: judged from
   * the task's row — another owner holds it (`lease_lost`), it ended (`cancelled`, `settled`) or is gone (`expired`).
   * A run that is over already (a park that landed meanwhile: the row names no owner) is only told so.
   */
  const notHeld = async (name: string): Promise<Error> => {
    if (over()) return runOver(logger, name);
    const row = await store.getUnscoped(taskId).then(
      (found) => ({ found }),
      () => undefined,
    );
    const verdict = row === undefined ? undefined : judgeUnrenewedLease(row.found, deps.leaseOwner);
    if (verdict?.kind !== 'abort') return runOver(logger, name);
    deps.run.lose(verdict.reason);
    return lostTask(logger, name);
  };
  return {
    setStatus: (message) => {
      if (!asking()) statusWriter.set(taskId, sanitizeModelText(message));
    },
    progress: (done, total, message) => {
      if (!asking()) statusWriter.set(taskId, sanitizeModelText(message));
      for (const listener of progressListeners.get(taskId) ?? []) listener(done, total, message);
    },
    // The journal is read and written under the run's lease. A run that is over (aborted, or parked for input:
    // another run of the task may start, in this process too) starts no step; one whose task another process took
    // over (once its lease lapsed) or that ended neither starts a step nor records a value the new run did not compute.
    getStep: (name) =>
      toolFacing(logger, 'getStep', async () => {
        if (over()) throw runOver(logger, name);
        const entry = await store.lookupStep(taskId, name, deps.leaseOwner);
        if (entry.kind === 'not_held') throw await notHeld(name);
        return entry.kind === 'journaled' ? { value: entry.value } : undefined;
      }),
    // A step that was under way when its run parked or was aborted is still journaled while nobody else holds the
    // task (the next run replays it rather than running it again); the value the journal holds is what the run gets.
    putStep: (name, value) =>
      toolFacing(logger, 'putStep', async () => {
        if (nestedDeeperThan(value, MAX_RESULT_DEPTH)) throw new Error(tooDeepArgument('putStep'));
        const entry = await store.putStep(taskId, name, value, deps.leaseOwner);
        if (entry.kind === 'not_held') throw await notHeld(name);
        return asStored(entry.value);
      }),
    getOwnerState: (key) => toolFacing(logger, 'getOwnerState', () => store.getToolState(record.ownerKey, record.toolName, key)),
    putOwnerState: (key, value) =>
      toolFacing(logger, 'putOwnerState', async () => {
        if (nestedDeeperThan(value, MAX_RESULT_DEPTH)) throw new Error(tooDeepArgument('putOwnerState'));
        return store.putToolState(record.ownerKey, record.toolName, key, value, clock.now());
      }),
    elicit: (requests) =>
      toolFacing(logger, 'elicit', async () => {
        const answered = await elicit(requests);
        if ('parked' in answered) parked = true;
        return answered;
      }),
    log: (entry) => logger[entry.level](entry.fields, entry.message),
    openOperation: (spec) => toolFacing(logger, 'openOperation', () => openOperation(spec)),
    settleOperation: (operationId, settlement) => toolFacing(logger, 'settleOperation', () => settleOperation(operationId, settlement)),
  };
}

/**
 * `work`'s result; a {@link StoreError} it throws is logged whole and thrown again as the tool may see it: its code
 * and {@link requestorTextOf} its message, without its cause. The tool — any executor's: in process (an upstream's
 * gateway hands it on to the upstream server), or in a thread — is a requestor-side audience; the driver's detail
 * and the operator's remedy stay in the log (stop 42).
 */
async function toolFacing<T>(logger: Logger, method: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof StoreError)) throw error;
    if (error.code !== 'conflict' && error.code !== 'invalid') logger.error({ err: error, method }, "a tool's context operation failed in the task store");
    throw toolFacingError(error);
  }
}

/**
 * What a run's `ctx.step` throws once its task is no longer run under this process's lease (the run is aborted by
 * then: its outcome is discarded, as the heartbeat would have found, and a tool that swallows the error is stopped
 * all the same). Logged here; the message names no task id (a tool may hand it on).
 */
function lostTask(logger: Logger, name: string): Error {
  logger.info({ step: name }, 'run no longer holds its task (taken over, ended or deleted); its step is neither run nor journaled');
  return new Error(`This run no longer holds its task (another run took it over, or it ended); step "${name}" was not journaled`);
}

/** What a run's `ctx.step` throws once the run is over (aborted, or parked for input): no step starts. */
function runOver(logger: Logger, name: string): Error {
  logger.info({ step: name }, 'run is over (aborted or parked for input); its step is not run');
  return new Error(`This run is over (it was stopped, or it is waiting for input); step "${name}" was not run`);
}

/** `value` as the journal gives it back on a replay (JSON): what a first run gets must be what a later one gets. */
function asStored(value: JsonValue): JsonValue {
  const text = JSON.stringify(value);
  return text === undefined ? value : (JSON.parse(text) as JsonValue);
}

/** The elicitor and the operation calls of {@link runHost}, unwrapped. */
function hostCalls(deps: RunHostDeps, record: TaskRecord, logger: Logger): Pick<ExecutionHost, 'elicit' | 'openOperation' | 'settleOperation'> {
  const { store, clock, leaseOwner, statusWriter } = deps;
  const { taskId } = record;
  return {
    elicit: createTaskElicitor({
      record,
      store,
      leaseOwner,
      now: () => clock.now(),
      // A status write still pending would land after the question and hide it.
      ...(deps.inPlace
        ? { inPlace: { ...deps.inPlace, confirmHeld: () => confirmHeld(deps, record, logger) }, beforeAsking: () => statusWriter.takePending(taskId) }
        : {}),
    }),
    openOperation: async (spec) => {
      const operationId = newTaskId();
      const operation = await store.openOperation({
        operationId,
        key: spec.key,
        taskId,
        ownerKey: record.ownerKey,
        toolName: record.toolName,
        effect: spec.effect,
        target: spec.target,
        objectVersion: spec.objectVersion ?? null,
        createdAt: clock.now(),
      });
      const opened = operation.operationId === operationId;
      if (opened) await appendAudit(store, [operationEntry(operation, clock.now())], logger);
      return { operation, opened };
    },
    settleOperation: async (operationId, settlement) => {
      const settled = await store.settleOperation(operationId, { ...settlement, now: clock.now() });
      if (settled && settled.taskId !== taskId) throw new Error(`operation ${operationId} is not an operation of this task`);
      if (settled) await appendAudit(store, [operationEntry(settled, clock.now())], logger);
      return settled;
    },
  };
}

/**
 * {@link InPlaceWait.confirmHeld} of `record`'s run: once its answers are in, the task must still be this run's. This
 * process may have stalled past its lease and registration while the run waited, and recovery elsewhere handed the
 * task back (its tool safe to re-run); an answer landing before the heartbeat judged the run makes the task runnable,
 * and it is claimed and run again — elsewhere, or here. The row decides as the heartbeat would for a run that waits in
 * place ({@link judgeUnrenewedLease}): no owner, or another one, and the run stops. A row that names this process
 * does not tell runs apart (a claim here restores the owner and `attempt` this run knew), so the worker's slot table
 * decides: a later run of the task started here, and this one stops; none (this process's recovery took the answered
 * task back while this run still held its slot, and started nothing beside it), and this run goes on — the only run.
 * A run that lost its task is aborted as the heartbeat aborts it (`lease_lost`, or `cancelled` / `settled` / `expired`
 * for a task that ended or is gone).
 */
async function confirmHeld(deps: RunHostDeps, record: TaskRecord, logger: Logger): Promise<void> {
  const row = await deps.store.getUnscoped(record.taskId);
  const verdict = judgeUnrenewedLease(row, deps.leaseOwner, true);
  if (verdict.kind !== 'abort' && (await deps.run.current())) {
    // Taken back here by recovery while this run held its slot: the hand-back uncounted the run (`releaseUnstarted`),
    // and it goes on, so it is counted again — attempts and `maxAttempts` see it, and a crash now is a started run's.
    if (row?.leaseOwner === deps.leaseOwner && row.attempt < record.attempt) await deps.store.startAttempt(record.taskId, deps.leaseOwner, deps.leaseMs);
    return;
  }
  const reason = verdict.kind === 'abort' ? verdict.reason : 'lease_lost';
  if (reason === 'lease_lost') {
    logger.warn(
      { leaseOwner: row?.leaseOwner ?? null },
      'a run that waited in place got its answers after its task was handed back and started again; this run does not resume',
    );
  }
  deps.run.lose(reason);
}

/**
 * `host` with a span per `ctx.step` (from the journal lookup to the journal write) and per `ctx.operation` (from
 * its pending row to its settlement): built from the context operations themselves, so it works for any executor.
 */
export function tracedHost(host: ExecutionHost, trace: RunTrace): ExecutionHost {
  const steps = new Map<string, (ending: { replayed: boolean }) => void>();
  const operations = new Map<string, (status: string) => void>();
  return {
    ...host,
    getStep: async (name) => {
      const end = trace.step(name);
      const journaled = await host.getStep(name);
      if (journaled) end({ replayed: true });
      else steps.set(name, end);
      return journaled;
    },
    putStep: async (name, value) => {
      const journaled = await host.putStep(name, value);
      steps.get(name)?.({ replayed: false });
      steps.delete(name);
      return journaled;
    },
    openOperation: async (spec) => {
      const opened = await host.openOperation(spec);
      const end = trace.operation({ key: spec.key, effect: spec.effect });
      if (opened.operation.status === 'pending') operations.set(opened.operation.operationId, end);
      else end(opened.operation.status);
      return opened;
    },
    settleOperation: async (operationId, settlement) => {
      const settled = await host.settleOperation(operationId, settlement);
      operations.get(operationId)?.(settled?.status ?? settlement.status);
      operations.delete(operationId);
      return settled;
    },
  };
}
