import { isTerminal } from '../core/state-machine.js';
import type { TaskGeneration, TaskRecord } from '../core/task.js';

/**
 * The adaptive poll interval hint (`pollInterval` on 2025-11-25, `pollIntervalMs` on 2026-07-28; both MAY change
 * over a task's life, SEP-2663 E11, R21). A fixed hint makes an honouring client see a 5 ms task finish only after
 * the whole interval; a short fixed hint makes long tasks cost many polls. The hint is instead the task's age,
 * between a floor and the configured interval (`--poll-interval-ms`, the ceiling): an honouring client then polls at
 * floor, 2 × floor, 4 × floor, … — geometrically spaced — until the spacing reaches the ceiling. A task finishing at
 * age T is seen by such a client within max(floor, T) of finishing, with log2(ceiling / floor) polls more than a fixed
 * hint would take at most.
 */

/** Smallest hint on 2025-11-25 (ms); the configured interval, when smaller, wins. */
export const V1_POLL_HINT_FLOOR_MS = 50;

/**
 * The range every 2026-07-28 hint is kept in (ms), whatever the configuration or the polling protection asks for:
 * the range Claude Code clamps a hint to, so a hint outside it would only be misread.
 */
export const V2_POLL_HINT_RANGE: Readonly<{ minMs: number; maxMs: number }> = Object.freeze({ minMs: 250, maxMs: 30_000 });

/** `ms` as an integer hint within what `generation` allows (see {@link V2_POLL_HINT_RANGE}); v1 only needs ≥ 1. */
export function clampPollHintMs(generation: TaskGeneration, ms: number): number {
  const whole = Math.max(1, Math.round(ms));
  return generation === 'v2' ? Math.min(V2_POLL_HINT_RANGE.maxMs, Math.max(V2_POLL_HINT_RANGE.minMs, whole)) : whole;
}

/**
 * The poll hint for a task of age `ageMs` (ms since `createdAt`, negative counts as 0): its age, at least the
 * generation's floor, at most `ceilingMs` (the configured interval), then clamped by {@link clampPollHintMs}. Pure.
 */
export function adaptivePollHintMs(generation: TaskGeneration, ageMs: number, ceilingMs: number): number {
  const floor = generation === 'v2' ? V2_POLL_HINT_RANGE.minMs : V1_POLL_HINT_FLOOR_MS;
  return clampPollHintMs(generation, Math.min(ceilingMs, Math.max(floor, ageMs)));
}

/**
 * A task as answered to its requestor: the stored `pollIntervalMs` (the configured interval, the ceiling) replaced
 * by {@link adaptivePollHintMs} for the task's age at `now` (epoch ms); a terminal task, which nobody needs to poll
 * again, keeps the configured interval, clamped like any hint.
 */
export function withPollHint(record: TaskRecord, now: number): TaskRecord {
  const hint = isTerminal(record.status)
    ? clampPollHintMs(record.generation, record.pollIntervalMs)
    : adaptivePollHintMs(record.generation, now - record.createdAt, record.pollIntervalMs);
  return hint === record.pollIntervalMs ? record : { ...record, pollIntervalMs: hint };
}
