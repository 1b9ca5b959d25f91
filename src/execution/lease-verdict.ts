import { isTerminal } from '../core/state-machine.js';
import type { TaskRecord } from '../core/task.js';

/**
 * What to do with a run of this process whose lease renewal did not come back renewed.
 * - `keep`: nothing is wrong with the run (e.g. it is parking for input, or nobody holds the task);
 * - `retake`: the row still names this process — the renewal raced with a change of the row — so renew it again
 *   (conditionally: the store renews only while the row names this process);
 * - `abort`: stop the run for `reason`; its outcome is discarded.
 */
export type LeaseVerdict =
  { kind: 'keep' } | { kind: 'retake' } | { kind: 'abort'; reason: 'lease_lost' | 'expired' | 'cancelled' | 'settled'; leaseOwner?: string };

/**
 * Judge a run from its task row as read after a renewal that did not renew it (issue 9). A run is aborted as
 * `lease_lost` only when another owner really holds the lease, or when the run waits in place and its row names no
 * owner; a lease that merely lapsed (a busy loop, a slow store) with nobody else holding it is taken again instead.
 * Pure.
 * @param row - the task row read after the renewal; `undefined` when it no longer exists (the TTL sweeper deleted it)
 * @param instanceId - this process's lease owner id
 * @param waitsInPlace - the run waits for its answers in place (`elicits: 'in-place'`): it holds its lease for the
 *   whole wait, so a row that names no owner means recovery elsewhere took the task and handed it back parked
 *   (`releaseUnstarted`), and once answered the task's next run is whoever claims it, not this one
 */
export function judgeUnrenewedLease(row: TaskRecord | undefined, instanceId: string, waitsInPlace = false): LeaseVerdict {
  if (row === undefined) return { kind: 'abort', reason: 'expired' };
  if (isTerminal(row.status)) return { kind: 'abort', reason: row.status === 'cancelled' ? 'cancelled' : 'settled' };
  if (row.leaseOwner !== null && row.leaseOwner !== instanceId) return { kind: 'abort', reason: 'lease_lost', leaseOwner: row.leaseOwner };
  if (row.leaseOwner === null && waitsInPlace) return { kind: 'abort', reason: 'lease_lost' };
  if (row.leaseOwner === instanceId && row.status === 'working') return { kind: 'retake' };
  // No owner (and the run does not wait in place): the run itself is parking (input_required), or the task is free;
  // recovery, in this process or another, claims a free task, and a claim by another owner is judged `lease_lost` by
  // the next heartbeat.
  return { kind: 'keep' };
}

/**
 * Judge a run that waited in place (`elicits: 'in-place'`) once its answers are all in, before its tool gets them,
 * from its task row as read then. The heartbeat's rule for a run that waits in place ({@link judgeUnrenewedLease}
 * with `waitsInPlace`) decides first: an answer that lands after recovery elsewhere handed the task back, and before
 * the heartbeat judged the run, leaves a row that names no owner yet, or the owner that claimed the answered task.
 * Beyond it, the row must count this run: a hand-back uncounts the run (`releaseUnstarted`), so a row that names this
 * process with another `attempt` was taken over meanwhile (recovery here took the answered task back). A claim here
 * of the answered task counts it again and restores both owner and `attempt`: the row cannot tell that run from this
 * one, and the caller asks the worker's slot table too (see `run-host.ts`). Pure.
 * @param row - the task row read after the answers; `undefined` when it no longer exists
 * @param instanceId - this process's lease owner id
 * @param attempt - the run's `attempt`, as its start counted it
 * @returns `abort` with the reason the run stops for; otherwise the row still holds the task for this run
 */
export function judgeAnsweredWait(row: TaskRecord | undefined, instanceId: string, attempt: number): LeaseVerdict {
  const verdict = judgeUnrenewedLease(row, instanceId, true);
  if (verdict.kind === 'abort' || row === undefined || row.attempt === attempt) return verdict;
  return { kind: 'abort', reason: 'lease_lost' };
}
