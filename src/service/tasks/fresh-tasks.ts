import type { TaskEventFeed } from '../../core/event-feed.js';
import type { TaskEvent } from '../../core/ports/feed.js';
import type { TaskScope } from '../../core/ports/rows.js';
import { inScope, visibleAt } from '../../core/store-rules.js';
import type { TaskRecord } from '../../core/task.js';
import { jsonCharsUpTo } from '../task-reads.js';

/** Tasks kept at most; the oldest is dropped first (a task a requestor never waits for leaves when it ends). */
const MAX_ENTRIES = 2048;
/**
 * Largest record kept, in JSON characters (counted with bounded work): a task with larger arguments is read by its
 * `tasks/result` as before, so the entries hold at most ~MAX_ENTRIES × this (not MAX_ENTRIES × `maxArgumentBytes`).
 */
const MAX_RECORD_CHARS = 16 * 1024;

/**
 * Whether `event` can change what a waiting `tasks/result` answers or asks: anything that leaves the task other than
 * `working`, a question, an expiry. A new run (`attempt`) or a statusMessage (`message`) of a `working` task cannot.
 */
export function changesResultWait(event: TaskEvent): boolean {
  return event.status !== 'working' || event.kind === 'input' || event.kind === 'expired';
}

/** An entry of a create not answered yet: `pending`, or `changed` when an event changed the task meanwhile. */
type Expected = 'pending' | 'changed';

/**
 * The tasks this process created that are, as far as its event feed has delivered, still `working` as created:
 * their record as the create returned it, until an event of theirs that {@link changesResultWait} arrives. The blocking
 * `tasks/result` that usually follows a create on the same instance starts its wait from this record instead of
 * reading the task again (issue 25: ~one statement per round trip on PostgreSQL).
 *
 * Why that is exact: the feed delivers every committed event of every process, in commit order per task, and an
 * entry is dropped synchronously when its event is delivered. The create announces its task id before it is written
 * ({@link expect}), so an event delivered before the create is answered — the feed may deliver the task's whole life
 * (another process ran it) before this process's own commit settles — is remembered, and the record is then not kept.
 * A wait subscribes to the task's events before it looks here (same turn of the event loop), so an event delivered
 * before the look finds no entry (the look reads the store), and one delivered after it wakes the wait. `get`
 * judges owner, generation and expiry as a scoped read does.
 */
export class FreshTasks {
  private readonly entries = new Map<string, TaskRecord | Expected>();

  constructor(feed: Pick<TaskEventFeed, 'subscribeAll'>) {
    feed.subscribeAll((event) => {
      if (!changesResultWait(event)) return;
      const entry = this.entries.get(event.taskId);
      if (entry === 'pending') this.entries.set(event.taskId, 'changed');
      else if (entry !== undefined) this.entries.delete(event.taskId);
    });
  }

  /** A task with this id is about to be created here: follow its events from now on. */
  expect(taskId: string): void {
    this.entries.set(taskId, 'pending');
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
  }

  /**
   * Keep `record`, the task announced by {@link expect} whose create has just been answered — unless an event changed
   * it meanwhile (or its announcement was dropped for room): then the look reads it.
   */
  remember(record: TaskRecord): void {
    const entry = this.entries.get(record.taskId);
    if (entry === 'pending' && record.status === 'working' && jsonCharsUpTo(record, MAX_RECORD_CHARS + 1) <= MAX_RECORD_CHARS) {
      this.entries.set(record.taskId, record);
    } else this.entries.delete(record.taskId);
  }

  /** Stop following a task whose create failed or created nothing. */
  drop(taskId: string): void {
    this.entries.delete(taskId);
  }

  /**
   * The record `taskId` was created with, while no event that changes a result wait has arrived for it, as a scoped
   * read at `now` would see it (`undefined` when foreign, of another generation or expired: the look then reads).
   */
  get(taskId: string, scope: Pick<TaskScope, 'ownerKey' | 'generation'>, now: number): TaskRecord | undefined {
    const entry = this.entries.get(taskId);
    return typeof entry === 'object' && inScope(entry, scope) && visibleAt(entry, now) ? entry : undefined;
  }
}
