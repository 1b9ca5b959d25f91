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
