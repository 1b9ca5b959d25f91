import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { TaskRows } from '../core/ports/rows.js';

/**
 * Coalesces statusMessage-only writes: the last value per task wins and pending values are written together once
 * per `flushIntervalMs` (so at most one write per task per interval). A status transition takes the pending value
 * with it ({@link takePending}), so a transition never loses the latest message.
 */
export class StatusWriter {
  private pending = new Map<string, string | null>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: Pick<TaskRows, 'writeStatusMessages'>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    flushIntervalMs: number,
  ) {
    this.timer = setInterval(() => void this.flush(), flushIntervalMs);
    this.timer.unref();
  }

  /** Record a new statusMessage for `taskId` (written at the next flush). */
  set(taskId: string, statusMessage: string | null): void {
    this.pending.set(taskId, statusMessage);
  }

  /** Remove and return the pending message of `taskId` (`undefined` when none is pending). */
  takePending(taskId: string): string | null | undefined {
    if (!this.pending.has(taskId)) return undefined;
    const value = this.pending.get(taskId) ?? null;
    this.pending.delete(taskId);
    return value;
  }

  /** Write every pending message now. */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const now = this.clock.now();
    const entries = [...this.pending].map(([taskId, statusMessage]) => ({ taskId, statusMessage, now }));
    this.pending = new Map();
    try {
      await this.store.writeStatusMessages(entries);
    } catch (error) {
      this.logger.warn({ err: error, count: entries.length }, 'statusMessage flush failed; messages dropped');
    }
  }

  /** Flush and stop the timer. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
