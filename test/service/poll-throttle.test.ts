import { describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, textResult } from '../../src/core/tool.js';
import { PollThrottle } from '../../src/service/poll-throttle.js';
import { startTasksServer } from '../helpers/tasks-server.js';
import { postModern } from '../helpers/wire.js';

describe('polling protection (E18, R21/R52)', () => {
  it('never throttles the first poll, a normal re-check, or a poll that finds the task terminal', () => {
    const throttle = new PollThrottle(5000);
    expect(throttle.observe('o', 't', 1000, false, 0)).toEqual({ pollIntervalMs: 1000, delayMs: 0 });
    expect(throttle.observe('o', 't', 1000, false, 10)).toEqual({ pollIntervalMs: 1000, delayMs: 0 });
    expect(throttle.observe('o', 't', 1000, true, 20)).toEqual({ pollIntervalMs: 1000, delayMs: 0 });
    expect(throttle.size).toBe(0);
  });

  it('repeated too-fast polls of a non-terminal task get a raised interval and are held back until the interval has passed', () => {
    const throttle = new PollThrottle(5000);
    throttle.observe('o', 't', 1000, false, 0);
    throttle.observe('o', 't', 1000, false, 100);
    expect(throttle.observe('o', 't', 1000, false, 200)).toEqual({ pollIntervalMs: 2000, delayMs: 900 });
    expect(throttle.observe('o', 't', 1000, false, 250).pollIntervalMs).toBe(4000);
    // Another owner polling the same id, or the same owner another task, is not affected.
    expect(throttle.observe('other', 't', 1000, false, 260)).toEqual({ pollIntervalMs: 1000, delayMs: 0 });
    // A client that slows down to the hint is forgiven.
    expect(throttle.observe('o', 't', 1000, false, 5000)).toEqual({ pollIntervalMs: 1000, delayMs: 0 });
  });

  it('reports each held-back poll and, when a task is found terminal, how many polls it took (metrics)', () => {
    const heldBack: number[] = [];
    const polledToEnd: number[] = [];
    const throttle = new PollThrottle(5000, { heldBack: (ms) => heldBack.push(ms), polledToEnd: (polls) => polledToEnd.push(polls) });
    throttle.observe('o', 't', 1000, false, 0);
    throttle.observe('o', 't', 1000, false, 100);
    throttle.observe('o', 't', 1000, false, 200);
    expect(heldBack).toEqual([900]);
    throttle.observe('o', 't', 1000, true, 5000);
    expect(polledToEnd).toEqual([4]);
    // A task never polled before and found terminal at once is not tracked (nothing to report).
    throttle.observe('o', 'u', 1000, true, 5000);
    expect(polledToEnd).toEqual([4]);
  });

  it('a poll is judged against the hint the previous answer gave, not the larger one a growing hint gives now', () => {
    const throttle = new PollThrottle(5000);
    throttle.observe('o', 't', 250, false, 0);
    // 300 ms later the hint has grown to 550: too fast against 550, but not against the 250 the client was told.
    expect(throttle.observe('o', 't', 550, false, 300)).toEqual({ pollIntervalMs: 550, delayMs: 0 });
    expect(throttle.observe('o', 't', 1000, false, 700)).toEqual({ pollIntervalMs: 1000, delayMs: 0 });
    // Too fast against what it was told (1000), twice: held back until that has passed, and told more.
    throttle.observe('o', 't', 1000, false, 800);
    expect(throttle.observe('o', 't', 1000, false, 900)).toEqual({ pollIntervalMs: 2000, delayMs: 900 });
  });

  it('over HTTP: a client hammering tasks/get of a working task sees pollIntervalMs raised and no error', async () => {
    const gate = { release: () => {} };
    const slow = defineTool({
      name: 'slow',
      description: 'waits until released',
      execution: 'task-optional',
      inputSchema: z.object({}),
      async run() {
        await new Promise<void>((resolve) => (gate.release = resolve));
        return textResult('done');
      },
    });
    const running = await startTasksServer({ tools: [slow], limits: { pollIntervalMs: 200 } });
    try {
      const taskId = String((await postModern(running.url, 'tools/call', { name: 'slow', arguments: {} })).body.result?.taskId);
      const seen: number[] = [];
      for (let poll = 0; poll < 5; poll += 1) {
        const response = await postModern(running.url, 'tasks/get', { taskId });
        expect(response.body.error).toBeUndefined();
        seen.push(Number(response.body.result?.pollIntervalMs));
      }
      // The configured 200 ms is below the 2026-07-28 range, so every hint is at least 250 ms.
      expect(seen[0]).toBe(250);
      expect(Math.max(...seen)).toBeGreaterThan(250);
      expect(Math.max(...seen)).toBeLessThanOrEqual(30_000);
      gate.release();
      await expect.poll(async () => (await postModern(running.url, 'tasks/get', { taskId })).body.result?.status).toBe('completed');
      expect((await postModern(running.url, 'tasks/get', { taskId })).body.result?.pollIntervalMs).toBe(250);
    } finally {
      await running.close();
    }
  });
});
