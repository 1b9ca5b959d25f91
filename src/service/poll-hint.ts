import { isTerminal } from '../core/state-machine.js';
import type { TaskGeneration, TaskRecord } from '../core/task.js';

/**
 * The adaptive poll interval hint (`pollInterval` on 2025-11-25, `pollIntervalMs` on 2026-07-28; both MAY change
 * over a task's life, SEP-2663 E11, R21). A fixed hint makes an honouring client see a 5 ms task finish only after
 * the whole interval; a short fixed hint makes long tasks cost many polls (1 s → 3,600 `tasks/get` per task-hour).
 * The hint therefore follows the task's age in three stretches:
 * - young (age < configured interval): the age, at least a floor — an honouring client polls at floor, 2 × floor,
 *   4 × floor, … and sees a task finishing at age T within max(floor, T);
 * - then the configured interval (`--poll-interval-ms`, 1 s by default) until {@link AGE_SHARE} of the age passes
 *   both it and {@link AGE_SHARE_FROM_MS} (so a short interval configured for tests stays short for 10 s);
 * - then {@link AGE_SHARE} of the age, at most {@link LONG_TASK_HINT_CAP_MS} (30 s) — a task finishing at age T is
 *   seen within max(1 s, interval, T / 10), and an hour-long task costs ~150 polls instead of 3,600 (issue 27 §6).
 * A configured interval above the cap is the operator's explicit choice and is kept (2026-07-28 clamps it to 30 s).
 */

/** Share of the task's age an old task's hint grows to (issue 27 §6: completion seen within 10 % of the age). */
export const AGE_SHARE = 0.1;

/** The age share only counts once it is above this (ms): the "1 s" of "seen within max(1 s, 10 % of the age)". */
export const AGE_SHARE_FROM_MS = 1000;

/** Largest hint the age share can reach (ms): the upper end of the range Claude Code clamps hints to. */
export const LONG_TASK_HINT_CAP_MS = 30_000;

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
 * The poll hint for a task of age `ageMs` (ms since `createdAt`, negative counts as 0): its age (at least the
 * generation's floor) while that is below `ceilingMs` (the configured interval), then `ceilingMs` until
 * {@link AGE_SHARE} of the age exceeds it and {@link AGE_SHARE_FROM_MS}, then that share of the age up to {@link LONG_TASK_HINT_CAP_MS} (never
 * below `ceilingMs`); clamped by {@link clampPollHintMs}. Pure.
 */
export function adaptivePollHintMs(generation: TaskGeneration, ageMs: number, ceilingMs: number): number {
  const floor = generation === 'v2' ? V2_POLL_HINT_RANGE.minMs : V1_POLL_HINT_FLOOR_MS;
  const age = Math.max(0, ageMs);
  const share = Math.min(LONG_TASK_HINT_CAP_MS, AGE_SHARE * age);
  const steady = share > AGE_SHARE_FROM_MS ? Math.max(ceilingMs, share) : ceilingMs;
  return clampPollHintMs(generation, Math.min(steady, Math.max(floor, age)));
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
