import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, textResult } from '../../src/core/tool.js';
import { TasksMetrics } from '../../src/ops/metrics.js';
import { pollUntil } from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { postModern, TASKS_EXTENSION } from '../helpers/wire.js';
import { metricValue } from './support.js';

// Issue 15 item 3 (input wait): the gauge of input-waiting tasks and the histogram of input wait time, scraped
// while a real 2026-07-28 task waits for an answer and after it is answered.

const ELICITING = { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {} } };
const CONFIRM = { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] };
const WAIT_MS = 400;

describe('input-wait metrics', () => {
  const metrics = new TasksMetrics({ role: 'serve', defaultMetrics: false });
  let running: RunningTasksServer;
  beforeAll(async () => {
    const confirm = defineTool({
      name: 'confirm_job',
      description: 'asks once, then completes',
      execution: 'task-required',
      idempotent: true,
      elicits: true,
      inputSchema: z.object({}),
      async run(_args, ctx) {
        const answer = await ctx.elicit({ message: 'Go on?', requestedSchema: CONFIRM });
        return textResult(answer.action);
      },
    });
    running = await startTasksServer({ tools: [confirm], hooks: [metrics.serviceHook()], limits: { pollIntervalMs: 50 } });
    metrics.readInputsFrom(running.store);
  });
  afterAll(async () => {
    await running?.close();
  });

  const scrape = async (): Promise<string> => (await metrics.exposition()).body;
  const get = async (taskId: string) => (await postModern(running.url, 'tasks/get', { taskId }, { capabilities: ELICITING })).body.result ?? {};

  it('mcp_tasks_input_waiting_tasks counts the waiting task; mcp_tasks_input_wait_seconds observes its wait once answered', async () => {
    expect(metricValue(await scrape(), 'mcp_tasks_input_waiting_tasks')).toBe(0);
    const created = await postModern(running.url, 'tools/call', { name: 'confirm_job', arguments: {} }, { capabilities: ELICITING });
    const taskId = String(created.body.result?.taskId);
    const waiting = await pollUntil(
      () => get(taskId),
      (task) => task.status === 'input_required',
      { what: 'input_required' },
    );
    const [key] = Object.keys(waiting.inputRequests as object);
    expect(metricValue(await scrape(), 'mcp_tasks_input_waiting_tasks')).toBe(1);
    expect(metricValue(await scrape(), 'mcp_tasks_input_wait_seconds_count')).toBe(0);

    await new Promise((resolve) => setTimeout(resolve, WAIT_MS));
    const update = await postModern(
      running.url,
      'tasks/update',
      { taskId, inputResponses: { [key as string]: { action: 'accept', content: { confirm: true } } } },
      { capabilities: ELICITING },
    );
    expect(update.body.error).toBeUndefined();
    await pollUntil(
      () => get(taskId),
      (task) => task.status === 'completed',
      { what: 'completed' },
    );

    const after = await scrape();
    expect(metricValue(after, 'mcp_tasks_input_waiting_tasks')).toBe(0);
    expect(metricValue(after, 'mcp_tasks_input_wait_seconds_count', { tool: 'confirm_job' })).toBe(1);
    // Waited at least WAIT_MS; "seconds, not minutes" as the upper bound on a loaded machine.
    const waited = metricValue(after, 'mcp_tasks_input_wait_seconds_sum', { tool: 'confirm_job' });
    expect(waited).toBeGreaterThanOrEqual(WAIT_MS / 1000);
    expect(waited).toBeLessThan(60);
    expect(after).not.toContain(taskId);
  });
});
