import type { TasksServerLimits } from '../core/limits.js';
import type { TaskGeneration } from '../core/task.js';

/**
 * The one owner of a task's retention (TTL), in ms from `createdAt`; `null` = unlimited. The instant a task
 * expires is `expiresAtOf(createdAt, ttlMs)` (`core/store-rules.ts`), and whether a reader still sees it is
 * `visibleAt` there: nothing else decides retention.
 */
export type TtlLimits = Pick<TasksServerLimits, 'defaultTtlMs' | 'maxTtlMs' | 'minTtlMs'>;

/**
 * The retention a v1 requestor gets (2025-11-25 R18/R19): the default when none is requested, otherwise the
 * request clamped to `[minTtlMs, maxTtlMs]`.
 */
export function effectiveTtlMs(limits: TtlLimits, requested: number | undefined): number | null {
  return requested === undefined ? limits.defaultTtlMs : clampTtl(limits, requested);
}

/**
 * The TTL of a new task: v1 honours the requested `ttl` (clamped, {@link effectiveTtlMs}); v2 requestors cannot ask
 * for one (SEP-2663), so every v2 task gets the default: the tool's `defaultTtlMs` when it has one (clamped to the
 * server's bounds), else the server's.
 */
export function ttlFor(limits: TtlLimits, generation: TaskGeneration, requested: number | undefined, toolDefaultTtlMs?: number): number | null {
  // A tool's own default (`ToolDefinition.defaultTtlMs`) stands in for the server's, within the server's bounds.
  const withTool = toolDefaultTtlMs === undefined ? limits : { ...limits, defaultTtlMs: clampTtl(limits, toolDefaultTtlMs) };
  return generation === 'v1' ? effectiveTtlMs(withTool, requested) : withTool.defaultTtlMs;
}

/** `ttlMs` within `[minTtlMs, maxTtlMs]`. */
function clampTtl(limits: TtlLimits, ttlMs: number): number {
  const raised = Math.max(ttlMs, limits.minTtlMs);
  return limits.maxTtlMs === null ? raised : Math.min(raised, limits.maxTtlMs);
}
