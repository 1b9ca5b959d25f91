import type { JsonObject, TaskStatus } from '../task.js';

/**
 * Kinds of rows in the append-only `task_events` log. Every change a requestor can observe (creation, status,
 * statusMessage, a new run, input, expiry) appends one row in the same transaction, so the log is the single source
 * for wake-ups, notifications, the audit trail and replay. Lease renewals and journaled steps write no event.
 * - `created`: task row inserted (status `working`).
 * - `status`: status transition (payload: `{from, to}`).
 * - `message`: statusMessage-only change (coalesced).
 * - `attempt`: a run started (payload: `{attempt, leaseOwner}`).
 * - `input`: input requests added, answered or retired (payload `{added}` or `{answered, retired, added}`).
 * - `expired`: TTL reached; the row is about to be deleted (this event outlives it for
 *   `EXPIRED_EVENT_RETENTION_MS`, so every tail sees it).
 * - `released`: a draining worker gave up its lease of a running task (payload `{leaseOwner}`); the lease has lapsed
 *   and any worker may recover the task now instead of after a lease. With `unstarted: true` in the payload the run
 *   never started its tool and was not counted: the task is runnable again (see `TaskLeases.releaseUnstarted`).
 * Retention: a task's events are deleted with the task (`expireDue`).
 */
export type TaskEventKind = 'created' | 'status' | 'message' | 'attempt' | 'input' | 'expired' | 'released';

/** One row of `task_events`. */
export interface TaskEvent {
  /**
   * Position in the feed: assigned gap-free and in commit order within one database, across every process writing
   * to it. Every backend must guarantee that an event becomes visible to readers only after every event with a
   * smaller `seq` is visible, so a reader that tails `seq > cursor` never skips one (see
   * {@link TaskFeed.readEventsAfter}). Retention later deletes the events of expired tasks; a seq is never reused.
   */
  seq: number;
  taskId: string;
  kind: TaskEventKind;
  /** Status after the event (for `expired`: status at expiry). */
  status: TaskStatus;
  /** Epoch ms. */
  at: number;
  payload: JsonObject | null;
}

/** Listener for committed events, called after the commit, in commit order. */
export type TaskEventListener = (event: TaskEvent) => void;

/**
 * Told that events were committed elsewhere; `lastSeq` is the feed's last seq after that commit, if known, and
 * `events` that commit's events (ascending by seq, ending at `lastSeq`) when the backend carries them in the push.
 */
export type CommitWatcher = (lastSeq: number | undefined, events?: readonly TaskEvent[]) => void;

/**
 * The event feed (port "feed"): the committed `task_events` of every process on the store, in `seq` order — what
 * wake-ups, notifications, the dashboard's timeline and `tasks/get` long polls read. Errors: only `StoreError`.
 */
export interface TaskFeed {
  /**
   * Committed events with `seq > afterSeq`, ascending, at most `limit` (the cross-process tail reads this).
   * Because `seq` is gap-free and assigned in commit order (see {@link TaskEvent.seq}), a tail that moves its
   * cursor to the last `seq` it read never misses an event committed later, in any process.
   */
  readEventsAfter(afterSeq: number, limit: number): Promise<TaskEvent[]>;

  /**
   * The highest committed event `seq` (0 when none), also when retention has deleted that event since; every event
   * up to it that still exists is visible to `readEventsAfter`.
   */
  lastEventSeq(): Promise<number>;

  /**
   * The committed events of one task, ascending by `seq`, at most `limit` (the oldest first). Port addition
   * (issue 16): the dashboard's timeline; `[]` for an unknown task.
   */
  listTaskEvents(taskId: string, limit: number): Promise<TaskEvent[]>;

  /** Subscribe to events committed by this store instance; returns an unsubscribe function. */
  onEvent(listener: TaskEventListener): () => void;

  /**
   * Optional push of commits made by *other* processes (PostgreSQL: `LISTEN mcp_tasks_feed`): `wake` is called
   * soon after any commit that appended events, with the feed's last seq after it when known, and the commit's events
   * when they fit in the push (a reader holding every earlier seq then needs no read). Best effort — a
   * backend may miss notifications while reconnecting (it then calls `wake(undefined)`), so a reader keeps polling
   * `readEventsAfter` as the fallback. Absent (SQLite): readers poll only.
   * @returns the function that stops watching.
   */
  watchCommits?(wake: CommitWatcher): () => Promise<void>;
}
