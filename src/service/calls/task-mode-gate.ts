import { TasksError } from '../../core/errors.js';
import type { KillSwitchFallback } from '../../core/kill-switch.js';
import type { ToolDescriptor } from '../../core/tool.js';
import { ErrorCode, type KillSwitchReason } from '../../protocol/constants.js';
import type { Caller } from '../caller.js';

/**
 * Whether a caller may use task mode for a tool now (issue 15 items 6–7): `allow` (with the canary cohort the caller
 * is in, for metrics), or refused with the fallback the call gets instead and why (`kill_switch`, `canary`).
 */
export type TaskModeVerdict =
  | { allow: true; cohort: 'canary' | 'stable' | undefined }
  | {
      allow: false;
      fallback: KillSwitchFallback;
      reason: Exclude<KillSwitchReason, 'sync_timeout'>;
      cohort: 'canary' | 'stable' | undefined;
      maxSyncMs: number;
    };

/**
 * The rollout seam of the task service: asked synchronously (from a cache; never a store round trip per call) by
 * `tools/list` and by THE rule "may this call create a task" (`planCall`), so every entry path obeys it once.
 * A hook cannot be the seam: a refused task may still run inline, which changes the plan, not just allows or
 * refuses it. Implemented by the kill switch and the canary (`ops/rollout/gate.ts`).
 */
export interface TaskModeGate {
  verdict(caller: Caller, toolName: string): TaskModeVerdict;
}

/**
 * A tool as `tools/list` shows it while task mode is refused: a tool that may run inline is `sync` (2025-11-25
 * `taskSupport: "forbidden"`), one that runs only as a task is not listed (`undefined`).
 */
export function gatedDescriptor(tool: ToolDescriptor): ToolDescriptor | undefined {
  return tool.execution === 'task-required' ? undefined : { ...tool, execution: 'sync' };
}

/** The `-31003` refusal of a task-augmented call (`data.reason`, and for `sync_timeout` the bound in ms). */
export function killSwitchError(tool: string, reason: KillSwitchReason, maxSyncMs?: number): TasksError {
  const message =
    reason === 'sync_timeout'
      ? `Tool '${tool}' runs inline while task mode is switched off, and did not finish within ${maxSyncMs} ms`
      : reason === 'canary'
        ? `Task mode of tool '${tool}' is limited to a canary that does not include this caller`
        : `Task mode of tool '${tool}' is switched off by the operator (kill switch)`;
  return new TasksError(ErrorCode.KillSwitch, message, { reason, tool, ...(maxSyncMs === undefined ? {} : { maxSyncMs }) });
}
