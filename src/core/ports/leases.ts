import type { TaskRecord } from '../task.js';

/**
 * Leases (port "leases"): which process runs a `working` task, judged on the store's own clock (SQLite: the clock it
 * was opened with; PostgreSQL: `clock_timestamp()`), so callers pass lease *durations* in ms and one clock decides
 * for every process sharing the database. A lease is lapsed once `leaseExpiresAt <= now`. Concurrent claimers (any
 * process) get disjoint sets. Errors: only `StoreError`; a condition that does not hold answers `undefined` / `[]`.
 */
export interface TaskLeases {
  /**
   * Start a run: `attempt += 1`, lease to `leaseOwner` for `leaseMs` from the store's now, `attempt` event (its `at`
   * is the store's now). Applies only while the task is `working` and the lease is held by `leaseOwner` or has
   * lapsed (`leaseExpiresAt <= now` on the store's clock).
   * Port change (issue 11): takes a duration instead of the caller's `leaseExpiresAt` and `now`.
   */
  startAttempt(taskId: string, leaseOwner: string, leaseMs: number): Promise<TaskRecord | undefined>;

  /**
   * Extend the leases `leaseOwner` holds on non-terminal `taskIds` to the store's now + `leaseMs`; returns the ids
   * whose lease was renewed. `leaseMs = 0` lets them lapse at once (release for a fast takeover).
   * Port change (issue 11): takes a duration instead of the caller's `leaseExpiresAt`.
   */
  renewLeases(leaseOwner: string, taskIds: readonly string[], leaseMs: number): Promise<string[]>;

  /**
   * Start runs of up to `limit` unexpired `working` tasks that no one holds a lease on (never leased since their
   * creation, or resumed after their questions were answered), oldest `seq` first, in one write: `attempt += 1`,
   * lease to `leaseOwner` for `leaseMs` from the store's now, one `attempt` event each (`at` = the store's now).
   * Such a task has had no run since it was created or parked, so starting it needs no recovery decision. A task
   * whose lease merely lapsed keeps its owner and is left to {@link claimLapsed}. Concurrent claimers (any
   * process) get disjoint sets; a backend with row locks skips rows another transaction holds.
   * Port addition (issue 11): the worker's claim of runnable tasks.
   * @returns the started tasks, ascending by `seq` (one whose arguments this store cannot decode among them, with
   *   `unreadableArguments` set: a decoding error never fails a claim).
   */
  claimRunnable(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]>;

  /**
   * Give up the leases `leaseOwner` holds on `working` tasks among `taskIds`: the lease lapses at once on the store's
   * clock (the owner stays, so the next claim is a recovery decision, like after a crash) and a `released` event is
   * appended for each, which wakes other workers' recovery. Returns the ids released; ids and events are in the order
   * of `taskIds`.
   * Port addition (issue 11): the drain of a worker.
   */
  releaseLeases(leaseOwner: string, taskIds: readonly string[]): Promise<string[]>;

  /**
   * Give back the runs `leaseOwner` holds on `working` tasks among `taskIds` whose tool never started (a draining
   * worker aborted them while they waited for a thread, or before it launched them): the run is not counted
   * (`attempt -= 1`, never below 0) and lease and owner are cleared, so the task is runnable again like one never
   * claimed — the next claim starts it with no recovery decision, whether or not its tool is safe to re-run, since
   * nothing ran. One `released` event each (payload `{leaseOwner, unstarted: true}`), which wakes other workers.
   * Returns the ids given back; ids and events are in the order of `taskIds`. Port addition (issue 22): a drain never turns a run that did not start into an
   * `interrupted` failure elsewhere. An `input_required` task among `taskIds` whose run waited in place (see
   * {@link claimLapsed}) is given back the same way: it waits for its answers parked, like a run that ended at its
   * question, and once answered the next claim starts it (the event then carries `input_required`).
   */
  releaseUnstarted(leaseOwner: string, taskIds: readonly string[]): Promise<string[]>;

  /**
   * Atomically take over up to `limit` unexpired `working` tasks whose lease lapsed (`leaseExpiresAt <= now` on the
   * store's clock) or that have none, leasing them to `leaseOwner` for `leaseMs`; then, up to what is left of
   * `limit`, unexpired `input_required` tasks whose run waited in place (`parkForInput` with `hold`: they keep a
   * lease) and whose lease lapsed while its process is gone: the owner has no live registration in the process
   * registry (`expiresAt > now` on the store's clock; reaped or lapsed after missed beats), or the owner is
   * `leaseOwner` itself (its own run, or a predecessor's under its id, which `releaseLeasesOf` let lapse) — that run
   * is gone, and a question it would have taken must not stay open for it. A live owner whose lease merely lapsed
   * (a stall) keeps its wait: its heartbeat renews the lease. A parked `input_required` task holds no lease and is skipped. Concurrent claimers (any process) get disjoint
   * sets; a backend with row locks skips rows another transaction holds instead of waiting for them.
   * Port change (issue 11): takes a duration instead of the caller's `now` and `leaseExpiresAt`.
   * @returns the tasks taken over, ascending by `seq`.
   */
  claimLapsed(leaseOwner: string, leaseMs: number, limit: number): Promise<TaskRecord[]>;

  /**
   * Make every lease `leaseOwner` holds on a `working` task, or on an `input_required` one whose run waited in place,
   * lapse now (a `released` event each, with the task's status, which wakes other workers' recovery): the takeover
   * of a process restarted under the same id, or reaped. Returns the task ids.
   */
  releaseLeasesOf(leaseOwner: string): Promise<string[]>;
}
