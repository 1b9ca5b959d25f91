import type { JsonValue } from '../task.js';

/** Bytes of JSON one tool-state document may take (see {@link TaskSteps.putToolState}). */
export const MAX_TOOL_STATE_BYTES = 512 * 1024;
/** Keys one owner may hold per tool. */
export const MAX_TOOL_STATE_KEYS = 64;
/** Characters of a tool name or a key. */
export const MAX_TOOL_STATE_NAME = 200;

/**
 * What a tool keeps (port "steps"): the journaled steps of a task (a run that resumes skips what already happened)
 * and a tool's per-owner state between calls. Errors: only `StoreError`; no value answers `undefined`.
 */
export interface TaskSteps {
  /** A journaled step value, or `undefined` when the step never completed. */
  getStep(taskId: string, name: string): Promise<{ value: JsonValue } | undefined>;

  /** Journal a completed step (first write wins; later writes for the same name are ignored). */
  putStep(taskId: string, name: string, value: JsonValue): Promise<void>;

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
