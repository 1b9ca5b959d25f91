/**
 * Task policies, fallbacks and budgets of `callTool` / `waitForTask` against a real server (issue 13 items 2, 3):
 * every refusal happens before anything is sent, counted in the requests the client posts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import {
  CapabilityMissingError,
  connectTasksClient,
  type JobApiRequest,
  TaskOutcomeUnknownError,
  type TasksClient,
  TaskTimeoutError,
  ToolCallOutcomeUnknownError,
} from '../../src/client/index.js';
import { type AnyToolDefinition, defineTool, textResult } from '../../src/core/tool.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { countingTools, RequestLog } from './support.js';

const ticker = defineTool({
  name: 'ticker',
  description: 'Reports progress every 50 ms for `seconds`.',
  execution: 'task-optional',
  idempotent: true,
  inputSchema: z.object({ seconds: z.number() }),
  async run({ seconds }, ctx) {
    const steps = Math.round((seconds * 1000) / 50);
    for (let step = 1; step <= steps && !ctx.signal.aborted; step++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      ctx.progress(step, steps, 'tick');
    }
    return textResult('ticked');
  },
}) as AnyToolDefinition;

describe.each([
  { protocol: '2025-11-25', generation: 'v1' },
  { protocol: '2026-07-28', generation: 'v2' },
] as const)('policies, fallbacks and budgets over MCP $protocol', ({ protocol, generation }) => {
  const counting = countingTools();
  let running: RunningTasksServer;
  const open = async (log: RequestLog): Promise<TasksClient> => connectTasksClient({ url: running.url, protocol, journal: false, fetch: log.fetch });

  beforeAll(async () => {
    running = await startTasksServer({ tools: [...counting.tools, ticker], limits: { pollIntervalMs: 100 } });
  });
  afterAll(() => running.close());

  it('forbidden runs a task-optional tool inline (v1 sends no task, v2 does not declare the extension)', async () => {
    const log = new RequestLog();
    const client = await open(log);
    const outcome = await client.callTool('slow_compute', { seconds: 0 }, { task: 'forbidden' });
    expect(outcome).toMatchObject({ kind: 'result', route: 'sync', result: { content: [{ text: 'Computed result after 0s' }] } });
    const params = log.params('tools/call')[0] ?? {};
    expect(params.task).toBeUndefined();
    if (generation === 'v2')
      expect((params._meta as Record<string, { extensions?: unknown }>)['io.modelcontextprotocol/clientCapabilities']?.extensions).toBeUndefined();
    await client.close();
  });

  it('required with an unmet need: reject (default) throws CapabilityMissingError and sends nothing', async () => {
    const log = new RequestLog();
    const client = await open(log);
    const error = await client.callTool('slow_compute', { seconds: 0 }, { task: 'required', needs: { list: true } }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CapabilityMissingError);
    expect((error as CapabilityMissingError).missing).toHaveLength(1);
    expect((error as CapabilityMissingError).capabilitiesDigest).toBe((await client.manifest()).capabilitiesDigest);
    expect(log.count('tools/call')).toBe(0);
    await client.close();
  });

  it('{jobApi}: the call goes to the caller’s function with its identity; nothing is sent', async () => {
    const log = new RequestLog();
    const client = await open(log);
    const seen: JobApiRequest[] = [];
    const outcome = await client.callTool(
      'slow_compute',
      { seconds: 1 },
      { task: 'required', needs: { list: true }, fallback: { jobApi: (request) => (seen.push(request), { queued: 'job-1' }) } },
    );
    expect(outcome).toMatchObject({ kind: 'jobApi', value: { queued: 'job-1' }, missing: seen[0]?.missing });
    expect(seen[0]).toMatchObject({ tool: 'slow_compute', arguments: { seconds: 1 }, idempotencyKey: expect.any(String), manifest: { generation } });
    expect(log.count('tools/call')).toBe(0);
    await client.close();
  });

  it("'handoff': a structured record for a person; nothing is sent", async () => {
    const log = new RequestLog();
    const client = await open(log);
    const outcome = await client.callTool('slow_compute', { seconds: 1 }, { task: 'required', needs: { list: true }, fallback: 'handoff' });
    if (outcome.kind !== 'handoff') throw new Error('expected a handoff');
    expect(outcome.handoff).toMatchObject({
      kind: 'mcp-tasks/handoff',
      version: 1,
      tool: 'slow_compute',
      arguments: { seconds: 1 },
      policy: 'required',
      server: { url: running.url, generation, protocolVersion: protocol },
    });
    expect(outcome.handoff.instructions).toContain('nothing was sent');
    expect(log.count('tools/call')).toBe(0);
    await client.close();
  });

  it("'sync' needs maxSyncMs, never runs a task-only tool, and bounds the HTTP request by it", async () => {
    const log = new RequestLog();
    const client = await open(log);
    await expect(client.callTool('slow_compute', { seconds: 0 }, { task: 'required', needs: { list: true }, fallback: 'sync' })).rejects.toBeInstanceOf(
      RangeError,
    );
    if (generation === 'v1') {
      const refused = await client
        .callTool('failing_job', {}, { task: 'required', needs: { list: true }, fallback: 'sync', maxSyncMs: 1000 })
        .catch((caught: unknown) => caught);
      expect((refused as CapabilityMissingError).missing.at(-1)).toBe('the sync fallback cannot run it: tool failing_job runs only as a task');
    }
    expect(log.count('tools/call')).toBe(0);
    const startedAt = Date.now();
    const bounded = await client
      .callTool('slow_compute', { seconds: 5 }, { task: 'required', needs: { list: true }, fallback: 'sync', maxSyncMs: 300 })
      .catch((caught: unknown) => caught);
    expect(bounded).toBeInstanceOf(ToolCallOutcomeUnknownError); // the call was sent inline and cut at maxSyncMs
    expect(Date.now() - startedAt).toBeLessThan(4000);
    // Resent once with the same key (the server honours keys): "key already used" keeps the outcome unknown.
    expect(log.count('tools/call')).toBe(2);
    expect(log.params('tools/call')[1]?._meta).toEqual(log.params('tools/call')[0]?._meta);
    expect(log.params('tools/call')[0]?.task).toBeUndefined();
    await client.close();
  });

  it('an idempotency key must be 1–255 printable ASCII characters; a given one is sent as is', async () => {
    const log = new RequestLog();
    const client = await open(log);
    for (const bad of ['', 'x'.repeat(256), 'grüße', 'tab\there'])
      await expect(client.callTool('greet', { name: 'k' }, { idempotencyKey: bad })).rejects.toBeInstanceOf(RangeError);
    await client.callTool('greet', { name: 'k' }, { idempotencyKey: 'order-4711' });
    expect((log.params('tools/call')[0]?._meta as Record<string, unknown>)['dev.mcp-tasks/idempotency-key']).toBe('order-4711');
    await client.close();
  });

  it('the status-read budgets (count, time) end the wait; the task keeps running', async () => {
    const log = new RequestLog();
    const client = await open(log);
    const created = await client.callTool('slow_compute', { seconds: 30 });
    if (created.kind !== 'task') throw new Error('expected a task');
    const error = await client.waitForTask(created.taskId, { budgets: { statusReads: 3 } }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TaskTimeoutError);
    expect(error).toMatchObject({ budget: 'statusReads', snapshot: { status: 'working' } });
    expect(log.count('tasks/get')).toBe(3);
    const timed = await client.waitForTask(created.taskId, { budgets: { statusMs: 300 } }).catch((caught: unknown) => caught);
    expect(timed).toMatchObject({ name: 'TaskTimeoutError', budget: 'statusMs' });
    await client.cancelTask(created.taskId);
    await client.close();
  });

  it('progress never extends the absolute deadline (pushed notifications on v2, polls on v1)', async () => {
    const client = await open(new RequestLog());
    const created = await client.callTool('ticker', { seconds: 20 });
    if (created.kind !== 'task') throw new Error('expected a task');
    const startedAt = Date.now();
    let updates = 0;
    const error = await client
      .waitForTask(created.taskId, { timeoutMs: 1500, notifications: true, onUpdate: () => (updates += 1) })
      .catch((caught: unknown) => caught);
    const elapsed = Date.now() - startedAt;
    expect(error).toMatchObject({ name: 'TaskTimeoutError', budget: 'deadline' });
    expect(updates).toBeGreaterThan(1); // progress did arrive
    expect(elapsed).toBeGreaterThanOrEqual(1400);
    expect(elapsed).toBeLessThan(5000);
    await client.cancelTask(created.taskId);
    await client.close();
  });
});

describe('immediate response on 2026-07-28', () => {
  it("is the created task's initial statusMessage (here the server's 'queued')", async () => {
    const running = await startTasksServer({ tools: countingTools().tools, limits: { concurrency: 1 } });
    try {
      const client = await connectTasksClient({ url: running.url, journal: false });
      const first = await client.callTool('slow_compute', { seconds: 30 });
      const second = await client.callTool('slow_compute', { seconds: 30 });
      expect(second).toMatchObject({ kind: 'task', immediateResponse: 'queued' });
      for (const outcome of [first, second]) if (outcome.kind === 'task') await client.cancelTask(outcome.taskId);
      await client.close();
    } finally {
      await running.close();
    }
  });
});

describe('a task that expires while followed', () => {
  it.each(['2025-11-25', '2026-07-28'] as const)('over %s is reported as outcome unknown with its last status, never failed', async (protocol) => {
    const running = await startTasksServer({
      tools: countingTools().tools,
      limits: { pollIntervalMs: 100, defaultTtlMs: 1000, runtimeLimitMs: 1000, minResultRetentionMs: 0 },
    });
    try {
      const client = await connectTasksClient({ url: running.url, protocol, journal: false });
      const created = await client.callTool('slow_compute', { seconds: 30 }, { ttlMs: 1000 });
      if (created.kind !== 'task') throw new Error('expected a task');
      const error = await client.waitForTask(created.taskId, { timeoutMs: 15_000 }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(TaskOutcomeUnknownError);
      expect(error).toMatchObject({ reason: 'not_found', lastStatus: 'working', taskId: created.taskId });
      await client.close();
    } finally {
      await running.close();
    }
  });
});
