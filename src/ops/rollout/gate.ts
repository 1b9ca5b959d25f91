import type { KillSwitchFallback } from '../../core/kill-switch.js';
import type { Caller } from '../../service/caller.js';
import type { TaskModeGate, TaskModeVerdict } from '../../service/calls/task-mode-gate.js';
import { type CanaryRule, inCanary } from './canary.js';
import type { KillSwitchCache } from './kill-switch.js';

/** The rollout settings of a server (config `rollout`). */
export interface RolloutSettings {
  /** Fallback of a switch stored without one, and of a canary without one. */
  fallback: KillSwitchFallback;
  /** Bound of the inline run of the `sync` fallback (ms). */
  maxSyncMs: number;
  /** Canary per tool name. */
  canary: Readonly<Record<string, CanaryRule & { fallback?: KillSwitchFallback }>>;
}

/**
 * The {@link TaskModeGate} of a server: the kill switch first (a tool switched off is off for every cohort), then
 * the tool's canary. The cohort is reported for tools with a canary only, so metrics keep one series otherwise.
 */
export function rolloutGate(killSwitch: KillSwitchCache, settings: RolloutSettings): TaskModeGate {
  return {
    verdict(caller: Caller, toolName: string): TaskModeVerdict {
      const rule = settings.canary[toolName];
      const cohort = rule === undefined ? undefined : inCanary(rule, caller.ownerKey) ? 'canary' : 'stable';
      const switched = killSwitch.switchFor(toolName);
      if (switched) return { allow: false, fallback: switched.fallback ?? settings.fallback, reason: 'kill_switch', cohort, maxSyncMs: settings.maxSyncMs };
      if (cohort === 'stable') return { allow: false, fallback: rule?.fallback ?? settings.fallback, reason: 'canary', cohort, maxSyncMs: settings.maxSyncMs };
      return { allow: true, cohort };
    },
  };
}
