import type { TasksServerLimits } from '../../src/core/limits.js';

/**
 * Limits for tests that drive one task at a time: every background interval a minute long, so nothing happens
 * unless the test causes it; the default TTL outlasts the runtime limit as the start-up rule requires.
 */
export const QUIET_LIMITS: Partial<TasksServerLimits> = {
  concurrency: 4,
  leaseMs: 60_000,
  recoveryIntervalMs: 60_000,
  sweepIntervalMs: 60_000,
  tailIntervalMs: 60_000,
  statusFlushIntervalMs: 60_000,
  runtimeLimitMs: 60_000,
  defaultTtlMs: 120_000,
  minResultRetentionMs: 60_000,
  maxAttempts: 3,
  inputTimeoutMs: 60_000,
  // No 2026-07-28 inline grace (issue 27 §5): a created task is answered as a task at once.
  inlineGraceMs: 0,
};
