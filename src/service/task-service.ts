import type { Clock } from '../core/clock.js';
import type { PathConfinement } from '../core/confinement.js';
import { waitingMessage } from '../core/elicitation.js';
import { isTaskNotFound, quotaExceeded, resourceNotFound, runtimeFailure, TasksError, taskNotFound } from '../core/errors.js';
import type { TaskEventFeed } from '../core/event-feed.js';
import { GATHERED_STEP, type ExecutionHost, type Executor } from '../core/executor.js';
import type { WorkerHandOff } from '../core/hand-off.js';
import { newTaskId } from '../core/ids.js';
import type { TasksServerLimits } from '../core/limits.js';
import type { Logger } from '../core/logger.js';
import { isTerminal } from '../core/state-machine.js';
import { visibleAt } from '../core/store-rules.js';
import type { CreateQuota, QuotaRefusal, TaskBrowseQuery, TaskEvent, TaskStore } from '../core/store.js';
import type { OperationRecord } from '../core/ledger.js';
import type { InputRequestRecord, JsonObject, JsonValue, NewTask, TaskOutcome, TaskRecord } from '../core/task.js';
import type { ElicitRequest, ElicitResult, ToolDescriptor } from '../core/tool.js';
import { sanitizeModelText, toolErrorResult } from '../core/tool-outcome.js';
import type { ToolRegistry } from '../core/tool-registry.js';
import { ErrorCode } from '../protocol/constants.js';
import { largeResultMetaOf, parseResultUri, resultChunkCount, resultResourceUri } from '../protocol/result-resource.js';
import { planCall, usesTaskFallbackTools, type CallPlan, type CallPlanOptions, type RunPlan, type ToolCall } from './call-plan.js';
import { declaresTaskSupport, fallbackTaskCaller, type Caller, type TaskCaller } from './caller.js';
import { FALLBACK_TOOLS, type FallbackOperation } from './fallback-tools.js';
import { admitTask, runHooked, type TaskOperation, type TaskOperationContext, type TaskServiceHook } from './hooks.js';
import { TRACE_STEP, type RequestTrace, type TraceCarrier } from '../core/trace-context.js';
import { gatedDescriptor, killSwitchError, type TaskModeGate } from './task-mode-gate.js';
import { planAnswers } from './input-answers.js';
import { TaskReads, type TaskPage } from './task-reads.js';
import { ttlFor } from './ttl-policy.js';
import { viewerCaller, viewerPermissions, viewerSees, type Viewer, type ViewerPermissions } from './viewer.js';
import { requestDigest } from '../ledger/digest.js';
import { appendAudit, auditEntriesOf } from '../ledger/audit.js';
import { keyClaim, replayOf, type KeyClaim } from './idempotency.js';
import { resolveTaskInputs } from './task-inputs.js';
import { operationsSeenBy, reconcileSeenBy, type ViewerOperation, type ViewerOperationQuery } from './viewer-operations.js';
import type { ReconcileReport } from '../ledger/operations.js';
import { overviewSeenBy, type TaskOverview } from './viewer-overview.js';
import { resultResource, type ResultResource } from './result-resource.js';

/** What a {@link TaskService} is built from. */
export interface TaskServiceOptions {
  store: TaskStore;
  tools: ToolRegistry;
  /** This process's event feed (shared with an embedded worker). */
  feed: TaskEventFeed;
  /** Runs inline calls (sync tools, callers that cannot take a task). */
  executor: Executor;
  /** The embedded worker, when this process has one; without it tasks wait, unleased, for a worker elsewhere. */
  handOff?: WorkerHandOff;
  limits: Readonly<TasksServerLimits>;
  /** Where tools may touch the file system (preflight, gather, inline runs). */
  confinement: PathConfinement;
  clock: Clock;
  logger: Logger;
  /** Run around every operation, first outermost (see {@link TaskServiceHook}). @defaultValue none */
  hooks?: readonly TaskServiceHook[];
  /**
   * Offer hosts without task support in 2025-era sessions the task fallback tools (`get_task_status`,
   * `get_task_result`, `cancel_task`) and answer their calls of task-required tools with a task to follow through
   * them (`--task-fallback-tools`; see `CallPlanOptions`). @defaultValue false
   */
  taskFallbackTools?: boolean;
  /** The kill switch and canary (issue 15): who may use task mode for which tool now. @defaultValue every caller, every tool */
  gate?: TaskModeGate;
}

/** Asks the requestor of one call; `parked` when an answer is missing and the call must end with a question. */
export type CallAsk = (requests: readonly ElicitRequest[]) => Promise<{ answers: ElicitResult[] } | { parked: true }>;

/**
 * How one `tools/call` request can talk back, supplied by the adapter that received it (MRTR rounds on
 * 2026-07-28, elicitation requests in a 2025 session). A call that needs none — a plain task create — runs without.
 */
export interface CallInteraction {
  /** Aborted when the request ends (the client went away): gather phases and inline runs see it. */
  readonly signal: AbortSignal;
  /**
   * Run one phase (`gather`, or an inline run as `input`) that may ask questions through `ask`. When an answer is
   * missing, the interaction has built the request's `input_required` answer and returns it instead of the phase's
   * value (whatever the phase threw after `ask` said `parked`).
   */
  withInput<T>(prefix: 'gather' | 'input', phase: (ask: CallAsk) => Promise<T>): Promise<{ done: T } | { inputRequired: JsonObject }>;
  /**
   * After a `withInput` that finished a multi-round phase: an idempotency key derived from the signed request state
   * (the same for a replay of that final round, another for any other call), used when the client sent none.
   */
  derivedIdempotencyKey?(): string | undefined;
}

/** Options of {@link TaskService.callTool}. */
export interface CallToolOptions {
  /** How the request talks back; a fast path passes none and may then only carry out a plain task create. */
  interaction?: CallInteraction;
  /** Called once the task is committed and before its first run (a v1 session subscribes to its notifications). */
  onCreated?: (record: TaskRecord) => void;
  /** The v1 session whose `tools/call` this is, recorded with the task ({@link NewTask.sessionId}). */
  sessionId?: string;
}

/**
 * How a `tools/call` was answered: a task created (`immediateResponse`: the tool's sanitised text for the model,
 * R15), a task created for a host without task support (`fallback`, answered as a text result), the task operation
 * of a task fallback tool, a result (inline, or an `isError` refusal), or a question round.
 */
export type CallOutcome =
  | { kind: 'task'; task: TaskRecord; immediateResponse?: string }
  | { kind: 'fallback'; task: TaskRecord; immediateResponse?: string }
  | { kind: 'task_operation'; operation: FallbackOperation; task: TaskRecord; details: TaskDetails; cancelled?: boolean }
  | { kind: 'result'; result: JsonObject }
  | { kind: 'input_required'; result: JsonObject };

/** What a task adds to its record for a detailed view: the outcome when terminal, the open questions while waiting. */
export interface TaskDetails {
  outcome?: TaskOutcome;
  /** Pending input requests in creation order (only for `input_required`). */
  inputRequests?: InputRequestRecord[];
}

/** A change of a subscribed task: a committed event, or (for tasks running in this process) a progress report. */
export type TaskNotice =
  | { kind: 'event'; event: TaskEvent }
  | { kind: 'progress'; taskId: string; done: number; total: number | undefined; message: string };

/** An open subscription to some of a caller's tasks. */
export interface TaskSubscription {
  /** The tasks accepted: those of the caller's own that were visible when it subscribed (E45). */
  readonly taskIds: readonly string[];
  /** The current state of an accepted task (`undefined` once gone or expired, and for any other id). */
  read(taskId: string): Promise<TaskRecord | undefined>;
  /** See {@link TaskService.details}. */
  details(record: TaskRecord): Promise<TaskDetails>;
  /** Stop delivering. */
  close(): void;
}

/** The window of `maxCreatesPerMinute` (ms). */
const QUOTA_WINDOW_MS = 60_000;
/** What a viewer's task list asks for: the store's filters without the owner (the service sets it). */
export type ViewerQuery = Omit<TaskBrowseQuery, 'ownerKey'>;

/** One page of a viewer's list, newest first. */
export interface ViewerPage {
  tasks: TaskRecord[];
  /** `beforeSeq` of the next (older) page, or `undefined` when this was the last one. */
  nextBeforeSeq: number | undefined;
}

/** Everything a task page shows, read for one viewer. */
export interface TaskInspection {
  task: TaskRecord;
  /** The task's committed events, oldest first (at most {@link MAX_TIMELINE_EVENTS}). */
  events: TaskEvent[];
  details: TaskDetails;
  /** The task's domain operations (ledger rows), oldest first, beside its status. */
  operations: OperationRecord[];
  permissions: ViewerPermissions;
}

/** The most events a task page's timeline shows (a long run of progress messages is cut at the end). */
export const MAX_TIMELINE_EVENTS = 500;

/** The operations that change something: each leaves an audit entry. */
const AUDITED: ReadonlySet<string> = new Set(['callTool', 'cancel', 'answerInput']);

/** Most operations `tasks/get` lists for one task. */
const MAX_OPERATIONS_SHOWN = 100;

/** The statusMessage of a task that waits for a worker slot. */
const QUEUED = 'queued';

/**
 * THE ONE DOOR: every entry path (SDK handlers, the HTTP fast path, stdio, listen streams, v1 elicitation replies)
 * reaches tasks only through these operations, and each one takes the {@link Caller} and re-checks the task's owner
 * and generation, answering a foreign, expired or other-generation task exactly like an unknown id (2025-11-25
 * R45/R49, SEP-2663 E39/E45). Later issues hook in here once ({@link TaskServiceHook}). The service decides and
 * records; it never runs a task's tool (that is the worker's, through the hand-off or the store) — only inline
 * calls go to its executor.
 *
 * Errors: `TasksError` with the wire code (the adapters send it as is) and the store's `StoreError`s (mapped to
 * the wire in `server/store-errors.ts`).
 */
export class TaskService {
  private readonly reads: TaskReads;
  private readonly hooks: readonly TaskServiceHook[];
  private readonly planOptions: CallPlanOptions;

  constructor(private readonly options: TaskServiceOptions) {
    this.reads = new TaskReads(options.store, options.clock);
    this.hooks = options.hooks ?? [];
    this.planOptions = { taskFallbackTools: options.taskFallbackTools === true, argumentLimits: options.limits, ...(options.gate ? { gate: options.gate } : {}) };
  }

  /**
   * Every tool this caller may call, as it may call it (the adapter writes the `tools/list` entries). With the
   * task fallback tools on, a host without task support in a 2025-era session (see `declaresTaskSupport`) sees
   * task-required tools as task-optional, followed by the fallback tools. Otherwise a caller that cannot take a
   * task at all (a session before 2025-11-25, a 2026-07-28 request without the extension) sees no task-required
   * tool; a 2025-11-25 session sees them as they are.
   */
  listTools(caller: Caller): Promise<ToolDescriptor[]> {
    return this.door({ operation: 'listTools', caller }, async () => {
      const tools: ToolDescriptor[] = this.gatedTools(caller);
      if (declaresTaskSupport(caller)) return tools;
      if (!usesTaskFallbackTools(caller, this.planOptions)) {
        // A 2025-11-25 session may call task-required tools as tasks without declaring `capabilities.tasks` (the
        // client-side capability describes it as a receiver: the MCP Inspector CLI and the SDK's tasks API declare
        // none), so it keeps seeing them with `taskSupport: "required"` (R10). Only sessions that cannot take a
        // task at all — before 2025-11-25, or 2026-07-28 without the extension — do not see them.
        return caller.generation === 'v1' ? tools : tools.filter((tool) => tool.execution !== 'task-required');
      }
      return [...tools.map((tool) => (tool.execution === 'task-required' ? asFallbackTool(tool) : tool)), ...FALLBACK_TOOLS];
    });
  }

  /**
   * Decide what a `tools/call` will do, before anything runs or is written: THE rule "may this call create a task"
   * (see `planCall`). Runs no hook: deciding is not an operation yet, and a fast path may still leave the request
   * to the full path.
   * @throws TasksError `-32602` unknown tool or bad v1 `task`; `-32601` / `-32021` for task support violations.
   */
  planCall(caller: Caller, call: ToolCall): Promise<CallPlan> {
    return planCall(this.options.tools, this.options.confinement, caller, call, this.planOptions);
  }

  /**
   * Carry out a plan made by {@link planCall}: the tool's `gather` phase (MRTR rounds or session elicitation), then
   * the task created durably — answered only after its commit (SEP-2663 E14) — or the inline run.
   * Without `options.interaction` only a plain task create (no `gather`) can be carried out: anything else is an
   * internal error of the adapter.
   */
  callTool(caller: Caller, plan: CallPlan, options: CallToolOptions = {}): Promise<CallOutcome> {
    const { interaction } = options;
    // A fallback tool is the task operation it stands for: that operation's door (owner, scopes), not callTool's.
    if (plan.kind === 'task_operation') return this.taskOperation(fallbackTaskCaller(caller), plan.operation, plan.taskId);
    const tool = plan.kind === 'answer' || plan.kind === 'refused' ? plan.toolName : plan.tool.name;
    const argumentsDigest = plan.kind === 'answer' || plan.kind === 'refused' ? undefined : requestDigest(tool, plan.call.arguments ?? {});
    const trace: RequestTrace = plan.kind === 'answer' || plan.kind === 'refused' || !plan.call.trace ? {} : { incoming: plan.call.trace };
    const cohort = plan.kind === 'answer' ? undefined : plan.cohort;
    return this.door({ operation: 'callTool', caller, tool, ...(argumentsDigest ? { argumentsDigest } : {}), ...(cohort ? { cohort } : {}), trace }, async () => {
      if (plan.kind === 'answer') return { kind: 'result', result: plan.result };
      if (plan.kind === 'refused') throw plan.error;
      const claimOf = (key: string): KeyClaim => keyClaim(caller, key, tool, plan.call.arguments ?? {}, this.options.limits.idempotencyWindowMs);
      // A replay is answered before anything runs again: no gather questions, no inline run, no second task.
      const sent = plan.call.idempotencyKey === undefined ? undefined : claimOf(plan.call.idempotencyKey);
      const replayed = sent && (await this.replayed(sent));
      if (replayed) return { kind: plan.kind === 'fallback' ? 'fallback' : 'task', task: replayed };
      let gathered: JsonValue | undefined;
      if (plan.tool.gather) {
        const gather = plan.tool.gather.bind(plan.tool);
        const { signal, withInput } = this.interactive(interaction, tool);
        const phase = await withInput('gather', (ask) =>
          gather(plan.args, { signal, roots: this.options.confinement.roots, deniedPaths: this.options.confinement.deniedPaths, elicit: (request) => askOne(ask, request) }),
        );
        if ('inputRequired' in phase) return { kind: 'input_required', result: phase.inputRequired };
        gathered = phase.done;
      }
      // Task arguments (`fromTask`) are read here, as the caller, never by the tool (issue 12).
      const { ownerKey } = caller;
      const readGeneration = plan.kind === 'fallback' ? fallbackTaskCaller(caller).generation : caller.generation;
      gathered ??= await resolveTaskInputs(plan.tool, plan.call.arguments ?? {}, {
        get: async (id) => (readGeneration === null ? undefined : this.reads.get(id, { ownerKey, generation: readGeneration })),
        outcome: (id) => this.reads.outcome(id),
      });
      const immediate = plan.immediateResponse === undefined ? {} : { immediateResponse: plan.immediateResponse };
      if (plan.kind === 'task' || plan.kind === 'fallback') {
        // Without a key of the client's, a finished MRTR phase derives one from its signed request state, so a
        // replayed final round finds the task it created the first time.
        const derived = sent ? undefined : interaction?.derivedIdempotencyKey?.();
        const claim = sent ?? (derived === undefined ? undefined : claimOf(derived));
        const again = derived === undefined || !claim ? undefined : await this.replayed(claim);
        if (again) return { kind: plan.kind, task: again };
        if (plan.kind === 'task') return { kind: 'task', task: await this.create(taskCaller(caller), plan, withTrace(gathered, trace), options, claim), ...immediate };
        // A host without task support gets no task notifications: it follows the task through the fallback tools.
        return { kind: 'fallback', task: await this.create(fallbackTaskCaller(caller), plan, withTrace(gathered, trace), {}, claim), ...immediate };
      }
      if (sent) {
        // An inline call is answered once per key: the key is taken before the run.
        const taken = await this.options.store.claimIdempotencyKey({ ...sent, taskId: null });
        // Without a task no quota was asked for, so a claim that fails found the key taken.
        if (!taken.claimed && 'existing' in taken) return { kind: 'task', task: await replayOf(taken.existing, sent, (id) => this.keyTask(sent, id)) };
      }
      const { signal, withInput } = this.interactive(interaction, tool);
      const inline = await withInput('input', (ask) => bounded(plan, signal, (runSignal) => this.runInline(caller, plan, ask, gathered, runSignal)));
      return 'inputRequired' in inline ? { kind: 'input_required', result: inline.inputRequired } : { kind: 'result', result: inline.done };
    });
  }

  /**
   * The caller's task as it is now. A task whose run has finished in this process and whose outcome is being
   * committed is read after that commit (at most one group commit later), so a poll never answers `working` for
   * work that is done.
   * @throws TasksError `-32602` "Task not found" for a missing, foreign, expired or other-generation task.
   */
  get(caller: TaskCaller, taskId: string): Promise<TaskRecord> {
    return this.door({ operation: 'get', caller, taskId }, () => this.current(caller, taskId));
  }

  /**
   * Whether the caller's task is terminal now (`false` also when it is not visible to the caller). For an adapter
   * that chooses between two paths of one operation (the fast path answers a terminal v1 `tasks/result` itself);
   * the answer must come from the operation, never from this.
   */
  async isSettled(caller: TaskCaller, taskId: string): Promise<boolean> {
    const record = await this.reads.get(taskId, { ownerKey: caller.ownerKey, generation: caller.generation });
    return record !== undefined && isTerminal(record.status);
  }

  /**
   * A large result of one of the caller's tasks (issue 10 §2: `resources/read` of `mcp-tasks://tasks/{taskId}/result`,
   * or of one of its chunks `…/result/chunks/{index}`, issue 23 §5; any generation — the owner decides), needing
   * `tasks:read` and the tool's scopes like `tasks/result`.
   * @throws TasksError `-32602` "Resource not found" for a malformed URI and for a task that is unknown, expired,
   *   foreign, refused by a scope check or without a large result (or without that chunk) — one answer for all (no
   *   existence leak).
   */
  async readResultResource(caller: Caller, uri: string): Promise<ResultResource> {
    const named = parseResultUri(uri);
    try {
      return await this.door({ operation: 'readResource', caller, ...(named === undefined ? {} : { taskId: named.taskId }) }, async () => {
        const record = named === undefined ? undefined : await this.reads.get(named.taskId, { ownerKey: caller.ownerKey });
        if (!record || !named) throw resourceNotFound();
        admitTask(this.hooks, { operation: 'readResource', caller, taskId: record.taskId }, record);
        const outcome = isTerminal(record.status) ? await this.reads.outcome(record.taskId) : undefined;
        const large = outcome?.kind === 'result' ? largeResultMetaOf(outcome.result) : undefined;
        if (!large || large.uri !== resultResourceUri(record.taskId) || (named.chunk !== undefined && named.chunk >= resultChunkCount(large.bytes))) throw resourceNotFound();
        return resultResource(this.options.store, uri, record, large.bytes, this.options.clock.now(), named.chunk);
      });
    } catch (error) {
      throw isTaskNotFound(error) ? resourceNotFound() : error;
    }
  }

  /**
   * What a detailed view adds to `record` (read by this caller through this service): the stored outcome of a
   * terminal task, the pending questions of an `input_required` one.
   * @throws TasksError `-32602` "Task not found" when `record` is not the caller's (a record from elsewhere).
   */
  async details(caller: TaskCaller, record: TaskRecord): Promise<TaskDetails> {
    if (record.ownerKey !== caller.ownerKey || record.generation !== caller.generation) throw taskNotFound();
    if (isTerminal(record.status)) {
      const outcome = await this.reads.outcome(record.taskId);
      return outcome === undefined ? {} : { outcome };
    }
    if (record.status !== 'input_required') return {};
    return { inputRequests: (await this.options.store.listInputRequests(record.taskId)).filter((request) => request.state === 'pending') };
  }

  /**
   * The domain operations of `record` (read by this caller through this service), oldest first: what the system of
   * record was asked to do and what it answered, kept apart from the task's status (issue 12).
   * @throws TasksError `-32602` "Task not found" when `record` is not the caller's.
   */
  async operations(caller: TaskCaller, record: TaskRecord): Promise<OperationRecord[]> {
    if (record.ownerKey !== caller.ownerKey || record.generation !== caller.generation) throw taskNotFound();
    // Only tools that declare reconcilers can perform operations (ctx.operation refuses otherwise): no read for the rest.
    if (!this.options.tools.get(record.toolName)?.operations) return [];
    return this.options.store.listOperations({ taskId: record.taskId, ownerKey: caller.ownerKey, limit: MAX_OPERATIONS_SHOWN });
  }

  /** One page of the caller's tasks of its generation after `afterSeq` (keyset on the creation sequence, R37). */
  list(caller: TaskCaller, afterSeq: number): Promise<TaskPage> {
    return this.door({ operation: 'list', caller }, () =>
      this.reads.list({ ownerKey: caller.ownerKey, generation: caller.generation }, afterSeq, this.options.limits.listPageSize),
    );
  }

  /**
   * Cancel a task (2025-11-25 R41, SEP-2663 E30): a conditional write non-terminal → `cancelled`, committed before
   * this resolves; the run's `ctx.signal` then fires wherever it runs (the worker follows the event feed). A later
   * outcome of the tool is discarded.
   * @returns `cancelled: false` with the task as it is when it was already terminal (also when it became terminal
   *   just before the write).
   * @throws TasksError `-32602` "Task not found".
   */
  cancel(caller: TaskCaller, taskId: string, statusMessage = 'Cancelled by requestor'): Promise<{ cancelled: boolean; task: TaskRecord }> {
    return this.door({ operation: 'cancel', caller, taskId }, async () => {
      const record = await this.scoped(caller, taskId, 'cancel');
      if (isTerminal(record.status)) return { cancelled: false, task: record };
      const cancelled = await this.options.store.transition(taskId, { to: 'cancelled', statusMessage, releaseLease: true, now: this.options.clock.now() });
      return cancelled ? { cancelled: true, task: cancelled } : { cancelled: false, task: await this.scoped(caller, taskId, 'cancel') };
    });
  }

  /**
   * Apply answers to the task's outstanding questions (SEP-2663 `tasks/update`, 2025-11-25 elicitation replies):
   * valid answers are stored durably, an invalid one retires its key and the question is asked again, unknown or
   * settled keys are ignored (E27). An invalid answer to a question already asked `MAX_ASKS_PER_QUESTION` times, or
   * one whose re-ask would exceed `MAX_INPUT_KEYS_PER_TASK` keys, fails the task (`-32603`, `data.reason`
   * `input_invalid` / `input_limit`). When nothing is outstanding any more the task is `working` without a lease, and
   * whichever worker claims it first runs it again.
   * @returns the keys whose answers were taken (answered or retired); `[]` when the task does not wait for input.
   * @throws TasksError `-32602` "Task not found".
   */
  answerInput(caller: TaskCaller, taskId: string, responses: Readonly<Record<string, unknown>>): Promise<string[]> {
    const answers = Object.entries(responses).map(([key, response]) => ({ key, action: answerAction(response) }));
    return this.door({ operation: 'answerInput', caller, taskId, answers }, async () => {
      const record = await this.scoped(caller, taskId, 'answerInput');
      if (record.status !== 'input_required') return [];
      const requests = await this.options.store.listInputRequests(taskId);
      const plan = planAnswers(requests, responses);
      if (plan.fail) {
        // The question cannot be asked again (re-ask maximum or 16-key cap): the task fails, it does not stall.
        const { reason, message } = plan.fail;
        const failed = await this.options.store.transition(taskId, { to: 'failed', outcome: { kind: 'error', error: runtimeFailure(reason, message) }, statusMessage: message, releaseLease: true, now: this.options.clock.now() });
        return failed ? Object.keys(responses).filter((key) => requests.some((request) => request.key === key && request.state === 'pending')) : [];
      }
      if (plan.answers.length === 0 && plan.retire.length === 0) return [];
      // statusMessage follows what is still outstanding, so it never names a question already answered.
      const settled = new Set([...plan.answers, ...plan.retire].map((entry) => entry.key));
      const stillPending = [...requests.filter((request) => request.state === 'pending' && !settled.has(request.key)), ...plan.add];
      const next = stillPending[0];
      const statusMessage = plan.statusMessage ?? (next ? waitingMessage(next.request) : 'Input received; resuming');
      const { accepted } = await this.options.store.answerInput(taskId, { ...plan, statusMessage, now: this.options.clock.now() });
      return accepted;
    });
  }

  /**
   * Wait until the task is terminal and return it (v1 `tasks/result`, R24). Woken by the event feed (this process's
   * commits at once, other processes' through the tail); re-reads the task on every event of it.
   * @param onUpdate - called with each non-terminal state seen (v1 delivers the task's questions from here)
   * @throws TasksError `-32602` "Task not found" when the task is or becomes missing or expired; `signal`'s reason
   *   when it aborts first.
   */
  waitForTerminal(caller: TaskCaller, taskId: string, signal: AbortSignal, onUpdate?: (record: TaskRecord) => Promise<void>): Promise<TaskRecord> {
    return this.door({ operation: 'waitForTerminal', caller, taskId }, async () => {
      let wake: () => void = () => {};
      const unsubscribe = this.options.feed.subscribeTask(taskId, () => wake());
      try {
        for (;;) {
          const woken = new Promise<void>((resolve) => (wake = resolve));
          const record = await this.scoped(caller, taskId, 'waitForTerminal');
          if (isTerminal(record.status)) return record;
          await onUpdate?.(record);
          await until(woken, signal);
          if (signal.aborted) throw signal.reason ?? new Error('aborted');
        }
      } finally {
        unsubscribe();
      }
    });
  }

  /**
   * Subscribe to changes of some of the caller's tasks (v2 `subscriptions/listen`): only those visible to the caller
   * now are accepted (E45); every committed event of an accepted task reaches `listener` in commit order.
   * @param options.progress - also deliver progress reports of accepted tasks running in this process
   */
  subscribe(caller: TaskCaller, taskIds: readonly string[], listener: (notice: TaskNotice) => void, options: { progress?: boolean } = {}): Promise<TaskSubscription> {
    return this.door({ operation: 'subscribe', caller, taskIds }, async () => {
      const accepted: string[] = [];
      for (const taskId of new Set(taskIds)) {
        if (await this.scoped(caller, taskId, 'subscribe').then(() => true, (error: unknown) => (isTaskNotFound(error) ? false : Promise.reject(error)))) accepted.push(taskId);
      }
      return this.subscription(caller, accepted, listener, options.progress === true);
    });
  }

  /**
   * Follow a task this caller has just created ({@link CallInteraction.onCreated}): its events and, while it runs in
   * this process, its progress (v1 session notifications). Synchronous, so nothing of the first run is missed.
   * @throws TasksError `-32602` "Task not found" when `record` is not the caller's.
   */
  watch(caller: TaskCaller, record: TaskRecord, listener: (notice: TaskNotice) => void): TaskSubscription {
    if (record.ownerKey !== caller.ownerKey || record.generation !== caller.generation) throw taskNotFound();
    return this.subscription(caller, [record.taskId], listener, true);
  }

  private subscription(caller: TaskCaller, taskIds: string[], listener: (notice: TaskNotice) => void, progress: boolean): TaskSubscription {
    const accepted = new Set(taskIds);
    const { feed, handOff } = this.options;
    const onEvent = (event: TaskEvent): void => listener({ kind: 'event', event });
    const stops: Array<() => void> =
      taskIds.length === 1
        ? [feed.subscribeTask(taskIds[0] as string, onEvent)]
        : [feed.subscribeAll((event) => {
            if (accepted.has(event.taskId)) onEvent(event);
          })];
    if (progress && handOff) {
      for (const taskId of taskIds) stops.push(handOff.onProgress(taskId, (done, total, message) => listener({ kind: 'progress', taskId, done, total, message })));
    }
    return {
      taskIds,
      read: async (taskId) => (accepted.has(taskId) ? this.reads.get(taskId, { ownerKey: caller.ownerKey, generation: caller.generation }) : undefined),
      details: (record) => this.details(caller, record),
      close: () => {
        for (const stop of stops.splice(0)) stop();
      },
    };
  }

  /** The task a live key of this caller points at (see `replayOf`), or `undefined` when the key is free. */
  private async replayed(claim: KeyClaim): Promise<TaskRecord | undefined> {
    const existing = await this.options.store.findIdempotencyKey({ ownerKey: claim.ownerKey, generation: claim.generation }, claim.key);
    return existing && replayOf(existing, claim, (id) => this.keyTask(claim, id));
  }

  /** A key's task, read with the claim's owner and generation (a key never reveals another owner's task). */
  private keyTask(claim: KeyClaim, taskId: string): Promise<TaskRecord | undefined> {
    return this.reads.get(taskId, { ownerKey: claim.ownerKey, generation: claim.generation });
  }

  /**
   * One page of the tasks a viewer sees (its own; every owner's with `admin:read`), of both generations, newest
   * first, keyset-paged on `seq` so pages stay correct while tasks are created (issue 16). Expired tasks are left
   * out; the cursor still moves past them.
   */
  browse(viewer: Viewer, query: ViewerQuery): Promise<ViewerPage> {
    return this.door({ operation: 'browse', caller: viewerCaller(viewer) }, async () => {
      const ownerScope = viewerSees(viewer, { ownerKey: '' }) ? {} : { ownerKey: viewer.ownerKey };
      const rows = await this.options.store.browse({ ...query, ...ownerScope, limit: query.limit + 1 });
      const page = rows.slice(0, query.limit);
      const now = this.options.clock.now();
      const last = page[page.length - 1];
      return { tasks: page.filter((record) => visibleAt(record, now)), nextBeforeSeq: rows.length > query.limit && last ? last.seq : undefined };
    });
  }

  /**
   * A task as its page shows it to a viewer: the record, its event timeline, its outcome or open questions, and
   * what the viewer may do with it.
   * @throws TasksError `-32602` "Task not found" for a missing, expired or unseen task (never telling which).
   */
  inspect(viewer: Viewer, taskId: string): Promise<TaskInspection> {
    return this.door({ operation: 'inspect', caller: viewerCaller(viewer), taskId }, async () => {
      const task = await this.seenBy(viewer, taskId);
      const owner = { ...viewerCaller(viewer), ownerKey: task.ownerKey, generation: task.generation };
      const [events, details, operations] = await Promise.all([this.options.store.listTaskEvents(taskId, MAX_TIMELINE_EVENTS), this.details(owner, task), this.operations(owner, task)]);
      return { task, events, details, operations, permissions: viewerPermissions(viewer, task) };
    });
  }

  /**
   * Cancel a task for a viewer ({@link cancel} with the viewer's permission checked first).
   * @throws TasksError `-32602` "Task not found" when unseen; `-32600` when the viewer may not cancel it.
   */
  async cancelFor(viewer: Viewer, taskId: string): Promise<{ cancelled: boolean; task: TaskRecord }> {
    const task = await this.seenBy(viewer, taskId);
    if (!viewerPermissions(viewer, task).cancel && !isTerminal(task.status)) throw new TasksError(ErrorCode.InvalidRequest, 'Not allowed: cancelling needs the tasks:cancel scope');
    return this.cancel(ownerCaller(task, viewer), taskId, 'Cancelled from the dashboard');
  }

  /**
   * Answer a task's questions for a viewer ({@link answerInput} with the viewer's permission checked first).
   * @throws TasksError `-32602` "Task not found" when unseen; `-32600` when the viewer may not answer it.
   */
  async answerFor(viewer: Viewer, taskId: string, responses: Readonly<Record<string, unknown>>): Promise<string[]> {
    const task = await this.seenBy(viewer, taskId);
    if (task.status === 'input_required' && !viewerPermissions(viewer, task).answer) throw new TasksError(ErrorCode.InvalidRequest, task.ownerKey === viewer.ownerKey ? 'Not allowed: answering needs the tasks:answer scope' : "Not allowed: answering another owner's task needs tasks:answer and admin:write");
    return this.answerInput(ownerCaller(task, viewer), taskId, responses);
  }

  /**
   * Follow every change of the tasks a viewer sees, wherever they run (the event feed: this process's commits at
   * once, other processes' through the tail). Each event is delivered with the task as it is now, after the
   * visibility check; events of unseen tasks are dropped, and an `expired` one carries no record.
   * @returns a function that stops delivery.
   */
  watchVisible(viewer: Viewer, listener: (event: TaskEvent, task: TaskRecord | undefined) => void): Promise<() => void> {
    return this.door({ operation: 'watchVisible', caller: viewerCaller(viewer) }, async () => {
      // An owner never changes, so one read per task decides for all its events.
      const owners = new Map<string, string | undefined>();
      const ownerOf = async (taskId: string): Promise<string | undefined> => {
        if (owners.size > 10_000) owners.clear();
        if (!owners.has(taskId)) owners.set(taskId, await this.ownerOf(taskId));
        return owners.get(taskId);
      };
      let chain = Promise.resolve();
      const stop = this.options.feed.subscribeAll((event) => {
        // Delivered in feed order: each event waits for the reads of the ones before it.
        chain = chain
          .then(async () => {
            const ownerKey = await ownerOf(event.taskId);
            if (event.kind === 'expired') owners.delete(event.taskId);
            if (ownerKey === undefined || !viewerSees(viewer, { ownerKey })) return;
            listener(event, event.kind === 'expired' ? undefined : await this.reads.get(event.taskId, { ownerKey }));
          })
          .catch((error: unknown) => this.options.logger.warn({ err: error }, 'dashboard event delivery failed'));
      });
      return stop;
    });
  }

  /** Counts and timings of the last hour's tasks a viewer sees, see {@link overviewSeenBy}. */
  overviewFor(viewer: Viewer): Promise<TaskOverview> {
    return this.door({ operation: 'overview', caller: viewerCaller(viewer) }, () => overviewSeenBy(this.options.store, viewer, this.options.clock.now()));
  }

  /** The ledger rows a viewer sees (its own tasks'; every owner's with `admin:read`), see {@link operationsSeenBy}. */
  operationsFor(viewer: Viewer, query: ViewerOperationQuery): Promise<ViewerOperation[]> {
    return this.door({ operation: 'operations', caller: viewerCaller(viewer) }, () => operationsSeenBy(this.options.store, viewer, query));
  }

  /**
   * Reconcile an operation for a viewer (the ledger's reconcile behind the viewer's rules, see {@link reconcileSeenBy}).
   * @returns `undefined` when there is no such operation or the viewer does not see it.
   * @throws TasksError `-32600` when the viewer may not reconcile it.
   */
  reconcileFor(viewer: Viewer, operationId: string): Promise<ReconcileReport | undefined> {
    return this.door({ operation: 'reconcile', caller: viewerCaller(viewer) }, () =>
      reconcileSeenBy({ store: this.options.store, tools: this.options.tools, logger: this.options.logger, now: this.options.clock.now() }, viewer, operationId),
    );
  }

  /** The task if the viewer sees it now; the unknown-task error otherwise. */
  private async seenBy(viewer: Viewer, taskId: string): Promise<TaskRecord> {
    const ownerKey = await this.ownerOf(taskId);
    const task = ownerKey === undefined ? undefined : await this.reads.get(taskId, { ownerKey });
    if (!task || !viewerSees(viewer, task)) throw taskNotFound();
    return task;
  }

  /** Who owns a task (runtime read, never shown: callers decide visibility with it). */
  private async ownerOf(taskId: string): Promise<string | undefined> {
    return (await this.options.store.getUnscoped(taskId))?.ownerKey;
  }

  /**
   * The task operation of a fallback tool call, never blocking: `status` is `get`; `result` is `get` plus the
   * outcome once terminal (a host that never polls asks again later); `cancel` is `cancel`. An unknown (foreign,
   * expired) task is the tool error "Task not found", exactly as `tasks/get` would say it (R45, R49).
   */
  private async taskOperation(caller: TaskCaller, operation: FallbackOperation, taskId: string): Promise<CallOutcome> {
    try {
      if (operation === 'cancel') {
        const { cancelled, task } = await this.cancel(caller, taskId);
        return { kind: 'task_operation', operation, task, details: {}, cancelled };
      }
      const task = await this.get(caller, taskId);
      return { kind: 'task_operation', operation, task, details: await this.details(caller, task) };
    } catch (error) {
      if (isTaskNotFound(error)) return { kind: 'result', result: toolErrorResult(taskNotFound().message) };
      throw error;
    }
  }

  /**
   * Create the task of a `task` or `fallback` plan durably, with the embedded worker's lease when it has a free slot.
   * With a key claim, the key and the task are written in one transaction; a key taken meanwhile (another
   * instance's concurrent call) answers with that call's task instead. With per-owner quotas, the store admits the
   * task in that same transaction.
   * @throws TasksError `-31001` when a quota refuses the task (nothing written).
   */
  private async create(caller: TaskCaller, plan: RunPlan, { gathered, trace }: TaskStartData, session: Pick<CallToolOptions, 'onCreated' | 'sessionId'>, claim?: KeyClaim): Promise<TaskRecord> {
    const { onCreated, sessionId } = session;
    const { limits, clock } = this.options;
    const taskId = newTaskId();
    const reservation = this.options.handOff?.reserve(taskId);
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
      ttlMs: ttlFor(limits, caller.generation, plan.requestedTtlMs),
      pollIntervalMs: limits.pollIntervalMs,
      leaseOwner: reservation?.leaseOwner ?? null,
      leaseMs: reservation?.leaseMs ?? null,
      startNow: reservation !== undefined,
      ...stepsOf(gathered, trace),
      ...(sessionId === undefined ? {} : { sessionId }),
    };
    const quota = this.quota();
    let record: TaskRecord;
    try {
      if (claim) {
        const result = await this.options.store.claimIdempotencyKey({ ...claim, taskId }, task, quota);
        if (!result.claimed) {
          // A refusal is thrown (the catch below gives the reservation back); a taken key replays its task.
          if ('refused' in result) throw this.refusal(caller, result.refused);
          reservation?.cancel();
          return await replayOf(result.existing, claim, (id) => this.keyTask(claim, id));
        }
        record = result.task as TaskRecord;
      } else if (quota) {
        const admission = await this.options.store.admitCreate(task, quota);
        if (!admission.admitted) throw this.refusal(caller, admission);
        record = admission.task;
      } else {
        record = await this.options.store.create(task);
      }
    } catch (error) {
      reservation?.cancel();
      throw error;
    }
    try {
      onCreated?.(record);
    } catch (error) {
      this.options.logger.error({ err: error }, 'onCreated of a new task threw');
    }
    reservation?.start(record);
    return record;
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

  /** Run an `inline` plan through the executor and answer with its `CallToolResult`. */
  private async runInline(caller: Caller, plan: Extract<CallPlan, { kind: 'inline' }>, ask: CallAsk, gathered: JsonValue | undefined, signal: AbortSignal): Promise<JsonObject> {
    const { tool } = plan;
    const { store, clock } = this.options;
    const logger = this.options.logger.child({ tool: tool.name });
    const host: ExecutionHost = {
      setStatus() {},
      progress() {},
      getStep: async () => undefined,
      putStep: async () => {},
      // Per-owner tool state only: an inline call journals no steps (it has no task id).
      getOwnerState: (key) => store.getToolState(caller.ownerKey, tool.name, key),
      putOwnerState: (key, value) => store.putToolState(caller.ownerKey, tool.name, key, value, clock.now()),
      elicit: ask,
      log: (entry) => logger[entry.level](entry.fields, entry.message),
      // Inline calls have no ledger (ctx.operation refuses before it gets here).
      openOperation: () => Promise.reject(new TasksError(ErrorCode.InternalError, `Internal error in tool ${tool.name}`)),
      settleOperation: () => Promise.reject(new TasksError(ErrorCode.InternalError, `Internal error in tool ${tool.name}`)),
    };
    const request = { taskId: null, toolName: tool.name, arguments: (plan.call.arguments ?? {}) as JsonObject, confinement: this.options.confinement, logFields: { tool: tool.name } };
    const outcome = await this.options.executor.execute(gathered === undefined ? request : { ...request, gathered }, host, signal);
    switch (outcome.kind) {
      case 'returned':
        return outcome.result;
      case 'input_error':
        return toolErrorResult(outcome.message);
      case 'protocol_error':
        // Model-facing like a task's error (see settleExecution): one sanitised line.
        throw new TasksError(outcome.error.code, sanitizeModelText(outcome.error.message), outcome.error.data);
      case 'parked':
        // The interaction recorded the missing answers and answers `input_required` (see CallInteraction.withInput).
        throw new TasksError(ErrorCode.InternalError, `Internal error in tool ${tool.name}`);
      case 'aborted':
        // A client that went away aborts its inline call: expected, not an error worth a stack trace.
        logger.debug({}, 'inline call aborted by the client');
        throw new TasksError(ErrorCode.InternalError, `Internal error in tool ${tool.name}`);
      case 'crashed':
        throw new TasksError(ErrorCode.InternalError, outcome.message);
    }
  }

  /**
   * The tools as this caller may use them now: a tool whose task mode the gate refuses is shown as it runs instead
   * (see `gatedDescriptor`), so a new 2025-11-25 session sees `taskSupport: "forbidden"` and never sends `task`.
   */
  private gatedTools(caller: Caller): ToolDescriptor[] {
    const tools: ToolDescriptor[] = this.options.tools.list();
    const { gate } = this.options;
    if (!gate || caller.generation === null) return tools;
    return tools.flatMap((tool) => {
      if (tool.execution === 'sync' || gate.verdict(caller, tool.name).allow) return [tool];
      const shown = gatedDescriptor(tool);
      return shown ? [shown] : [];
    });
  }

  private interactive(interaction: CallInteraction | undefined, tool: string): CallInteraction {
    if (!interaction) throw new TasksError(ErrorCode.InternalError, `tools/call of ${tool} needs a request that can answer input (a gather phase or an inline run)`);
    return interaction;
  }

  /** The caller's visible task as `operation` may act on it (the hooks' {@link TaskServiceHook.admitTask}), or the unknown-task error. */
  private async scoped(caller: TaskCaller, taskId: string, operation: TaskOperation): Promise<TaskRecord> {
    const record = await this.reads.get(taskId, { ownerKey: caller.ownerKey, generation: caller.generation });
    if (!record) throw taskNotFound();
    admitTask(this.hooks, { operation, caller, taskId }, record);
    return record;
  }

  private async current(caller: TaskCaller, taskId: string): Promise<TaskRecord> {
    const record = await this.scoped(caller, taskId, 'get');
    const pending = isTerminal(record.status) ? undefined : this.options.handOff?.pendingOutcome(taskId);
    if (!pending) return record;
    await pending.catch(() => undefined);
    return this.scoped(caller, taskId, 'get');
  }

  private door<T>(context: TaskOperationContext, operation: () => Promise<T>): Promise<T> {
    return runHooked(this.hooks, context, async () => {
      if (!AUDITED.has(context.operation)) return operation();
      // The audit trail (issue 12) records every change a caller asks for, after it happened or was refused.
      // The anonymous caller ('all') has no credential, so no scopes to record.
      const scopes = context.caller.scopes;
      const audited = { ...context, ownerKey: context.caller.ownerKey, ...(scopes !== 'all' ? { scopes } : {}) };
      try {
        const result = await operation();
        await appendAudit(this.options.store, auditEntriesOf(audited, { result }, this.options.clock.now()), this.options.logger);
        return result;
      } catch (error) {
        // Not awaited: a refusal is answered at once, also while the store is down (the write then fails, logged).
        void appendAudit(this.options.store, auditEntriesOf(audited, { error }, this.options.clock.now()), this.options.logger);
        throw error;
      }
    });
  }
}

/**
 * Run `run` with the request's signal, bounded by the plan's `maxSyncMs` when the inline run stands in for a task the
 * gate refused: past it the run is aborted and the call fails with `-31003` `sync_timeout` (a tool that ignores its
 * signal is not waited for).
 */
async function bounded<T>(plan: RunPlan, signal: AbortSignal, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const { maxSyncMs } = plan;
  if (maxSyncMs === undefined) return run(signal);
  const timeout = AbortSignal.timeout(maxSyncMs);
  const combined = AbortSignal.any([signal, timeout]);
  let onAbort: () => void = () => {};
  const timedOut = new Promise<never>((_, reject) => {
    onAbort = () => reject(killSwitchError(plan.tool.name, 'sync_timeout', maxSyncMs));
    timeout.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const result = await Promise.race([run(combined), timedOut]);
    if (timeout.aborted) throw killSwitchError(plan.tool.name, 'sync_timeout', maxSyncMs);
    return result;
  } finally {
    timeout.removeEventListener('abort', onAbort);
  }
}

/**
 * A task-required tool as a host without task support sees it with the fallback tools: task-optional (it may call
 * it without `params.task`), and without its `outputSchema` — the call answers with the task's text, and SDK
 * clients check the structured content of every result against an advertised schema.
 */
function asFallbackTool(tool: ToolDescriptor): ToolDescriptor {
  const { outputSchema: _answeredAsText, ...rest } = tool;
  return { ...rest, execution: 'task-optional' };
}

/** A caller whose plan became a task has a generation (`planCall` decides `task` only then). */
function taskCaller(caller: Caller): TaskCaller {
  if (caller.generation === null) throw new TasksError(ErrorCode.InternalError, 'a task plan for a caller without tasks');
  return caller as TaskCaller;
}

/**
 * The owner of `task` as the caller of an operation a viewer was allowed to carry out on it, with the viewer's
 * scopes: the door re-checks them (tasks:cancel / tasks:answer and the task's tool scope) like for any caller.
 */
function ownerCaller(task: TaskRecord, viewer: Viewer): TaskCaller {
  return { ownerKey: task.ownerKey, scopes: viewer.scopes, negotiation: 'per-request', generation: task.generation, protocolVersion: task.protocolVersion, clientCapabilities: task.clientCapabilities };
}

/** The action of an answer for the audit (`accept`, `decline`, `cancel`), or `invalid`; never its values. */
function answerAction(response: unknown): string {
  const action = typeof response === 'object' && response !== null ? (response as { action?: unknown }).action : undefined;
  return action === 'accept' || action === 'decline' || action === 'cancel' ? action : 'invalid';
}

/** One question through `ask` for a `gather` phase, which awaits the answer itself. */
async function askOne(ask: CallAsk, request: ElicitRequest): Promise<ElicitResult> {
  const asked = await ask([request]);
  if ('answers' in asked) return asked.answers[0] as ElicitResult;
  throw new TasksError(ErrorCode.InternalError, 'input required');
}

/** Resolve on `woken` or when `signal` aborts, whichever comes first. */
function until(woken: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    void woken.then(done);
  });
}

/** What a created task is written with besides its row: the `gather` value and the trace context its runs link to. */
interface TaskStartData {
  gathered: JsonValue | undefined;
  trace: TraceCarrier | undefined;
}

function withTrace(gathered: JsonValue | undefined, trace: RequestTrace): TaskStartData {
  return { gathered, trace: trace.request ?? trace.incoming };
}

/** The steps journaled in the create's transaction: `@gathered`, `@trace` (see `TRACE_STEP`). */
function stepsOf(gathered: JsonValue | undefined, trace: TraceCarrier | undefined): { steps?: Record<string, JsonValue> } {
  const steps: Record<string, JsonValue> = {};
  if (gathered !== undefined) steps[GATHERED_STEP] = gathered;
  if (trace) steps[TRACE_STEP] = { ...trace };
  return Object.keys(steps).length === 0 ? {} : { steps };
}
