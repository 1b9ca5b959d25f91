import type { Server } from '@modelcontextprotocol/server';
import { isTerminal } from '../core/state-machine.js';
import type { TaskRecord } from '../core/task.js';
import { RELATED_TASK_META_KEY } from '../protocol/constants.js';
import { toV1Task } from '../protocol/v1/codec.js';
import type { TaskCaller } from '../service/caller.js';
import type { TaskNotice, TaskSubscription } from '../service/task-service.js';
import type { HandlerDeps } from './deps.js';
import { withPollHint } from './poll-hint.js';

interface Tracked {
  progressToken: string | number | null;
  lastProgress: number;
  subscription: TaskSubscription;
}

/**
 * Push for 2025-11-25 sessions: `notifications/tasks/status` (the full task, no related-task `_meta`, R33/R34) on
 * every status change of a task created in this session, and `notifications/progress` with the original
 * `progressToken` (R36, with related-task `_meta`, R31) while it runs — never after a terminal status.
 * Both are optional conveniences (R35: requestors keep polling); they reach the client on its GET stream.
 * Progress reaches it while the task runs in this process (an embedded worker); status changes from anywhere.
 */
export class V1SessionNotifier {
  /** Subscriptions are per task, so a session costs nothing when other tasks change. */
  private readonly tracked = new Map<string, Tracked>();

  constructor(
    private readonly server: Server,
    private readonly deps: Pick<HandlerDeps, 'service' | 'logger' | 'clock'>,
  ) {}

  /** Start pushing for a task this session's `tools/call` created (before its first run reports anything). */
  trackCreated(caller: TaskCaller, record: TaskRecord): void {
    const subscription = this.deps.service.watch(caller, record, (notice) => this.onNotice(record.taskId, notice));
    this.tracked.set(record.taskId, { progressToken: record.progressToken, lastProgress: Number.NEGATIVE_INFINITY, subscription });
  }

  /** Stop pushing (the session closed). */
  close(): void {
    for (const entry of this.tracked.values()) entry.subscription.close();
    this.tracked.clear();
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
    const record = await this.tracked.get(taskId)?.subscription.read(taskId);
    if (!record) return;
    if (isTerminal(record.status)) this.untrack(taskId);
    await this.send({ method: 'notifications/tasks/status', params: toV1Task(withPollHint(record, this.deps.clock.now())) as unknown as Record<string, unknown> });
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
