import { describe, expect, it } from 'vitest';

import type { TaskRecord, TaskStatus } from '../../src/core/task.js';
import { judgeUnrenewedLease } from '../../src/execution/lease-verdict.js';

const ME = 'me';

function row(status: TaskStatus, leaseOwner: string | null): TaskRecord {
  return { status, leaseOwner } as TaskRecord;
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
