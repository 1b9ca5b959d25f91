import type { AnyToolDefinition } from '../core/tool.js';
import type { ShadowSettings } from '../execution/shadow-watch.js';
import type { ResolvedConfig } from './config/resolve.js';
import { UsageError } from './usage-error.js';

/** Default poll interval of shadow mode (ms). */
export const DEFAULT_SHADOW_INTERVAL_MS = 1000;
/** Default settle polls at a task's end. */
export const DEFAULT_SHADOW_SETTLE_CHECKS = 3;

/**
 * The shadow mode of `serve` / `worker`, or `undefined` when no tool is in shadow mode.
 * @throws UsageError when `shadow.tools` names a tool that is not served or has no `shadow` adapter (a misspelt
 *   name would silently leave the real tool unobserved).
 */
export function shadowSettingsOf(resolved: ResolvedConfig, tools: readonly AnyToolDefinition[]): ShadowSettings | undefined {
  const shadow = resolved.config.shadow;
  if (!shadow?.tools?.length) return undefined;
  const adapted = new Set(tools.filter((tool) => tool.shadow !== undefined).map((tool) => tool.name));
  const wrong = shadow.tools.filter((name) => name !== '*' && !adapted.has(name));
  if (wrong.length > 0) {
    throw new UsageError(
      `--shadow-tool names no served tool with a shadow adapter: ${wrong.join(', ')} (tools with one: ${[...adapted].join(', ') || 'none'})`,
    );
  }
  return {
    tools: shadow.tools,
    intervalMs: shadow.intervalMs ?? DEFAULT_SHADOW_INTERVAL_MS,
    settleChecks: shadow.settleChecks ?? DEFAULT_SHADOW_SETTLE_CHECKS,
  };
}
