import type { JsonValue } from '../task.js';

/** Bytes of JSON one tool-state document may take (see {@link TaskSteps.putToolState}). */
export const MAX_TOOL_STATE_BYTES = 512 * 1024;
/** Keys one owner may hold per tool. */
export const MAX_TOOL_STATE_KEYS = 64;
/** Characters of a tool name or a key. */
export const MAX_TOOL_STATE_NAME = 200;

/**
 * What a run finds of one journaled step, fenced by the run's lease owner (see {@link TaskSteps.lookupStep}):
 * - `journaled`: the step completed, in this run or an earlier one; `value` is what the journal holds;
 * - `absent`: it never completed, and the task is still run under that owner: the run may execute it;
 * - `not_held`: the task is no longer run under that owner — another process took it over once its lease lapsed, or
 *   it ended, or it was deleted — so the run must stop: a step it executed now could run beside the new run's.
 */
export type JournalEntry = { kind: 'journaled'; value: JsonValue } | { kind: 'absent' } | { kind: 'not_held' };

/**
 * What a tool keeps (port "steps"): the journaled steps of a task (a run that resumes skips what already happened)
 * and a tool's per-owner state between calls. Errors: only `StoreError`; no value answers `undefined`.
 */
export interface TaskSteps {
  /** A journaled step value, or `undefined` when the step never completed. */
  getStep(taskId: string, name: string): Promise<{ value: JsonValue } | undefined>;

  /**
   * A run's look into its journal before it executes step `name`: `not_held` unless the task is `working` or
   * `input_required` with its lease held by `leaseOwner` (a lapsed lease nobody took over is still held).
   * Port addition (stop 46): a run that lost its task learns it here, before it executes a step the new run may
   * execute too.
   */
  lookupStep(taskId: string, name: string, leaseOwner: string): Promise<JournalEntry>;

  /**
   * Journal a completed step; first write wins: a later write for the same name keeps the earlier value.
   * With `leaseOwner` (a run writing its own journal), written only while the task is `working` or
   * `input_required` under that lease owner or under none (a step under way when its run parked for input is kept,
   * so the next run replays it rather than running it again), so a run whose task another owner took over never
   * records a value that run did not compute.
   * @returns `journaled` with the value the journal holds after the write (this write's, or the earlier one's that
   *   won); `not_held`, writing nothing, when the task does not exist, or ended, or another lease owner holds it.
   * Port change (stop 46): fenced by the lease owner and answers what it journaled (it was first-write-wins with no
   * fence and no answer).
   */
  putStep(taskId: string, name: string, value: JsonValue, leaseOwner?: string): Promise<Exclude<JournalEntry, { kind: 'absent' }>>;

  /**
   * One document of a tool's per-owner state (what a tool keeps between calls of one owner, e.g.
   * check_infrastructure's last snapshot), or `undefined` when none is stored. Not tied to a task: it outlives
   * tasks and their expiry. Scoped by `ownerKey` and `tool`; no caller ever reads another owner's state.
   */
  getToolState(ownerKey: string, tool: string, key: string): Promise<JsonValue | undefined>;

  /**
   * Store (replace) one document of a tool's per-owner state, at `now` (epoch ms).
   * @throws {StoreError} `invalid` when the JSON exceeds {@link MAX_TOOL_STATE_BYTES}, a name is empty or longer
   *   than {@link MAX_TOOL_STATE_NAME}, or the key is new and the owner already holds {@link MAX_TOOL_STATE_KEYS}
   *   keys for the tool (checked in the write's own statement; two concurrent new keys may both pass); nothing is
   *   written.
   */
  putToolState(ownerKey: string, tool: string, key: string, value: JsonValue, now: number): Promise<void>;
}
