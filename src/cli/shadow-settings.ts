import type { ShadowSettings } from '../execution/shadow-watch.js';
import type { ResolvedConfig } from './config/resolve.js';

/** Default poll interval of shadow mode (ms). */
export const DEFAULT_SHADOW_INTERVAL_MS = 1000;
/** Default settle polls at a task's end. */
export const DEFAULT_SHADOW_SETTLE_CHECKS = 3;

/** The shadow mode of `serve` / `worker`, or `undefined` when no tool is in shadow mode. */
export function shadowSettingsOf(resolved: ResolvedConfig): ShadowSettings | undefined {
  const shadow = resolved.config.shadow;
  if (!shadow?.tools?.length) return undefined;
  return { tools: shadow.tools, intervalMs: shadow.intervalMs ?? DEFAULT_SHADOW_INTERVAL_MS, settleChecks: shadow.settleChecks ?? DEFAULT_SHADOW_SETTLE_CHECKS };
}
