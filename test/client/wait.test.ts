import { describe, expect, it } from 'vitest';

import { DEFAULT_POLL_INTERVAL_MS, jittered, POLL_JITTER, resolveDeadline } from '../../src/client/wait.js';

/** The pure parts of the polling policy; the loop itself runs against a real server in tasks-client.test.ts. */
describe('polling policy', () => {
  it('jitter stays within ±20 % of the interval and spans the range', () => {
    expect(POLL_JITTER).toBe(0.2);
    expect(jittered(1000, () => 0)).toBe(800);
    expect(jittered(1000, () => 0.5)).toBe(1000);
    expect(jittered(1000, () => 0.999999)).toBe(1200);
    const samples = Array.from({ length: 2000 }, () => jittered(DEFAULT_POLL_INTERVAL_MS));
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(800);
    expect(Math.max(...samples)).toBeLessThanOrEqual(1200);
    expect(new Set(samples).size).toBeGreaterThan(50);
  });

  it('the deadline is the earlier of an absolute deadline and a relative timeout; none means unbounded', () => {
    expect(resolveDeadline({}, 1000)).toBeUndefined();
    expect(resolveDeadline({ timeoutMs: 500 }, 1000)).toBe(1500);
    expect(resolveDeadline({ deadline: 1200 }, 1000)).toBe(1200);
    expect(resolveDeadline({ deadline: 1200, timeoutMs: 500 }, 1000)).toBe(1200);
    expect(resolveDeadline({ deadline: 9000, timeoutMs: 500 }, 1000)).toBe(1500);
  });
});
