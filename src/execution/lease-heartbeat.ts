/**
 * The lease renewal of a worker's runs and of the tasks it holds in hand (issue 9): one renewal for all of them, and
 * a judgement from the task row for each one the renewal missed. The worker owns the slot table; this module reads
 * it and asks the worker to abort a run or drops a task in hand, nothing else.
 */
import { redactTaskId } from '../core/logger.js';
import type { TaskRecord } from '../core/task.js';
import { judgeUnrenewedLease } from './lease-verdict.js';
import type { AbortReason, Slot } from './task-run.js';
import type { TaskWorkerOptions } from './task-worker-options.js';

/** What the heartbeat sees of its worker: the live slot table and tasks in hand, and how to abort a run. */
export interface HeldLeases {
  readonly running: ReadonlyMap<string, Slot>;
  /** Tasks leased and started but not yet in a slot; the heartbeat removes those whose lease is not ours any more. */
  readonly inHand: TaskRecord[];
  /** Whether the run of `taskId` waits for its answers in place now (it holds its lease for the whole wait). */
  waitsInPlace(taskId: string): boolean;
  abortLocal(taskId: string, reason: AbortReason): void;
}

/**
 * Renews the leases a worker holds, one renewal at a time: a beat while another is renewing or judging is skipped,
 * so renewals never pile up behind a slow store.
 */
export class LeaseHeartbeat {
  /** A beat is renewing or judging leases. */
  private heartbeating = false;

  constructor(
    private readonly options: Pick<TaskWorkerOptions, 'store' | 'settings' | 'logger'>,
    private readonly held: HeldLeases,
  ) {}

  /**
   * Renew the leases of every run of this worker. Only the runs that were running when the renewal was sent are
   * judged by its answer, each only while the same run is still in its slot: a run launched meanwhile holds a lease
   * written after that snapshot. A run the renewal missed is judged from its row (see {@link judgeUnrenewedLease}):
   * aborted as `lease_lost` only when another owner holds the lease (issue 9), or when it waits in place and its
   * task was handed back (no owner): it must not carry on beside the run that starts once the task is answered.
   */
  async beat(): Promise<void> {
    if (this.heartbeating) return;
    const { store, settings } = this.options;
    const slots = new Map(this.held.running);
    const inHand = [...this.held.inHand];
    if (slots.size + inHand.length === 0) return;
    this.heartbeating = true;
    try {
      const held = [...slots.keys(), ...inHand.map((record) => record.taskId)];
      const renewed = new Set(await store.renewLeases(settings.instanceId, held, settings.leaseMs));
      for (const [taskId, slot] of slots) {
        if (!renewed.has(taskId)) await this.checkLease(taskId, slot);
      }
      // A task in hand whose lease is not ours any more (cancelled, expired, taken) is dropped before it runs.
      for (const record of inHand) {
        if (renewed.has(record.taskId) || !this.held.inHand.includes(record)) continue;
        const verdict = judgeUnrenewedLease(await store.getUnscoped(record.taskId), settings.instanceId);
        if (verdict.kind === 'retake') await store.renewLeases(settings.instanceId, [record.taskId], settings.leaseMs);
        else if (verdict.kind === 'abort') this.held.inHand.splice(this.held.inHand.indexOf(record), 1);
      }
    } finally {
      this.heartbeating = false;
    }
  }

  /** Judge one run the renewal missed, from its row; see {@link judgeUnrenewedLease}. */
  private async checkLease(taskId: string, slot: Slot): Promise<void> {
    const { store, settings, logger } = this.options;
    // A run still starting is judged by its own conditional `startAttempt`; a finished or aborted one needs nothing.
    const current = (): boolean => this.held.running.get(taskId) === slot && slot.record !== undefined && !slot.controller.signal.aborted;
    if (!current()) return;
    const waitsInPlace = this.held.waitsInPlace(taskId);
    const verdict = judgeUnrenewedLease(await store.getUnscoped(taskId), settings.instanceId, waitsInPlace);
    if (!current()) return;
    if (verdict.kind === 'retake') {
      await store.renewLeases(settings.instanceId, [taskId], settings.leaseMs);
    } else if (verdict.kind === 'abort') {
      if (verdict.reason === 'lease_lost' && verdict.leaseOwner === undefined) {
        logger.warn({ taskId: redactTaskId(taskId) }, 'a run of this process that waits in place was taken over and its task handed back; aborting it');
      } else if (verdict.reason === 'lease_lost') {
        logger.warn({ taskId: redactTaskId(taskId), leaseOwner: verdict.leaseOwner }, 'another owner holds the lease of a run of this process; aborting it');
      }
      this.held.abortLocal(taskId, verdict.reason);
    }
  }
}
