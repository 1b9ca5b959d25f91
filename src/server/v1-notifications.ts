import type { Server } from '@modelcontextprotocol/server';
import { isTerminal } from '../core/state-machine.js';
import type { TaskRecord } from '../core/task.js';
import { RELATED_TASK_META_KEY } from '../protocol/constants.js';
import { toV1Task } from '../protocol/v1/codec.js';
import type { HandlerDeps } from './deps.js';
import { withPollHint } from './poll-hint.js';

interface Tracked {
  progressToken: string | number | null;
  lastProgress: number;
  /** Ends this task's event and progress subscriptions. */
  stop(): void;
}

/**
 * Push for 2025-11-25 sessions: `notifications/tasks/status` (the full task, no related-task `_meta`, R33/R34) on
 * every status change of a task created in this session, and `notifications/progress` with the original
 * `progressToken` (R36, with related-task `_meta`, R31) while it runs — never after a terminal status.
 * Both are optional conveniences (R35: requestors keep polling); they reach the client on its GET stream.
 */
export class V1SessionNotifier {
  /** Subscriptions are per task, so a session costs nothing when other tasks change. */
  private readonly tracked = new Map<string, Tracked>();

  constructor(
    private readonly server: Server,
    private readonly deps: Pick<HandlerDeps, 'runtime' | 'store' | 'logger' | 'clock'>,
  ) {}

  /** Start pushing for a task this session created. */
  track(taskId: string, progressToken: string | number | null): void {
    const { events } = this.deps.runtime;
    const unsubscribeEvents = events.subscribeTask(taskId, (event) => {
      if (event.kind === 'status') void this.statusChanged(taskId);
      else if (event.kind === 'expired') this.untrack(taskId);
    });
    const unsubscribeProgress = this.deps.runtime.onProgress(taskId, (done, total, message) => this.progress(taskId, done, total, message));
    this.tracked.set(taskId, {
      progressToken,
      lastProgress: Number.NEGATIVE_INFINITY,
      stop: () => {
        unsubscribeEvents();
        unsubscribeProgress();
      },
    });
  }

  /** Start pushing for a task this session's `tools/call` created (before its first run reports anything). */
  trackCreated(record: TaskRecord): void {
    this.track(record.taskId, record.progressToken);
  }

  /** Stop pushing (the session closed). */
  close(): void {
    for (const entry of this.tracked.values()) entry.stop();
    this.tracked.clear();
  }

  private untrack(taskId: string): void {
    this.tracked.get(taskId)?.stop();
    this.tracked.delete(taskId);
  }

  private async statusChanged(taskId: string): Promise<void> {
    const record = await this.deps.store.getUnscoped(taskId);
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
