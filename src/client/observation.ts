import { TaskNotFoundError, TaskOutcomeUnknownError, TasksConnectionError } from './errors.js';
import type { JournalEntry, TaskJournal } from './journal.js';
import type { TaskSnapshot, TaskStatus } from './types.js';
import { DEFAULT_POLL_INTERVAL_MS, isTerminalStatus, POLL_JITTER } from './wait.js';

/**
 * A failed observation of a task this client knew (seen in this wait, or journaled) means its outcome is unknown —
 * never that it failed: "not found" (expired, purged, not visible) and refused credentials become
 * {@link TaskOutcomeUnknownError}; anything else passes through.
 */
export function outcomeUnknown(taskId: string, error: unknown, last: TaskSnapshot | undefined, journaled: TaskStatus | undefined): unknown {
  if (last === undefined && journaled === undefined) return error;
  const status = last?.status ?? journaled;
  if (error instanceof TaskNotFoundError) return new TaskOutcomeUnknownError(taskId, 'not_found', status, last, { cause: error });
  if (error instanceof TasksConnectionError && (error.httpStatus === 401 || error.httpStatus === 403))
    return new TaskOutcomeUnknownError(taskId, 'unauthorized', status, last, { cause: error });
  return error;
}

/** Journal writes are at most this frequent per task while its status stays the same (ms). */
const OBSERVATION_WRITE_MS = 5000;

/**
 * Records what a wait observes in the task's journal entry — last status, `lastUpdatedAt`, the run's attempt, next
 * allowed poll — on every change of status or attempt and otherwise at most every {@link OBSERVATION_WRITE_MS}; writes are queued, never
 * awaited by the poll loop.
 */
export class JournalObserver {
  private queue: Promise<unknown> = Promise.resolve();
  private writtenAt = 0;
  private status: TaskStatus | undefined;
  private attempt: number | undefined;

  constructor(
    private readonly journal: TaskJournal | undefined,
    private readonly entry: JournalEntry | undefined,
  ) {
    this.status = entry?.lastStatus;
    this.attempt = entry?.lastAttempt;
  }

  /** Record a snapshot; the next allowed poll is the earliest the server's interval permits (interval × (1 − jitter)). */
  observe(snapshot: TaskSnapshot): void {
    if (!this.journal || !this.entry || isTerminalStatus(snapshot.status)) return;
    const now = Date.now();
    const nextPollAt = now + Math.round((snapshot.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS) * (1 - POLL_JITTER));
    const attempt = snapshot.attempt ?? this.attempt;
    if (snapshot.status === this.status && attempt === this.attempt && now - this.writtenAt < OBSERVATION_WRITE_MS) return;
    this.status = snapshot.status;
    this.attempt = attempt;
    this.writtenAt = now;
    const journal = this.journal;
    const patch = {
      lastStatus: snapshot.status,
      lastUpdatedAt: snapshot.lastUpdatedAt,
      ...(attempt === undefined ? {} : { lastAttempt: attempt }),
      observedAt: new Date(now).toISOString(),
      nextPollAt: new Date(nextPollAt).toISOString(),
    };
    this.queue = this.queue.then(() => journal.update(snapshot.taskId, patch)).catch(() => {});
  }

  /** Resolves once every queued write is done. */
  flush(): Promise<unknown> {
    return this.queue;
  }
}
