import type { Clock } from '../../core/clock.js';
import { taskNotFound, TasksError } from '../../core/errors.js';
import type { TaskEventFeed } from '../../core/event-feed.js';
import type { Logger } from '../../core/logger.js';
import { isTerminal } from '../../core/state-machine.js';
import type { TaskEvent, TaskStore } from '../../core/store.js';
import { visibleAt } from '../../core/store-rules.js';
import type { TaskRecord } from '../../core/task.js';
import type { ToolRegistry } from '../../core/tool-registry.js';
import type { ReconcileReport } from '../../ledger/operations.js';
import { ErrorCode } from '../../protocol/constants.js';
import { largeResultMetaOf } from '../../protocol/result-uri.js';
import { sees, seesEveryOwner, type TaskActor, taskPermissions } from '../access.js';
import type { ServiceDoor } from '../door.js';
import { keysetPage, rowsToRead } from '../paging.js';
import { resultResource } from '../tasks/result-reads.js';
import type { TasksDoor } from '../tasks/tasks-door.js';
import { operationsSeenBy, reconcileSeenBy, type ViewerOperation, type ViewerOperationQuery } from './operations.js';
import { overviewSeenBy, type TaskOverview } from './overview.js';
import { MAX_TIMELINE_EVENTS, type TaskInspection, type Viewer, type ViewerPage, type ViewerQuery } from './viewer.js';

/** What a {@link ViewerService} is built from. */
export interface ViewerServiceOptions {
  store: TaskStore;
  tools: Pick<ToolRegistry, 'get'>;
  clock: Clock;
  logger: Logger;
  /** This process's event feed (what `watchVisible` follows). */
  feed: Pick<TaskEventFeed, 'subscribeAll'>;
  door: ServiceDoor;
  /** The tasks/* door its cancel and answer go through, as the task's owner with the viewer's scopes. */
  tasks: TasksDoor;
}

/**
 * THE VIEWER DOOR, for the dashboard and the admin API (issue 16): browse, inspect, follow, overview, operations,
 * reconcile, and cancel or answer on a viewer's behalf. A {@link Viewer} is its own actor, not an MCP caller:
 * it sees its own tasks of both generations, and every owner's with `admin:read` (`sees` in `service/access.ts`); a
 * task it does not see answers exactly like an unknown id. Its actions go through the tasks/* door, so the scope
 * re-checks and the audit trail hold for them like for any requestor.
 */
export class ViewerService {
  constructor(private readonly options: ViewerServiceOptions) {}

  /**
   * One page of the tasks a viewer sees, of both generations, newest first, keyset-paged on `seq` (the paging rule
   * of `service/paging.ts`) so pages stay correct while tasks are created. Expired tasks are left out; the cursor
   * still moves past them.
   */
  browse(viewer: Viewer, query: ViewerQuery): Promise<ViewerPage> {
    return this.run('browse', viewer, async () => {
      const ownerScope = seesEveryOwner(viewer) ? {} : { ownerKey: viewer.ownerKey };
      const now = this.options.clock.now();
      const page = keysetPage(await this.options.store.browse({ ...query, ...ownerScope, limit: rowsToRead(query.limit) }), query.limit, (record) =>
        visibleAt(record, now),
      );
      return { tasks: page.rows.map((record) => this.options.tasks.presented(record)), nextBeforeSeq: page.nextSeq };
    });
  }

  /**
   * A task as its page shows it to a viewer: the record, its event timeline, its outcome or open questions, and
   * what the viewer may do with it.
   * @throws TasksError `-32602` "Task not found" for a missing, expired or unseen task (never telling which).
   */
  inspect(viewer: Viewer, taskId: string): Promise<TaskInspection> {
    return this.run(
      'inspect',
      viewer,
      async () => {
        const { tasks, store } = this.options;
        const task = await this.seenBy(viewer, taskId);
        const owner = asOwner(task, viewer);
        const [events, details, operations] = await Promise.all([
          store.listTaskEvents(taskId, MAX_TIMELINE_EVENTS),
          tasks.details(owner, task),
          tasks.operations(owner, task),
        ]);
        const declaresOperations = this.options.tools.get(task.toolName)?.operations !== undefined;
        return { task, events, details, operations, declaresOperations, permissions: taskPermissions(viewer, task) };
      },
      taskId,
    );
  }

  /**
   * The whole result of a task the viewer sees (the dashboard's "full result" link, issue 26 item 15: its page shows
   * the first 64 KiB): the stored `CallToolResult` as JSON text, or, for a result stored in chunks because it was
   * larger than `maxResultBytes` (issue 10 §2), those chunks in order, read one at a time as they are written out.
   * The same read as {@link inspect} (the page already shows the result), without its bound.
   * @returns `undefined` when the task has no result (not ended, or ended with an error).
   * @throws TasksError `-32602` "Task not found" for a missing, expired or unseen task.
   */
  fullResult(viewer: Viewer, taskId: string): Promise<{ bytes: number; parts: () => AsyncIterable<Uint8Array> } | undefined> {
    return this.run(
      'inspect',
      viewer,
      async () => {
        const { tasks, store, clock } = this.options;
        const task = await this.seenBy(viewer, taskId);
        const { outcome } = await tasks.details(asOwner(task, viewer), task);
        if (outcome?.kind !== 'result') return undefined;
        const large = largeResultMetaOf(outcome.result);
        if (large) {
          const resource = resultResource(store, large.uri, task, large.bytes, clock.now());
          return { bytes: large.bytes, parts: () => resource.chunks() };
        }
        const whole = Buffer.from(JSON.stringify(outcome.result, null, 2));
        return {
          bytes: whole.byteLength,
          parts: async function* () {
            yield whole;
          },
        };
      },
      taskId,
    );
  }

  /**
   * Cancel a task for a viewer (the tasks door's `cancel`, with the viewer's permission checked first).
   * @throws TasksError `-32602` "Task not found" when unseen; `-32600` when the viewer may not cancel it.
   */
  async cancel(viewer: Viewer, taskId: string): Promise<{ cancelled: boolean; task: TaskRecord }> {
    const task = await this.seenBy(viewer, taskId);
    if (!taskPermissions(viewer, task).cancel && !isTerminal(task.status))
      throw new TasksError(ErrorCode.InvalidRequest, 'Not allowed: cancelling needs the tasks:cancel scope');
    return this.options.tasks.cancel(asOwner(task, viewer), taskId, 'Cancelled from the dashboard');
  }

  /**
   * Answer a task's questions for a viewer (the tasks door's `answerInput`, with the viewer's permission checked first).
   * @throws TasksError `-32602` "Task not found" when unseen; `-32600` when the viewer may not answer it.
   */
  async answer(viewer: Viewer, taskId: string, responses: Readonly<Record<string, unknown>>): Promise<string[]> {
    const task = await this.seenBy(viewer, taskId);
    if (task.status === 'input_required' && !taskPermissions(viewer, task).answer)
      throw new TasksError(
        ErrorCode.InvalidRequest,
        task.ownerKey === viewer.ownerKey
          ? 'Not allowed: answering needs the tasks:answer scope'
          : "Not allowed: answering another owner's task needs tasks:answer and admin:write",
      );
    return this.options.tasks.answerInput(asOwner(task, viewer), taskId, responses);
  }

  /**
   * Follow every change of the tasks a viewer sees, wherever they run (the event feed: this process's commits at
   * once, other processes' through the tail). Each event is delivered with the task as it is now, after the
   * visibility check; events of unseen tasks are dropped, and an `expired` one carries no record.
   * @returns a function that stops delivery.
   */
  watchVisible(viewer: Viewer, listener: (event: TaskEvent, task: TaskRecord | undefined) => void): Promise<() => void> {
    return this.run('watchVisible', viewer, async () => {
      const { tasks, logger, feed } = this.options;
      // An owner never changes, so one read per task decides for all its events.
      const owners = new Map<string, string | undefined>();
      const ownerOf = async (taskId: string): Promise<string | undefined> => {
        if (owners.size > 10_000) owners.clear();
        if (!owners.has(taskId)) owners.set(taskId, await tasks.ownerOf(taskId));
        return owners.get(taskId);
      };
      let chain = Promise.resolve();
      return feed.subscribeAll((event) => {
        // Delivered in feed order: each event waits for the reads of the ones before it.
        chain = chain
          .then(async () => {
            const ownerKey = await ownerOf(event.taskId);
            if (event.kind === 'expired') owners.delete(event.taskId);
            if (ownerKey === undefined || !sees(viewer, { ownerKey })) return;
            listener(event, event.kind === 'expired' ? undefined : await tasks.readAsOwner({ ownerKey, scopes: viewer.scopes }, event.taskId));
          })
          .catch((error: unknown) => logger.warn({ err: error }, 'dashboard event delivery failed'));
      });
    });
  }

  /** Counts and timings of the last hour's tasks a viewer sees, see {@link overviewSeenBy}. */
  overview(viewer: Viewer): Promise<TaskOverview> {
    return this.run('overview', viewer, () => overviewSeenBy(this.options.store, viewer, this.options.clock.now()));
  }

  /** The ledger rows a viewer sees (its own tasks'; every owner's with `admin:read`), see {@link operationsSeenBy}. */
  operations(viewer: Viewer, query: ViewerOperationQuery): Promise<ViewerOperation[]> {
    return this.run('operations', viewer, () => operationsSeenBy(this.options.store, viewer, query));
  }

  /**
   * Reconcile an operation for a viewer (the ledger's reconcile behind the viewer's rules, see {@link reconcileSeenBy}).
   * @returns `undefined` when there is no such operation or the viewer does not see it.
   * @throws TasksError `-32600` when the viewer may not reconcile it.
   */
  reconcile(viewer: Viewer, operationId: string): Promise<ReconcileReport | undefined> {
    const { store, tools, logger, clock } = this.options;
    return this.run('reconcile', viewer, () => reconcileSeenBy({ store, tools, logger, now: clock.now() }, viewer, operationId));
  }

  /** A viewer's own read operation in the door: no generation (a viewer's reads span both). */
  private run<T>(
    operation: 'browse' | 'inspect' | 'watchVisible' | 'overview' | 'operations' | 'reconcile',
    viewer: Viewer,
    body: () => Promise<T>,
    taskId?: string,
  ): Promise<T> {
    return this.options.door.run({ operation, actor: viewer, generation: null, ...(taskId === undefined ? {} : { taskId }) }, body);
  }

  /** The task if the viewer sees it now; the unknown-task error otherwise. */
  private async seenBy(viewer: Viewer, taskId: string): Promise<TaskRecord> {
    const { tasks } = this.options;
    const ownerKey = await tasks.ownerOf(taskId);
    const task = ownerKey === undefined ? undefined : await tasks.readAsOwner({ ownerKey, scopes: viewer.scopes }, taskId);
    if (!task || !sees(viewer, task)) throw taskNotFound();
    return task;
  }
}

/**
 * The actor of an operation a viewer was allowed to carry out on a task it sees: the task's owner in the task's
 * generation, with the viewer's scopes — the tasks door re-checks them (tasks:cancel / tasks:answer and the task's
 * tool scope) like for any requestor.
 */
function asOwner(task: TaskRecord, viewer: Viewer): TaskActor {
  return { ownerKey: task.ownerKey, scopes: viewer.scopes, generation: task.generation };
}
