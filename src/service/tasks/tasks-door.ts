import type { Clock } from '../../core/clock.js';
import { waitingMessage } from '../../core/elicitation.js';
import { isTaskNotFound, resourceNotFound, runtimeFailure } from '../../core/errors.js';
import type { TaskEventFeed } from '../../core/event-feed.js';
import type { WorkerHandOff } from '../../core/hand-off.js';
import type { OperationRecord } from '../../core/ledger.js';
import type { TasksServerLimits } from '../../core/limits.js';
import { type Logger, redactTaskId } from '../../core/logger.js';
import { isTerminal } from '../../core/state-machine.js';
import type { TaskStore } from '../../core/store.js';
import type { InputRequestRecord, TaskOutcome, TaskRecord } from '../../core/task.js';
import type { ToolRegistry } from '../../core/tool-registry.js';
import { discardUnservedChunks } from '../../core/unserved-chunks.js';
import { largeResultMetaOf, parseResultUri, resultChunkCount, resultResourceUri } from '../../protocol/result-uri.js';
import { type Actor, assertOwns, type TaskActor } from '../access.js';
import type { Caller } from '../caller.js';
import type { ServiceDoor } from '../door.js';
import type { CursorCodec } from '../paging.js';
import { clampPollHintMs, withPollHint } from '../poll-hint.js';
import { holdBack, type PollThrottle } from '../poll-throttle.js';
import type { TaskReads } from '../task-reads.js';
import type { WorkerPresence } from '../worker-presence.js';
import type { FreshTasks } from './fresh-tasks.js';
import { planAnswers } from './input-answers.js';
import { type ResultResource, resultResource } from './result-reads.js';
import { type ResultWait, ResultWaits } from './result-wait.js';
import { openSubscription, type TaskNotice, type TaskSubscription } from './subscriptions.js';

export type { TaskNotice, TaskSubscription };

/** What a task adds to its record for a detailed view: the outcome when terminal, the open questions while waiting. */
export interface TaskDetails {
  outcome?: TaskOutcome;
  /** Pending input requests in creation order (only for `input_required`). */
  inputRequests?: InputRequestRecord[];
}

/** The abort signal of a request, or a way to make one only when it is needed (most requests never wait). */
export type SignalSource = AbortSignal | (() => AbortSignal);

/** What one `tasks/get` answers with (see {@link TasksDoor.poll}). */
export interface TaskPoll {
  /** The task as it is now, `pollIntervalMs` the hint for this answer (adaptive, possibly raised by the throttle). */
  task: TaskRecord;
  /** Its outcome or open questions, when asked for (`details: true`). */
  details: TaskDetails;
  /** Its domain operations (ledger rows), oldest first; `[]` for a tool that declares no reconcilers. */
  operations: OperationRecord[];
}

/** One page of an actor's tasks for `tasks/list` (R37-R39). */
export interface TaskListPage {
  /** The visible tasks of the page, oldest first, each with its adaptive poll hint. */
  tasks: TaskRecord[];
  /** The opaque cursor of the next page, or `undefined` when this was the last one. */
  nextCursor: string | undefined;
}

/** What the {@link TasksDoor} is built from. */
export interface TasksDoorOptions {
  store: TaskStore;
  /** Which tools declare reconcilers (only their tasks can have domain operations). */
  tools: Pick<ToolRegistry, 'get'>;
  /** This process's event feed (shared with an embedded worker). */
  feed: TaskEventFeed;
  /** The embedded worker, when this process has one (its pending outcomes and progress). */
  handOff?: WorkerHandOff;
  limits: Readonly<TasksServerLimits>;
  clock: Clock;
  door: ServiceDoor;
  reads: TaskReads;
  /** The polling protection: a per-owner policy of `tasks/get`. */
  polls: PollThrottle;
  /** Without an embedded worker: says "waiting for a worker" on a task nothing can start (see `WorkerPresence`, {@link TasksDoor.presented}). */
  workers?: Pick<WorkerPresence, 'view'>;
  /** Seals `tasks/list` cursors. */
  cursors: CursorCodec;
  /** The tasks this process created, unchanged since (a blocking `tasks/result` starts from them). */
  fresh?: FreshTasks;
  /** For what an operation does after its answer is decided (deleting the result chunks a cancel leaves unserved). */
  logger: Logger;
}

/** Most operations `tasks/get` lists for one task. */
const MAX_OPERATIONS_SHOWN = 100;

/**
 * THE tasks/* DOOR (get, list, cancel, answer input, wait, subscribe, result resources): one call per request, for
 * every entry path (SDK handlers, the HTTP fast path, stdio, listen streams, v1 elicitation replies). Each operation
 * takes the actor — an MCP `TaskCaller`, or a viewer acting through `service/viewer/` — re-checks the task's owner
 * and generation and answers a foreign, expired or other-generation task exactly like an unknown id (2025-11-25
 * R45/R49, SEP-2663 E39/E45); the hooks run around each one ({@link ServiceDoor}).
 *
 * Errors: `TasksError` with the wire code (the adapters send it as is) and the store's `StoreError`s (mapped to
 * the wire in `server/store-errors.ts`).
 */
export class TasksDoor {
  private readonly results: ResultWaits;

  constructor(private readonly options: TasksDoorOptions) {
    this.results = new ResultWaits(options);
  }

  /**
   * The actor's task as it is now. A task whose run has finished in this process and whose outcome is being
   * committed is read after that commit (at most one group commit later), so a poll never answers `working` for
   * work that is done.
   * @throws TasksError `-32602` "Task not found" for a missing, foreign, expired or other-generation task.
   */
  get(actor: TaskActor, taskId: string): Promise<TaskRecord> {
    return this.options.door.run({ operation: 'get', actor: actor, generation: actor.generation, taskId }, () => this.current(actor, taskId));
  }

  /**
   * `tasks/get` of either generation as ONE operation (2025-11-25 R21/R52, SEP-2663 E18/E19): the task with its
   * adaptive poll hint, under the polling protection — a repeated too-fast poll of a non-terminal task by its owner
   * is held back (at most the throttle's delay, or until `signal` aborts) and answered with a raised hint (clamped to
   * the generation's range), read again so the answer is current — then its operations and, with
   * `include.details`, its outcome or open questions.
   * @param requireSession - the v1 session whose request this is, when the adapter has not read it: every read of the
   *   task checks that its record exists (`TaskScope.requireSession`), and a missing one reads as a missing task.
   * @throws TasksError `-32602` "Task not found".
   */
  poll(actor: TaskActor, taskId: string, signal: SignalSource, include: { details?: boolean } = {}, requireSession?: string): Promise<TaskPoll> {
    return this.options.door.run({ operation: 'get', actor: actor, generation: actor.generation, taskId }, async () => {
      const { clock, polls } = this.options;
      const first = withPollHint(await this.current(actor, taskId, requireSession), clock.now());
      const advice = polls.observe(actor.ownerKey, taskId, first.pollIntervalMs, isTerminal(first.status), clock.now());
      let task = first;
      if (advice.delayMs > 0 || advice.pollIntervalMs !== first.pollIntervalMs) {
        if (advice.delayMs > 0) await holdBack(advice.delayMs, typeof signal === 'function' ? signal() : signal);
        const current = advice.delayMs > 0 ? withPollHint(await this.current(actor, taskId, requireSession), clock.now()) : first;
        task = isTerminal(current.status) ? current : { ...current, pollIntervalMs: clampPollHintMs(actor.generation, advice.pollIntervalMs) };
      }
      const details = include.details === true ? await this.details(actor, task) : {};
      return { task: this.presented(task), details, operations: await this.operations(actor, task) };
    });
  }

  /** See {@link ResultWaits.resultPath}. */
  resultPath(actor: TaskActor, taskId: string, requireSession?: string): Promise<'settled' | 'waits' | 'asks' | undefined> {
    return this.results.resultPath(actor, taskId, requireSession);
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
    const { door, reads, store, clock } = this.options;
    const named = parseResultUri(uri);
    const context = {
      operation: 'readResource',
      actor: caller,
      generation: caller.generation,
      ...(named === undefined ? {} : { taskId: named.taskId }),
    } as const;
    try {
      return await door.run(context, async () => {
        const record = named === undefined ? undefined : await reads.get(named.taskId, { ownerKey: caller.ownerKey });
        if (!record || !named) throw resourceNotFound();
        door.admit({ ...context, taskId: record.taskId }, record);
        const outcome = isTerminal(record.status) ? await reads.outcome(record.taskId) : undefined;
        const large = outcome?.kind === 'result' ? largeResultMetaOf(outcome.result) : undefined;
        if (!large || large.uri !== resultResourceUri(record.taskId) || (named.chunk !== undefined && named.chunk >= resultChunkCount(large.bytes)))
          throw resourceNotFound();
        return resultResource(store, uri, record, large.bytes, clock.now(), named.chunk);
      });
    } catch (error) {
      throw isTaskNotFound(error) ? resourceNotFound() : error;
    }
  }

  /**
   * What a detailed view adds to `record` (read by this actor through this door): the stored outcome of a terminal
   * task, the pending questions of an `input_required` one.
   * @throws TasksError `-32602` "Task not found" when `record` is not the actor's (a record from elsewhere).
   */
  async details(actor: TaskActor, record: TaskRecord): Promise<TaskDetails> {
    assertOwns(actor, record);
    if (isTerminal(record.status)) {
      const outcome = await this.options.reads.outcome(record.taskId);
      return outcome === undefined ? {} : { outcome };
    }
    if (record.status !== 'input_required') return {};
    return { inputRequests: (await this.options.store.listInputRequests(record.taskId)).filter((request) => request.state === 'pending') };
  }

  /**
   * The domain operations of `record` (read by this actor through this door), oldest first: what the system of
   * record was asked to do and what it answered, kept apart from the task's status (issue 12).
   * @throws TasksError `-32602` "Task not found" when `record` is not the actor's.
   */
  async operations(actor: TaskActor, record: TaskRecord): Promise<OperationRecord[]> {
    assertOwns(actor, record);
    // Only tools that declare reconcilers can perform operations (ctx.operation refuses otherwise): no read for the rest.
    if (!this.options.tools.get(record.toolName)?.operations) return [];
    return this.options.store.listOperations({ taskId: record.taskId, ownerKey: actor.ownerKey, limit: MAX_OPERATIONS_SHOWN });
  }

  /**
   * One page of the actor's tasks of its generation (v1 `tasks/list`, R37-R39), `listPageSize` tasks after the
   * opaque `cursor` (see `service/paging.ts`), each with its adaptive poll hint.
   * @throws TasksError `-32602` "Invalid cursor" for a cursor not minted for this owner.
   */
  list(actor: TaskActor, cursor: string | undefined): Promise<TaskListPage> {
    return this.options.door.run({ operation: 'list', actor: actor, generation: actor.generation }, async () => {
      const { cursors, reads, clock, limits } = this.options;
      const afterSeq = cursor === undefined ? 0 : cursors.decode(cursor, actor.ownerKey);
      const page = await reads.list({ ownerKey: actor.ownerKey, generation: actor.generation }, afterSeq, limits.listPageSize);
      const now = clock.now();
      return {
        tasks: page.tasks.map((record) => this.presented(withPollHint(record, now))),
        nextCursor: page.nextAfterSeq === undefined ? undefined : cursors.encode(page.nextAfterSeq, actor.ownerKey),
      };
    });
  }

  /**
   * Cancel a task (2025-11-25 R41, SEP-2663 E30): a conditional write non-terminal → `cancelled`, committed before
   * this resolves; the run's `ctx.signal` then fires wherever it runs (the worker follows the event feed). A later
   * outcome of the tool is discarded.
   * @returns `cancelled: false` with the task as it is when it was already terminal (also when it became terminal
   *   just before the write); the v1 adapter answers that `-32602` (R42), the v2 one acknowledges it (E31).
   * @throws TasksError `-32602` "Task not found".
   */
  cancel(actor: TaskActor, taskId: string, statusMessage = 'Cancelled by requestor'): Promise<{ cancelled: boolean; task: TaskRecord }> {
    const { door, store, clock } = this.options;
    return door.run({ operation: 'cancel', actor: actor, generation: actor.generation, taskId }, async () => {
      const record = await door.scoped(actor, taskId, 'cancel');
      if (isTerminal(record.status)) return { cancelled: false, task: record };
      const cancelled = await store.transition(taskId, { to: 'cancelled', statusMessage, releaseLease: true, now: clock.now() });
      if (!cancelled) return { cancelled: false, task: await door.scoped(actor, taskId, 'cancel') };
      // A run that stored a large result's chunks and died before its outcome left them: no run will end now to delete
      // them, and recovery passes a cancelled task by. A live run's own are deleted here too, or by it (both harmless).
      // Not awaited: on PostgreSQL a run writing its chunks holds their rows, and the cancel must not wait for that
      // write (it sees the cancel and deletes its own); the helper never rejects (a failure is logged).
      void discardUnservedChunks(store, taskId, this.options.logger.child({ taskId: redactTaskId(taskId) }));
      return { cancelled: true, task: cancelled };
    });
  }

  /**
   * Apply answers to the task's outstanding questions (SEP-2663 `tasks/update`, 2025-11-25 elicitation replies):
   * valid answers are stored durably, an invalid one retires its key and the question is asked again, unknown or
   * settled keys are ignored (E27). An invalid answer to a question already asked `MAX_ASKS_PER_QUESTION` times, or
   * one whose re-ask would exceed `MAX_INPUT_KEYS_PER_TASK` keys, fails the task (`-32603`, `data.reason`
   * `input_invalid` / `input_limit`). When nothing is outstanding any more the task is `working` again: without a
   * lease, so whichever worker claims it first runs it again — or, for a run that waits in place (`elicits:
   * 'in-place'`), with that run's lease, and that run goes on with the answers.
   * @returns the keys whose answers were taken (answered or retired); `[]` when the task does not wait for input.
   * @throws TasksError `-32602` "Task not found".
   */
  answerInput(actor: TaskActor, taskId: string, responses: Readonly<Record<string, unknown>>): Promise<string[]> {
    const { door, store, clock } = this.options;
    const answers = Object.entries(responses).map(([key, response]) => ({ key, action: answerAction(response) }));
    return door.run({ operation: 'answerInput', actor: actor, generation: actor.generation, taskId, answers }, async () => {
      const record = await door.scoped(actor, taskId, 'answerInput');
      if (record.status !== 'input_required') return [];
      const requests = await store.listInputRequests(taskId);
      const plan = planAnswers(requests, responses);
      if (plan.fail) {
        // The question cannot be asked again (re-ask maximum or 16-key cap): the task fails, it does not stall.
        const { reason, message } = plan.fail;
        const failed = await store.transition(taskId, {
          to: 'failed',
          outcome: { kind: 'error', error: runtimeFailure(reason, message) },
          statusMessage: message,
          releaseLease: true,
          now: clock.now(),
        });
        return failed ? Object.keys(responses).filter((key) => requests.some((request) => request.key === key && request.state === 'pending')) : [];
      }
      if (plan.answers.length === 0 && plan.retire.length === 0) return [];
      // statusMessage follows what is still outstanding, so it never names a question already answered.
      const settled = new Set([...plan.answers, ...plan.retire].map((entry) => entry.key));
      const stillPending = [...requests.filter((request) => request.state === 'pending' && !settled.has(request.key)), ...plan.add];
      const next = stillPending[0];
      const statusMessage = plan.statusMessage ?? (next ? waitingMessage(next.request) : 'Input received; resuming');
      const { accepted } = await store.answerInput(taskId, { ...plan, statusMessage, now: clock.now() });
      return accepted;
    });
  }

  /** See {@link ResultWaits.waitForTerminal}. */
  waitForTerminal(actor: TaskActor, taskId: string, signal: AbortSignal, onUpdate?: (record: TaskRecord) => Promise<void>): Promise<TaskRecord> {
    return this.results.waitForTerminal(actor, taskId, signal, onUpdate);
  }

  /** See {@link ResultWaits.openResultWait}. */
  openResultWait(actor: TaskActor, taskId: string, requireSession?: string): Promise<ResultWait | 'asks' | undefined> {
    return this.results.openResultWait(actor, taskId, requireSession);
  }

  /**
   * Subscribe to changes of some of the actor's tasks (v2 `subscriptions/listen`): only those visible to the actor
   * now are accepted (E45); every committed event of an accepted task reaches `listener` in commit order.
   * @param options.progress - also deliver progress reports of accepted tasks running in this process
   */
  subscribe(
    actor: TaskActor,
    taskIds: readonly string[],
    listener: (notice: TaskNotice) => void,
    options: { progress?: boolean } = {},
  ): Promise<TaskSubscription> {
    const { door } = this.options;
    return door.run({ operation: 'subscribe', actor: actor, generation: actor.generation, taskIds }, async () => {
      const accepted: string[] = [];
      for (const taskId of new Set(taskIds)) {
        if (
          await door.scoped(actor, taskId, 'subscribe').then(
            () => true,
            (error: unknown) => (isTaskNotFound(error) ? false : Promise.reject(error)),
          )
        )
          accepted.push(taskId);
      }
      return this.subscription(actor, accepted, listener, options.progress === true);
    });
  }

  /**
   * Follow a task this actor has just created (`CallToolOptions.onCreated`): its events and, while it runs in this
   * process, its progress (v1 session notifications). Synchronous, so nothing of the first run is missed.
   * @throws TasksError `-32602` "Task not found" when `record` is not the actor's.
   */
  watch(actor: TaskActor, record: TaskRecord, listener: (notice: TaskNotice) => void): TaskSubscription {
    assertOwns(actor, record);
    return this.subscription(actor, [record.taskId], listener, true);
  }

  /** Who owns a task (a read for visibility decisions, never shown), `undefined` when there is no such row. */
  async ownerOf(taskId: string): Promise<string | undefined> {
    return (await this.options.store.getUnscoped(taskId))?.ownerKey;
  }

  /** The task if it is visible to its owner now (the viewer's read, after its own visibility rule), as {@link presented}. */
  async readAsOwner(actor: Actor, taskId: string): Promise<TaskRecord | undefined> {
    const record = await this.options.reads.get(taskId, { ownerKey: actor.ownerKey });
    return record && this.presented(record);
  }

  /**
   * A task as every reader is shown it — `tasks/get`, `tasks/list`, the create answer, v1 `notifications/tasks/status`,
   * v2 `notifications/tasks` (identical to `tasks/get` at that moment, SEP-2663 E33) and the dashboard: without an
   * embedded worker, a task no worker can start says "waiting for a worker" (issue 26 item 6, `WorkerPresence`)
   * instead of looking like it runs. The stored row is unchanged.
   */
  presented(record: TaskRecord): TaskRecord {
    return this.options.workers?.view(record) ?? record;
  }

  private subscription(actor: TaskActor, taskIds: string[], listener: (notice: TaskNotice) => void, progress: boolean): TaskSubscription {
    const { feed, handOff, reads } = this.options;
    return openSubscription({ feed, ...(handOff ? { handOff } : {}) }, taskIds, listener, progress, {
      read: async (taskId) => {
        const record = await reads.get(taskId, { ownerKey: actor.ownerKey, generation: actor.generation });
        return record && this.presented(record);
      },
      details: (record) => this.details(actor, record),
    });
  }

  private async current(actor: TaskActor, taskId: string, requireSession?: string): Promise<TaskRecord> {
    const { door, handOff } = this.options;
    const record = await door.scoped(actor, taskId, 'get', requireSession);
    const pending = isTerminal(record.status) ? undefined : handOff?.pendingOutcome(taskId);
    if (!pending) return record;
    await pending.catch(() => undefined);
    return door.scoped(actor, taskId, 'get', requireSession);
  }
}

/** The action of an answer for the audit (`accept`, `decline`, `cancel`), or `invalid`; never its values. */
function answerAction(response: unknown): string {
  const action = typeof response === 'object' && response !== null ? (response as { action?: unknown }).action : undefined;
  return action === 'accept' || action === 'decline' || action === 'cancel' ? action : 'invalid';
}
