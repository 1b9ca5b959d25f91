import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, textResult } from '../../src/core/tool.js';
import { PollThrottle } from '../../src/server/poll-throttle.js';
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
      expect(seen[0]).toBe(200);
      expect(Math.max(...seen)).toBeGreaterThan(200);
      gate.release();
      await expect.poll(async () => (await postModern(running.url, 'tasks/get', { taskId })).body.result?.status).toBe('completed');
      expect((await postModern(running.url, 'tasks/get', { taskId })).body.result?.pollIntervalMs).toBe(200);
    } finally {
      await running.close();
    }
  });
});
