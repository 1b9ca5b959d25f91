import { describe, expect, it } from 'vitest';

import type { TaskRecord } from '../../src/core/task.js';
import {
  adaptivePollHintMs,
  AGE_SHARE,
  clampPollHintMs,
  LONG_TASK_HINT_CAP_MS,
  V1_POLL_HINT_FLOOR_MS,
  V2_POLL_HINT_RANGE,
  withPollHint,
} from '../../src/service/poll-hint.js';
import { PollThrottle } from '../../src/service/poll-throttle.js';

/** Poll times of a client that waits exactly each hint, from creation (the create answer's hint) until `untilMs`. */
function honouringSchedule(generation: 'v1' | 'v2', ceilingMs: number, untilMs: number): number[] {
  const polls: number[] = [];
  let at = adaptivePollHintMs(generation, 0, ceilingMs);
  while (at <= untilMs) {
    polls.push(at);
    at += adaptivePollHintMs(generation, at, ceilingMs);
  }
  return polls;
}

describe('adaptive poll hint (issue 9 §3; R21, E11 pollIntervalMs MAY change)', () => {
  it('is the task age between the floor and the configured interval: young tasks get short hints', () => {
    expect([0, 10, 50, 120, 400, 999, 1000, 9_999].map((age) => adaptivePollHintMs('v1', age, 1000))).toEqual([50, 50, 50, 120, 400, 999, 1000, 1000]);
    expect([0, 100, 250, 400, 999, 1000, 9_999].map((age) => adaptivePollHintMs('v2', age, 1000))).toEqual([250, 250, 250, 400, 999, 1000, 1000]);
    expect(V1_POLL_HINT_FLOOR_MS).toBe(50);
    // A clock step backwards never gives a hint below the floor.
    expect(adaptivePollHintMs('v2', -5_000, 1000)).toBe(250);
  });

  it('an honouring client polls geometrically (each gap doubles) up to the configured interval, then at it', () => {
    expect(honouringSchedule('v2', 1000, 6000)).toEqual([250, 500, 1000, 2000, 3000, 4000, 5000, 6000]);
    expect(honouringSchedule('v1', 1000, 3000)).toEqual([50, 100, 200, 400, 800, 1600, 2600]);
    expect(honouringSchedule('v1', 5000, 20_000)).toEqual([50, 100, 200, 400, 800, 1600, 3200, 6400, 11_400, 16_400]);
  });

  it('such a client sees a task finishing at T within max(floor, T) of finishing', () => {
    for (const generation of ['v1', 'v2'] as const) {
      const floor = generation === 'v2' ? 250 : 50;
      const polls = honouringSchedule(generation, 1000, 20_000);
      for (const finishedAt of [0, 5, 50, 249, 251, 999, 2000, 2001, 7_777]) {
        const seenAt = polls.find((at) => at >= finishedAt)!;
        expect(seenAt - finishedAt, `${generation} T=${finishedAt}`).toBeLessThanOrEqual(Math.max(floor, finishedAt));
      }
    }
  });

  it('issue 27 §6: past 10 × the configured interval the hint is 10 % of the age, capped at 30 s, on both generations', () => {
    expect(AGE_SHARE).toBe(0.1);
    expect(LONG_TASK_HINT_CAP_MS).toBe(30_000);
    for (const generation of ['v1', 'v2'] as const) {
      expect([10_000, 20_000, 60_000, 299_999, 300_000, 3_600_000].map((age) => adaptivePollHintMs(generation, age, 1000))).toEqual([
        1000, 2000, 6000, 30_000, 30_000, 30_000,
      ]);
      // A configured interval above 10 % of the age still wins (the operator asked for it).
      expect(adaptivePollHintMs(generation, 60_000, 8000)).toBe(8000);
      // A short interval (tests configure 20 ms) stays until 10 % of the age passes 1 s, then the share takes over.
      expect([9_999, 10_000, 10_010, 20_000].map((age) => adaptivePollHintMs(generation, age, 20))).toEqual(
        generation === 'v2' ? [250, 250, 1001, 2000] : [20, 20, 1001, 2000],
      );
    }
  });

  it('issue 27 §6: an honouring client sees a task finishing at T within max(1 s, 10 % of T) and polls ~150 times per task-hour, not 3,600', () => {
    for (const generation of ['v1', 'v2'] as const) {
      const polls = honouringSchedule(generation, 1000, 3_700_000);
      const inTheHour = polls.filter((at) => at <= 3_600_000).length;
      expect(inTheHour, generation).toBeLessThan(200);
      expect(inTheHour, generation).toBeGreaterThan(100);
      for (const finishedAt of [0, 999, 5_000, 10_001, 45_678, 123_456, 299_000, 1_000_000, 3_599_000]) {
        const seenAt = polls.find((at) => at >= finishedAt)!;
        expect(seenAt - finishedAt, `${generation} T=${finishedAt}`).toBeLessThanOrEqual(Math.max(1000, 0.1 * finishedAt));
      }
      // …and never waits more than 30 s between two polls.
      expect(Math.max(...polls.slice(1).map((at, i) => at - polls[i]!))).toBe(30_000);
    }
  });

  it('2026-07-28 hints stay within 250 ms – 30 s whatever is configured; 2025-11-25 follows the configuration', () => {
    expect(V2_POLL_HINT_RANGE).toEqual({ minMs: 250, maxMs: 30_000 });
    expect(adaptivePollHintMs('v2', 10_000, 50)).toBe(250);
    expect(adaptivePollHintMs('v2', 120_000, 60_000)).toBe(30_000);
    expect(adaptivePollHintMs('v1', 10_000, 20)).toBe(20);
    expect(adaptivePollHintMs('v1', 120_000, 60_000)).toBe(60_000);
    expect([0.2, 249.6, 31_000].map((ms) => clampPollHintMs('v2', ms))).toEqual([250, 250, 30_000]);
    expect([0.2, 249.6, 31_000].map((ms) => clampPollHintMs('v1', ms))).toEqual([1, 250, 31_000]);
  });

  it('withPollHint answers the hint for the age; a terminal task keeps the configured interval, clamped', () => {
    const record = { generation: 'v2', status: 'working', createdAt: 1_000, pollIntervalMs: 5_000 } as TaskRecord;
    expect(withPollHint(record, 1_000).pollIntervalMs).toBe(250);
    expect(withPollHint(record, 3_000).pollIntervalMs).toBe(2_000);
    expect(withPollHint(record, 50_000).pollIntervalMs).toBe(5_000);
    expect(withPollHint(record, 101_000).pollIntervalMs).toBe(10_000);
    expect(withPollHint({ ...record, status: 'completed' }, 1_000).pollIntervalMs).toBe(5_000);
    expect(withPollHint({ ...record, status: 'completed', pollIntervalMs: 40 }, 1_000).pollIntervalMs).toBe(250);
    expect(withPollHint({ ...record, generation: 'v1', status: 'completed', pollIntervalMs: 40 }, 1_000).pollIntervalMs).toBe(40);
  });

  it('with the polling protection: a client honouring each hint (even 20 % early) is never slowed; a 10 ms poller is, never errored', () => {
    for (const early of [1, 0.8]) {
      const throttle = new PollThrottle(5000);
      let at = adaptivePollHintMs('v2', 0, 1000) * early;
      for (let poll = 0; poll < 30; poll += 1) {
        const hint = adaptivePollHintMs('v2', at, 1000);
        expect(throttle.observe('o', 't', hint, false, at), `poll at ${at}`).toEqual({ pollIntervalMs: hint, delayMs: 0 });
        at += hint * early;
      }
    }
    const throttle = new PollThrottle(5000);
    const advice = [0, 10, 20, 30, 40].map((at) => throttle.observe('o', 't', adaptivePollHintMs('v2', at, 1000), false, at));
    expect(advice.slice(0, 2).every((one) => one.delayMs === 0)).toBe(true);
    expect(advice[2]).toEqual({ pollIntervalMs: 500, delayMs: 240 });
    expect(advice[4]!.pollIntervalMs).toBe(2000);
  });
});
