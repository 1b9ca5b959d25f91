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
  if (requested === undefined) return limits.defaultTtlMs;
  const raised = Math.max(requested, limits.minTtlMs);
  return limits.maxTtlMs === null ? raised : Math.min(raised, limits.maxTtlMs);
}

/**
 * The TTL of a new task: v1 honours the requested `ttl` (clamped, {@link effectiveTtlMs}); v2 requestors cannot ask
 * for one (SEP-2663), so every v2 task gets the server's default.
 */
export function ttlFor(limits: TtlLimits, generation: TaskGeneration, requested: number | undefined): number | null {
  return generation === 'v1' ? effectiveTtlMs(limits, requested) : limits.defaultTtlMs;
}
