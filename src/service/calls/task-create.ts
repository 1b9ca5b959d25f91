import type { Clock } from '../../core/clock.js';
import { quotaExceeded, type TasksError } from '../../core/errors.js';
import { GATHERED_STEP } from '../../core/executor.js';
import type { WorkerHandOff } from '../../core/hand-off.js';
import { newTaskId } from '../../core/ids.js';
import type { AuditEntry } from '../../core/ledger.js';
import type { TasksServerLimits } from '../../core/limits.js';
import type { Logger } from '../../core/logger.js';
import type { CreateQuota, QuotaRefusal, TaskStore } from '../../core/store.js';
import type { JsonObject, JsonValue, NewTask, TaskRecord } from '../../core/task.js';
import { TRACE_STEP, type TraceCarrier } from '../../core/trace-context.js';
import type { TaskCaller } from '../caller.js';
import type { TaskReads } from '../task-reads.js';
import type { FreshTasks } from '../tasks/fresh-tasks.js';
import { ttlFor } from '../ttl-policy.js';
import type { RunPlan } from './call-plan.js';
import { type KeyClaim, replayOf } from './idempotency.js';

/** The window of `maxCreatesPerMinute` (ms). */
const QUOTA_WINDOW_MS = 60_000;

/** The statusMessage of a task that waits for a worker slot. */
const QUEUED = 'queued';

/** What a created task is written with besides its row: the `gather` value and the trace context its runs link to. */
export interface TaskStartData {
  gathered: JsonValue | undefined;
  trace: TraceCarrier | undefined;
}

/** How the new task is tied to the request that created it. */
export interface TaskSession {
  /** Called once the task is committed and before its first run (a v1 session subscribes to its notifications). */
  onCreated?: (record: TaskRecord) => void;
  /**
   * The `call` audit entry of the new task, given its id, written with it ({@link NewTask.audit}; see
   * `OperationAudit.carried`).
   */
  audit?: (taskId: string) => AuditEntry | undefined;
  /** The v1 session whose `tools/call` this is, recorded with the task ({@link NewTask.sessionId}). */
  sessionId?: string;
  /**
   * The adapter has not read `sessionId`'s record for this request: the create checks it ({@link NewTask.requireSession})
   * and is refused with `StoreError` `gone` when the session was deleted.
   */
  requireSession?: boolean;
}

/** What a {@link TaskCreator} is built from. */
export interface TaskCreatorOptions {
  store: TaskStore;
  handOff?: WorkerHandOff;
  limits: Readonly<TasksServerLimits>;
  clock: Clock;
  logger: Logger;
  reads: TaskReads;
  /** Told of every task this process creates (a `tasks/result` that follows starts from it). */
  fresh?: FreshTasks;
}

/**
 * The durable create of a `tools/call` task and its per-owner policies, applied in the create's own transaction:
 * idempotency keys (the same key → the same task; another tool or other arguments → `-32602`) and quotas
 * (`-31001`, exact across API instances, issue 23 §4).
 */
export class TaskCreator {
  constructor(private readonly options: TaskCreatorOptions) {}

  /**
   * Create the task of a `task` or `fallback` plan durably — answered only after its commit (SEP-2663 E14) — with
   * the embedded worker's lease when it has a free slot. With a key claim, the key and the task are written in one
   * transaction; a key taken meanwhile (another instance's concurrent call) answers with that call's task instead.
   * With per-owner quotas, the store admits the task in that same transaction.
   * @throws TasksError `-31001` when a quota refuses the task (nothing written); `-32602` for a key reused with
   *   other arguments.
   */
  async create(caller: TaskCaller, plan: RunPlan, { gathered, trace }: TaskStartData, session: TaskSession, claim?: KeyClaim): Promise<TaskRecord> {
    const { onCreated, sessionId, requireSession } = session;
    const { limits, clock, store, handOff } = this.options;
    const taskId = newTaskId();
    const { fresh } = this.options;
    fresh?.expect(taskId);
    const reservation = handOff?.reserve(taskId);
    const task: NewTask = {
      taskId,
      ownerKey: caller.ownerKey,
      generation: caller.generation,
      protocolVersion: caller.protocolVersion,
      toolName: plan.tool.name,
      arguments: (plan.call.arguments ?? {}) as JsonObject,
      clientCapabilities: caller.clientCapabilities,
      progressToken: plan.call.progressToken,
      // The tool's immediate response is the task's first statusMessage (SEP-2663 E11); the worker keeps it on start.
      statusMessage: plan.immediateResponse ?? (reservation ? null : QUEUED),
      createdAt: clock.now(),
      ttlMs: ttlFor(limits, caller.generation, plan.requestedTtlMs, plan.tool.defaultTtlMs),
      pollIntervalMs: limits.pollIntervalMs,
      leaseOwner: reservation?.leaseOwner ?? null,
      leaseMs: reservation?.leaseMs ?? null,
      startNow: reservation !== undefined,
      ...stepsOf(gathered, trace),
      ...(sessionId === undefined ? {} : { sessionId }),
      ...(requireSession === true ? { requireSession } : {}),
    };
    const audit = session.audit?.(taskId);
    if (audit) task.audit = audit;
    const quota = this.quota();
    let record: TaskRecord;
    try {
      if (claim) {
        const result = await store.claimIdempotencyKey({ ...claim, taskId }, task, quota);
        if (!result.claimed) {
          // A refusal is thrown (the catch below gives the reservation back); a taken key replays its task.
          if ('refused' in result) throw this.refusal(caller, result.refused);
          reservation?.cancel();
          fresh?.drop(taskId);
          return await replayOf(result.existing, claim, (id) => this.keyTask(claim, id));
        }
        record = result.task as TaskRecord;
      } else if (quota) {
        const admission = await store.admitCreate(task, quota);
        if (!admission.admitted) throw this.refusal(caller, admission);
        record = admission.task;
      } else {
        record = await store.create(task);
      }
    } catch (error) {
      reservation?.cancel();
      fresh?.drop(taskId);
      throw error;
    }
    fresh?.remember(record);
    try {
      onCreated?.(record);
    } catch (error) {
      this.options.logger.error({ err: error }, 'onCreated of a new task threw');
    }
    reservation?.start(record);
    return record;
  }

  /** The task a live key of this caller points at (see `replayOf`), or `undefined` when the key is free. */
  async replayed(claim: KeyClaim): Promise<TaskRecord | undefined> {
    const existing = await this.options.store.findIdempotencyKey({ ownerKey: claim.ownerKey, generation: claim.generation }, claim.key);
    return existing && replayOf(existing, claim, (id) => this.keyTask(claim, id));
  }

  /**
   * Take `claim`'s key for an inline call before it runs (an inline call is answered once per key).
   * @returns the task of the key's earlier call when the key was taken (or the error of `replayOf`), else `undefined`.
   */
  async claimInline(claim: KeyClaim): Promise<TaskRecord | undefined> {
    const taken = await this.options.store.claimIdempotencyKey({ ...claim, taskId: null });
    // Without a task no quota was asked for, so a claim that fails found the key taken.
    return !taken.claimed && 'existing' in taken ? replayOf(taken.existing, claim, (id) => this.keyTask(claim, id)) : undefined;
  }

  /** A key's task, read with the claim's owner and generation (a key never reveals another owner's task). */
  private keyTask(claim: KeyClaim, taskId: string): Promise<TaskRecord | undefined> {
    return this.options.reads.get(taskId, { ownerKey: claim.ownerKey, generation: claim.generation });
  }

  /**
   * The per-owner quotas (issue 10 §2), checked by the store in the create's own transaction so that they are exact
   * and hold across API instances (issue 23 §4); `undefined` when neither is set.
   */
  private quota(): CreateQuota | undefined {
    const { maxActiveTasksPerOwner: maxActive, maxCreatesPerMinute: maxCreates } = this.options.limits;
    return maxActive === null && maxCreates === null ? undefined : { maxActive, maxCreates, windowMs: QUOTA_WINDOW_MS };
  }

  /** The `-31001` of a create the store refused, with `data.reason` `active_tasks` / `create_rate` and `data.retryAfterMs`. */
  private refusal(caller: TaskCaller, refused: QuotaRefusal): TasksError {
    const { maxActiveTasksPerOwner: maxActive, maxCreatesPerMinute: maxCreates, pollIntervalMs } = this.options.limits;
    this.options.logger.info({ owner: caller.ownerKey, reason: refused.reason }, 'task create refused: quota');
    if (refused.reason === 'create_rate') return quotaExceeded('create_rate', maxCreates as number, refused.retryAfterMs);
    return quotaExceeded('active_tasks', maxActive as number, pollIntervalMs);
  }
}

/** The steps journaled in the create's transaction: `@gathered`, `@trace` (see `TRACE_STEP`). */
function stepsOf(gathered: JsonValue | undefined, trace: TraceCarrier | undefined): { steps?: Record<string, JsonValue> } {
  const steps: Record<string, JsonValue> = {};
  if (gathered !== undefined) steps[GATHERED_STEP] = gathered;
  if (trace) steps[TRACE_STEP] = { ...trace };
  return Object.keys(steps).length === 0 ? {} : { steps };
}
