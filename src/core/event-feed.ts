import type { Logger } from './logger.js';
import type { TaskEvent, TaskEventListener, TaskFeed } from './ports/feed.js';

/**
 * The event feed of one process: fans committed task events out to in-process subscribers (v1 `tasks/result`
 * waiters, listen streams and session notifications of the service; cancellation, expiry and wake-ups of the
 * worker). One feed per process serves the service and an embedded worker alike. Events come from two sources,
 * merged and de-duplicated by `seq`, and reach subscribers in `seq` order per source:
 * - the local store's `onEvent` (immediate, for writes made by this process);
 * - one per-process tail of `task_events` for writes made by other processes on the same database: run at once when
 *   the store pushes a commit ({@link TaskFeed.watchCommits}: PostgreSQL LISTEN/NOTIFY), and every
 *   `tailIntervalMs` regardless, the fallback that covers a dropped LISTEN connection and the only source on SQLite
 *   (several processes on one file). There is never one timer per waiting request.
 */
export class TaskEventFeed {
  private readonly byTask = new Map<string, Set<TaskEventListener>>();
  private readonly global = new Set<TaskEventListener>();
  /** Seqs delivered locally ahead of the tail cursor; pruned as the cursor passes them. */
  private readonly deliveredAhead = new Set<number>();
  private cursor = 0;
  private tailTimer: NodeJS.Timeout | undefined;
  private tailing = false;
  /** A wake-up arrived while a tail was reading: read once more when it ends (the wake may be past its read). */
  private tailAgain = false;
  private unwatch: (() => Promise<void>) | undefined;
  private readonly unsubscribeStore: () => void;

  constructor(
    private readonly store: TaskFeed,
    private readonly logger: Logger,
  ) {
    this.unsubscribeStore = store.onEvent((event) => {
      if (event.seq <= this.cursor || this.deliveredAhead.has(event.seq)) return;
      this.deliveredAhead.add(event.seq);
      this.deliver(event);
    });
  }

  /**
   * Start tailing `task_events` for changes committed by other processes.
   * @param tailIntervalMs - how often the tail reads the log (ms).
   */
  async start(tailIntervalMs: number): Promise<void> {
    this.cursor = await this.store.lastEventSeq();
    this.tailTimer = setInterval(() => void this.tail(), tailIntervalMs);
    this.tailTimer.unref();
    this.unwatch = this.store.watchCommits?.((lastSeq, events) => {
      if (!this.tailing) this.passDeliveredAhead();
      // A commit whose events this process already has (its own, delivered by `onEvent`) needs no read.
      if (lastSeq !== undefined && (lastSeq <= this.cursor || this.deliveredAhead.has(lastSeq))) return;
      if (events && this.takePushed(events)) return;
      void this.tail();
    });
  }

  /**
   * Deliver a commit's events carried by the push, when they continue the cursor: the feed is gap-free, so events
   * from `cursor + 1` on are exactly what a tail would read next (issue 25: one read per commit per process before).
   * Not while a tail reads (its results would move the cursor under these), nor across a gap (a push missed while
   * the listener reconnected): the tail reads those. Synchronous, so no tail starts in between.
   * @returns whether the events were taken.
   */
  private takePushed(events: readonly TaskEvent[]): boolean {
    const first = events.find((event) => event.seq > this.cursor);
    if (this.tailing || !first || first.seq !== this.cursor + 1) return false;
    for (const event of events) if (event.seq > this.cursor) this.take(event);
    this.passDeliveredAhead();
    return true;
  }

  /**
   * Move the cursor over this process's own events that directly follow it (delivered by `onEvent`; seqs are
   * gap-free, so every seq up to theirs is committed and the next push continues from them), and forget the ones it
   * passed. Only while no tail reads.
   */
  private passDeliveredAhead(): void {
    while (this.deliveredAhead.delete(this.cursor + 1)) this.cursor += 1;
    for (const seq of this.deliveredAhead) if (seq <= this.cursor) this.deliveredAhead.delete(seq);
  }

  /** Subscribe to events of one task; returns an unsubscribe function. */
  subscribeTask(taskId: string, subscriber: TaskEventListener): () => void {
    let set = this.byTask.get(taskId);
    if (!set) {
      set = new Set();
      this.byTask.set(taskId, set);
    }
    set.add(subscriber);
    return () => {
      const current = this.byTask.get(taskId);
      if (!current) return;
      current.delete(subscriber);
      if (current.size === 0) this.byTask.delete(taskId);
    };
  }

  /** Subscribe to every event; returns an unsubscribe function. */
  subscribeAll(subscriber: TaskEventListener): () => void {
    this.global.add(subscriber);
    return () => this.global.delete(subscriber);
  }

  /** Read and deliver everything committed since the cursor (also callable directly, e.g. in tests). */
  async tail(): Promise<void> {
    if (this.tailing) {
      this.tailAgain = true;
      return;
    }
    this.tailing = true;
    try {
      do {
        this.tailAgain = false;
        await this.tailOnce();
      } while (this.tailAgain);
    } catch (error) {
      this.logger.warn({ err: error }, 'task event tail failed; retrying at the next interval');
    } finally {
      this.tailing = false;
    }
  }

  private async tailOnce(): Promise<void> {
    for (;;) {
      const events = await this.store.readEventsAfter(this.cursor, 500);
      for (const event of events) this.take(event);
      if (events.length < 500) break;
    }
    for (const seq of this.deliveredAhead) if (seq <= this.cursor) this.deliveredAhead.delete(seq);
  }

  /** Move the cursor to `event` (the next in seq order) and deliver it, unless `onEvent` already did. */
  private take(event: TaskEvent): void {
    this.cursor = event.seq;
    if (!this.deliveredAhead.delete(event.seq)) this.deliver(event);
  }

  /** Stop tailing (and the store's commit push) and drop every subscriber. */
  close(): void {
    if (this.tailTimer) clearInterval(this.tailTimer);
    void this.unwatch?.();
    this.unsubscribeStore();
    this.byTask.clear();
    this.global.clear();
  }

  private deliver(event: TaskEvent): void {
    for (const subscriber of this.global) this.safely(subscriber, event);
    const set = this.byTask.get(event.taskId);
    if (set) for (const subscriber of [...set]) this.safely(subscriber, event);
  }

  private safely(subscriber: TaskEventListener, event: TaskEvent): void {
    try {
      subscriber(event);
    } catch (error) {
      this.logger.error({ err: error }, 'task event subscriber threw');
    }
  }
}
