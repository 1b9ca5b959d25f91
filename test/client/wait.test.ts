import { describe, expect, it } from 'vitest';

import { TaskTimeoutError } from '../../src/client/errors.js';
import { deadlineFetch } from '../../src/client/request-deadline.js';
import type { TaskSnapshot } from '../../src/client/types.js';
import { DEFAULT_POLL_INTERVAL_MS, jittered, POLL_JITTER, pollUntilTerminal, resolveDeadline } from '../../src/client/wait.js';

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

  it("no request leaves at or after the deadline, even when the process stalls between the loop's check and the send", async () => {
    const sent: number[] = [];
    const send = deadlineFetch(async () => {
      sent.push(Date.now());
      return new Response('{}');
    });
    // A poll whose way to the network takes longer than the time left (a busy process: 80 ms of CPU before the send).
    const stalledPoll = async (): Promise<TaskSnapshot> => {
      const until = Date.now() + 80;
      while (Date.now() < until);
      await send('http://127.0.0.1:9/mcp', { method: 'POST' });
      return { taskId: 't', status: 'working' } as TaskSnapshot;
    };
    const error = await pollUntilTerminal('t', stalledPoll, { timeoutMs: 50, requestTimeoutMs: 1_000 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TaskTimeoutError);
    expect(sent).toEqual([]);
    // Negative control: the same poll with no wait around it (no deadline in force) sends.
    await stalledPoll();
    expect(sent).toHaveLength(1);
  });
});
