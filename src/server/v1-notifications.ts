import { type Server, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';

import { isTerminal } from '../core/state-machine.js';
import type { TaskRecord, TaskStatus } from '../core/task.js';
import { attemptMeta, RELATED_TASK_META_KEY } from '../protocol/constants.js';
import { toV1Task } from '../protocol/v1/codec.js';
import type { TaskCaller } from '../service/caller.js';
import { withPollHint } from '../service/poll-hint.js';
import type { TaskNotice, TaskSubscription } from '../service/tasks/tasks-door.js';
import type { HandlerDeps } from './deps.js';

interface Tracked {
  progressToken: string | number | null;
  lastProgress: number;
  /** The status this session was last told (`null`: nothing sent yet), so one status is never sent twice in a row. */
  lastStatus: TaskStatus | null;
  subscription: TaskSubscription;
}

/**
 * Push for 2025-11-25 sessions: `notifications/tasks/status` (the full task, no related-task `_meta`, R33/R34) on
 * every status change of a task created in this session, and `notifications/progress` with the original
 * `progressToken` (R36, with related-task `_meta`, R31) while it runs — never after a terminal status.
 * Both are optional conveniences (R35: requestors keep polling); they reach the client on its GET stream.
 * Progress reaches it while the task runs in this process (an embedded worker); status changes from anywhere.
 * Tasks come from two sides: {@link trackCreated} (a `tools/call` of this copy of the session) and {@link follow}
 * (the instance holding the session's GET stream follows the session's tasks created on any instance, see
 * `SessionStreams`); a task followed from both sides is tracked once.
 */
export class V1SessionNotifier {
  /** Subscriptions are per task, so a session costs nothing when other tasks change. */
  private readonly tracked = new Map<string, Tracked>();
  /** Tasks whose {@link follow} is subscribing (so a task named twice at once is followed once). */
  private readonly following = new Set<string>();
  private closed = false;
  /** GET streams of this session held by this process now (counted by `SessionStreams`). */
  private streams = 0;

  constructor(
    private readonly server: Server,
    private readonly deps: Pick<HandlerDeps, 'service' | 'logger' | 'clock'>,
  ) {}

  /**
   * Start pushing for a task this session's `tools/call` created (before its first run reports anything). Over HTTP
   * only while this process holds the session's GET stream: without it the SDK drops what is pushed, and a stream
   * opened later follows the session's open tasks itself (`SessionStreams`), on this instance or another. Watching
   * anyway cost a read of the task and a dropped notification per status change of every task (issue 25).
   */
  trackCreated(caller: TaskCaller, record: TaskRecord): void {
    if (this.closed || this.tracked.has(record.taskId)) return;
    if (this.streams === 0 && this.server.transport instanceof WebStandardStreamableHTTPServerTransport) return;
    const subscription = this.deps.service.tasks.watch(caller, record, (notice) => this.onNotice(record.taskId, notice));
    this.tracked.set(record.taskId, { progressToken: record.progressToken, lastProgress: Number.NEGATIVE_INFINITY, lastStatus: null, subscription });
  }

  /**
   * Follow a task of this session created on another instance (or before this copy of the session existed), and
   * send its current status once, so the stream learns of it; later changes follow. A task this copy already tracks
   * ({@link trackCreated}) is left as it is. The service re-checks the owner: another owner's task is not followed.
   */
  async follow(caller: TaskCaller, taskId: string): Promise<void> {
    if (this.closed || this.following.has(taskId) || this.tracked.has(taskId)) return;
    this.following.add(taskId);
    try {
      const subscription = await this.deps.service.tasks.subscribe(caller, [taskId], (notice) => this.onNotice(taskId, notice), { progress: true });
      const record = subscription.taskIds.includes(taskId) ? await subscription.read(taskId) : undefined;
      // Closed meanwhile, not the caller's, gone, or tracked by a `tools/call` of this copy meanwhile.
      if (this.closed || !record || this.tracked.has(taskId)) {
        subscription.close();
        return;
      }
      this.tracked.set(taskId, { progressToken: record.progressToken, lastProgress: Number.NEGATIVE_INFINITY, lastStatus: null, subscription });
      await this.statusChanged(taskId);
    } catch (error) {
      this.deps.logger.debug({ err: error }, 'following a session task failed');
    } finally {
      this.following.delete(taskId);
    }
  }

  /** A GET stream of this session opened in this process; returns the function to call once it ends (idempotent). */
  streamOpened(): () => void {
    this.streams += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.streams -= 1;
    };
  }

  /** Whether the session closed (nothing more is pushed). */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Stop following every task (the GET stream that carried them ended); later tasks may still be tracked. */
  untrackAll(): void {
    for (const entry of this.tracked.values()) entry.subscription.close();
    this.tracked.clear();
  }

  /** Stop pushing (the session closed). */
  close(): void {
    this.closed = true;
    this.untrackAll();
  }

  private onNotice(taskId: string, notice: TaskNotice): void {
    if (notice.kind === 'progress') this.progress(taskId, notice.done, notice.total, notice.message);
    else if (notice.event.kind === 'status') void this.statusChanged(taskId);
    else if (notice.event.kind === 'expired') this.untrack(taskId);
  }

  private untrack(taskId: string): void {
    this.tracked.get(taskId)?.subscription.close();
    this.tracked.delete(taskId);
  }

  private async statusChanged(taskId: string): Promise<void> {
    const entry = this.tracked.get(taskId);
    const record = await entry?.subscription.read(taskId);
    // Reads of overlapping changes may return one state twice, or finish after the task was untracked.
    if (!entry || this.tracked.get(taskId) !== entry) return;
    if (!record) return this.untrack(taskId);
    if (record.status === entry.lastStatus) return;
    entry.lastStatus = record.status;
    if (isTerminal(record.status)) this.untrack(taskId);
    await this.send({
      method: 'notifications/tasks/status',
      // No related-task `_meta` (R33); the attempt, once a run started, in our own namespace.
      params: {
        ...toV1Task(withPollHint(record, this.deps.clock.now())),
        ...(record.attempt > 0 ? { _meta: attemptMeta(record.attempt) } : {}),
      } as unknown as Record<string, unknown>,
    });
  }

  private progress(taskId: string, done: number, total: number | undefined, message: string): void {
    const entry = this.tracked.get(taskId);
    // Progress must increase (base spec); reports that do not are dropped rather than sent out of order.
    if (!entry || entry.progressToken === null || !(done > entry.lastProgress)) return;
    entry.lastProgress = done;
    const params: Record<string, unknown> = { progressToken: entry.progressToken, progress: done, message, _meta: { [RELATED_TASK_META_KEY]: { taskId } } };
    if (total !== undefined) params.total = total;
    void this.send({ method: 'notifications/progress', params });
  }

  private async send(notification: { method: string; params: Record<string, unknown> }): Promise<void> {
    try {
      await this.server.notification(notification as never);
    } catch (error) {
      this.deps.logger.debug({ err: error, method: notification.method }, 'session notification not delivered');
    }
  }
}
