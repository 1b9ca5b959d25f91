import { describe, expect, it } from 'vitest';

import type { TaskRecord, TaskStatus } from '../../src/core/task.js';
import { judgeAnsweredWait, judgeUnrenewedLease } from '../../src/execution/lease-verdict.js';

const ME = 'me';

function row(status: TaskStatus, leaseOwner: string | null, attempt = 1): TaskRecord {
  return { status, leaseOwner, attempt } as TaskRecord;
}

describe('judgeUnrenewedLease (issue 9): lease_lost only when another owner holds the lease', () => {
  it('another owner holding the lease of a working or waiting task: abort as lease_lost, naming it', () => {
    expect(judgeUnrenewedLease(row('working', 'other'), ME)).toEqual({ kind: 'abort', reason: 'lease_lost', leaseOwner: 'other' });
    expect(judgeUnrenewedLease(row('input_required', 'other'), ME)).toEqual({ kind: 'abort', reason: 'lease_lost', leaseOwner: 'other' });
  });

  it('the row still names this process (the renewal raced with a change): take it again, never abort', () => {
    expect(judgeUnrenewedLease(row('working', ME), ME)).toEqual({ kind: 'retake' });
  });

  it('nobody holds the lease (parking for input, or free for recovery): keep the run', () => {
    expect(judgeUnrenewedLease(row('working', null), ME)).toEqual({ kind: 'keep' });
    expect(judgeUnrenewedLease(row('input_required', null), ME)).toEqual({ kind: 'keep' });
  });

  it('a run that waits in place whose row names no owner was handed back by recovery elsewhere: abort as lease_lost (F4); another owner, this one, or settled as above', () => {
    expect(judgeUnrenewedLease(row('input_required', null), ME, true)).toEqual({ kind: 'abort', reason: 'lease_lost' });
    // Answered after it was handed back: working, no owner, and the next run is whoever claims it.
    expect(judgeUnrenewedLease(row('working', null), ME, true)).toEqual({ kind: 'abort', reason: 'lease_lost' });
    expect(judgeUnrenewedLease(row('input_required', 'other'), ME, true)).toEqual({ kind: 'abort', reason: 'lease_lost', leaseOwner: 'other' });
    expect(judgeUnrenewedLease(row('working', ME), ME, true)).toEqual({ kind: 'retake' });
    expect(judgeUnrenewedLease(row('cancelled', null), ME, true)).toEqual({ kind: 'abort', reason: 'cancelled' });
  });

  it('a task that is gone or settled stops the run for that reason, not as lease_lost', () => {
    expect(judgeUnrenewedLease(undefined, ME)).toEqual({ kind: 'abort', reason: 'expired' });
    expect(judgeUnrenewedLease(row('cancelled', null), ME)).toEqual({ kind: 'abort', reason: 'cancelled' });
    expect(judgeUnrenewedLease(row('completed', null), ME)).toEqual({ kind: 'abort', reason: 'settled' });
    expect(judgeUnrenewedLease(row('failed', null), ME)).toEqual({ kind: 'abort', reason: 'settled' });
  });
});

describe('judgeAnsweredWait: a run that waited in place goes on with its answers only while its row still holds the task for it', () => {
  it('the row names this process and counts this run, working (answered) or still waiting: the run goes on', () => {
    expect(judgeAnsweredWait(row('working', ME, 3), ME, 3).kind).not.toBe('abort');
    expect(judgeAnsweredWait(row('input_required', ME, 3), ME, 3).kind).not.toBe('abort');
  });

  it('handed back and answered before the heartbeat: no owner yet, or the owner that claimed it, is lease_lost', () => {
    expect(judgeAnsweredWait(row('working', null, 2), ME, 3)).toEqual({ kind: 'abort', reason: 'lease_lost' });
    expect(judgeAnsweredWait(row('working', 'other', 3), ME, 3)).toEqual({ kind: 'abort', reason: 'lease_lost', leaseOwner: 'other' });
  });

  it('the row names this process with another attempt (taken back here after the hand-back uncounted the run): lease_lost', () => {
    expect(judgeAnsweredWait(row('working', ME, 2), ME, 3)).toEqual({ kind: 'abort', reason: 'lease_lost' });
    expect(judgeAnsweredWait(row('working', ME, 4), ME, 3)).toEqual({ kind: 'abort', reason: 'lease_lost' });
  });

  it('a task that ended or is gone stops the run for that reason', () => {
    expect(judgeAnsweredWait(undefined, ME, 3)).toEqual({ kind: 'abort', reason: 'expired' });
    expect(judgeAnsweredWait(row('cancelled', null, 3), ME, 3)).toEqual({ kind: 'abort', reason: 'cancelled' });
    expect(judgeAnsweredWait(row('completed', null, 3), ME, 3)).toEqual({ kind: 'abort', reason: 'settled' });
  });
});
