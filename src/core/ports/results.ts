import type { TaskOutcome } from '../task.js';

/**
 * Bytes of one stored chunk of a large result (see {@link TaskResults.putResultChunks}): small enough that serving a
 * result holds one chunk at a time, large enough that a 64 MiB result is 256 rows.
 */
export const RESULT_CHUNK_BYTES = 256 * 1024;

/**
 * Results (port "results"): the outcome a terminal transition stored (`TaskRows.transition` writes it) and the
 * chunks of a large result (issue 10 §2, issue 23 §5: bounded memory for every read). Errors: only `StoreError`.
 */
export interface TaskResults {
  /** The stored result or error of a terminal task; `undefined` when not (yet) stored. */
  getOutcome(taskId: string): Promise<TaskOutcome | undefined>;

  /**
   * Replace the stored chunks of `taskId`'s large result (issue 10 §2: the JSON text of a tool result above
   * `maxResultBytes`, at most {@link RESULT_CHUNK_BYTES} each) with `chunks`, numbered 0… in order, in one
   * transaction. The chunks belong to the task row: deleted with it (expiry, retention) by `ON DELETE CASCADE`.
   * With `leaseOwner` (the run that ends the task), written only while that lease owner holds the task and it is not
   * terminal (`working`, or `input_required` with an in-place question open): a run that lost its lease must not
   * replace the chunks of the run that holds it, whose outcome (written next, under the same condition) names their
   * size. Writes of one task's chunks are serialized.
   * @returns `false`, writing nothing, when the task does not exist (or is not held by `leaseOwner`, or has ended).
   * @throws {StoreError} `invalid` for an empty or oversized chunk; `unavailable` / `fault`.
   */
  putResultChunks(taskId: string, chunks: readonly Uint8Array[], leaseOwner?: string): Promise<boolean>;

  /**
   * Delete the chunks of `taskId` that nothing will ever serve: it is `cancelled` (a run wrote them, then the cancel
   * committed before the run's outcome, whose transition was then refused, or the run died; the run and the cancel
   * each call this), or it ended with an error outcome (the
   * run's outcome could not be stored after its chunks were, and the task failed with `result_not_stored`; or the run
   * died after them, and recovery failed the task `interrupted` or `attempts_exhausted`). Nothing
   * for a task in any other state — a run that took the task over may be writing chunks of its own, and a completed
   * or failed task whose result is a tool result links to its chunks — or one without chunks.
   * Port change (stop 46): was `discardCancelledResultChunks`, cancelled tasks only.
   * @returns how many chunks were deleted.
   * @throws {StoreError} `unavailable` / `fault`.
   */
  discardUnservedResultChunks(taskId: string): Promise<number>;

  /**
   * Chunk `index` (0-based) of `taskId`'s large result, or `undefined` past the last one and for a task without one
   * (read one at a time, so serving a result never holds more than one chunk).
   * @throws {StoreError} `unavailable` / `fault`.
   */
  readResultChunk(taskId: string, index: number): Promise<Uint8Array | undefined>;
}
