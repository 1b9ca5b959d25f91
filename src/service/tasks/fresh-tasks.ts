import type { TaskEventFeed } from '../../core/event-feed.js';
import type { TaskEvent } from '../../core/ports/feed.js';
import type { TaskRecord } from '../../core/task.js';

/** Tasks kept at most; the oldest is dropped first (a task a requestor never waits for leaves when it ends). */
const MAX_ENTRIES = 2048;

/**
 * Whether `event` can change what a waiting `tasks/result` answers or asks: anything that leaves the task other than
 * `working`, a question, an expiry. A new run (`attempt`) or a statusMessage (`message`) of a `working` task cannot.
 */
export function changesResultWait(event: TaskEvent): boolean {
  return event.status !== 'working' || event.kind === 'input' || event.kind === 'expired';
}

/**
 * The tasks this process created that are, as far as its event feed has delivered, still `working` as created:
 * their record as the create returned it, until an event of theirs that {@link changesResultWait} arrives. The blocking
 * `tasks/result` that usually follows a create on the same instance starts its wait from this record instead of
 * reading the task again (issue 25: ~one statement per round trip on PostgreSQL).
 *
 * Why that is exact: the feed delivers every committed event of every process, in commit order per task, and an
 * entry is dropped synchronously when its event is delivered. A wait subscribes to the task's events before it looks
 * here (same turn of the event loop), so an event delivered before the look finds no entry (the look reads the
 * store), and one delivered after it wakes the wait. Expiry is judged by the caller (`expiresAt`); owner and
 * generation are checked against the record like a scoped read would.
 */
export class FreshTasks {
  private readonly entries = new Map<string, TaskRecord>();

  constructor(feed: Pick<TaskEventFeed, 'subscribeAll'>) {
    feed.subscribeAll((event) => {
      if (changesResultWait(event)) this.entries.delete(event.taskId);
    });
  }

  /** Keep `record`, a task this process has just created (its create committed and its events were delivered). */
  remember(record: TaskRecord): void {
    if (record.status !== 'working') return;
    this.entries.set(record.taskId, record);
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
  }

  /** The record `taskId` was created with, while no event that changes a result wait has arrived for it. */
  get(taskId: string): TaskRecord | undefined {
    return this.entries.get(taskId);
  }
}
