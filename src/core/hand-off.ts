import type { TaskOutcome, TaskRecord } from './task.js';

/** Progress of a run in this process (not persisted: statusMessage carries it durably, coalesced). */
export type ProgressListener = (done: number, total: number | undefined, message: string) => void;

/**
 * A run's end as this process's worker committed it: the terminal task as the store returned it and the outcome
 * stored with it (`undefined` when the run stored none).
 */
export type OutcomeWrittenListener = (record: TaskRecord, outcome: TaskOutcome | undefined) => void;

/**
 * A slot of an embedded worker, reserved for a task about to be created. The service writes the worker's lease into
 * the task's insert and counts its first run there (`NewTask.startNow`): a task created while a slot is free starts
 * without a claim, in the same commit as its creation (the P1 fast hand-off).
 */
export interface SlotReservation {
  /** Lease owner to write into the new task. */
  readonly leaseOwner: string;
  /** Lease length (ms, on the store's clock). */
  readonly leaseMs: number;
  /** The task was committed with this lease: run it now. */
  start(record: TaskRecord): void;
  /** The create failed: give the slot back. */
  cancel(): void;
}

/**
 * The narrow interface between the task service and a worker in the same process. The service never runs a tool
 * and never sees the worker's slots; a process without a worker (`serve --no-worker`) simply has no hand-off, and
 * its tasks wait, unleased, for a worker elsewhere to claim them.
 */
export interface WorkerHandOff {
  /** A free slot for the task `taskId` about to be created, or `undefined` when none is free (or the worker drains). */
  reserve(taskId: string): SlotReservation | undefined;
  /**
   * The outcome write of a run of `taskId` that has finished here and is not committed yet, if any: a read that
   * finds the task still `working` can wait for it (at most one group commit) instead of answering a state that
   * is already over.
   */
  pendingOutcome(taskId: string): Promise<unknown> | undefined;
  /**
   * Hear every outcome this worker commits, after its commit and before the {@link pendingOutcome} promise of that
   * run settles: a read cache in the same process then answers the read that the commit's own event wakes without
   * going to the store (issue 25). Returns the function that stops hearing.
   */
  onOutcomeWritten(listener: OutcomeWrittenListener): () => void;
  /** Observe the progress reports of `taskId` while it runs here; returns the function that stops observing. */
  onProgress(taskId: string, listener: ProgressListener): () => void;
}
