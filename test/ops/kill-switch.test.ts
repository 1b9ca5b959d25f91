/**
 * Issue 15 item 6: the kill switch end to end over real HTTP against a real server on a real SQLite file, with the
 * SDK 1.32.2 client (2025-11-25) and raw 2026-07-28 requests. Kill switch on → new task-augmented calls get the
 * fallback (reject: -31003 `kill_switch`; sync: an inline run where the server decides, bounded by maxSyncMs), new
 * 2025-11-25 sessions see the tool as `taskSupport: "forbidden"` (a task-required tool not at all), an existing
 * session that sends `task` gets -31003; tasks created before stay observable, cancellable and complete; off → back.
 */
import { CallToolResultSchema, CreateTaskResultSchema, ListToolsResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { GLOBAL_SWITCH } from '../../src/core/kill-switch.js';
import { silentLogger } from '../../src/core/logger.js';
import { type AnyToolDefinition, defineTool, textResult } from '../../src/core/tool.js';
import { TasksMetrics } from '../../src/ops/metrics.js';
import { rolloutGate } from '../../src/ops/rollout/gate.js';
import { KillSwitchCache } from '../../src/ops/rollout/kill-switch.js';
import { connectV1Http, pollUntil, rejection, type V1HttpClient } from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern } from '../helpers/wire.js';
import { metricValue } from './support.js';

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });

const tools: AnyToolDefinition[] = [
  defineTool({
    name: 'export_job',
    description: 'Runs for `ms` milliseconds; may run inline.',
    execution: 'task-optional',
    idempotent: true,
    inputSchema: z.object({ ms: z.number().int().min(0) }),
    async run({ ms }, ctx) {
      await sleep(ms, ctx.signal);
      return textResult(`exported after ${ms} ms`);
    },
  }),
  defineTool({
    name: 'task_only',
    description: 'Runs only as a task.',
    execution: 'task-required',
    idempotent: true,
    inputSchema: z.object({}),
    async run() {
      return textResult('done');
    },
  }),
];

type Listed = { name: string; execution?: { taskSupport?: string } };

describe('kill switch (issue 15 item 6) on both generations', () => {
  let running: RunningTasksServer;
  let cache: KillSwitchCache;
  const metrics = new TasksMetrics({ role: 'api' });
  let existing: V1HttpClient;
  const opened: V1HttpClient[] = [];
  const newSession = async (): Promise<V1HttpClient> => {
    const session = await connectV1Http(running.url);
    opened.push(session);
    return session;
  };
  const listV1 = async (session: V1HttpClient): Promise<Listed[]> =>
    (await session.client.request({ method: 'tools/list', params: {} }, ListToolsResultSchema)).tools as Listed[];
  const createV1 = (session: V1HttpClient, name: string, args: Record<string, unknown>) =>
    session.client.request({ method: 'tools/call', params: { name, arguments: args } }, CreateTaskResultSchema, { task: {} });
  const switchOn = async (scope: string, fallback: 'sync' | 'reject' | null) => {
    await running.store.setKillSwitch({ scope, fallback, reason: 'test', setBy: 'local', setAt: Date.now() });
    await cache.refresh();
  };
  const switchOff = async (scope: string) => {
    await running.store.clearKillSwitch(scope);
    await cache.refresh();
  };

  beforeAll(async () => {
    // The cache reads the same store the server writes; the test refreshes it after each change (no waiting).
    const holder: { cache?: KillSwitchCache } = {};
    running = await startTasksServer({
      tools,
      limits: { pollIntervalMs: 100 },
      hooks: [metrics.serviceHook()],
      gate: {
        verdict: (caller, tool) => rolloutGate(holder.cache as KillSwitchCache, { fallback: 'reject', maxSyncMs: 1000, canary: {} }).verdict(caller, tool),
      },
    });
    cache = new KillSwitchCache(running.store, silentLogger, 60_000);
    holder.cache = cache;
    await cache.refresh();
    existing = await newSession();
  });
  afterAll(async () => {
    cache?.stop();
    for (const session of opened) await session.close();
    await running?.close();
  });

  it('on (reject) → new task calls get -31003 kill_switch on both generations; tasks created before complete, stay readable and cancellable; off → back', async () => {
    // Before: a v1 session sees the tools as they are, and creates two tasks.
    expect((await listV1(existing)).map((tool) => [tool.name, tool.execution?.taskSupport])).toEqual([
      ['export_job', 'optional'],
      ['task_only', 'required'],
    ]);
    const finishing = await createV1(existing, 'export_job', { ms: 1500 });
    const toCancel = await createV1(existing, 'export_job', { ms: 30_000 });
    const v2Before = await postModern(running.url, 'tools/call', { name: 'export_job', arguments: { ms: 1500 } });
    expect(v2Before.body.result).toMatchObject({ resultType: 'task' });

    await switchOn(GLOBAL_SWITCH, null);

    // An existing 2025-11-25 session that sends `task` may not be ignored: -31003 with data.reason.
    const refused = await rejection(createV1(existing, 'export_job', { ms: 10 }));
    expect(refused).toMatchObject({ code: -31003, data: { reason: 'kill_switch', tool: 'export_job' } });
    // A new 2025-11-25 session sees the tool as forbidden, and the task-required tool not at all.
    const fresh = await newSession();
    expect((await listV1(fresh)).map((tool) => [tool.name, tool.execution?.taskSupport ?? 'forbidden'])).toEqual([['export_job', 'forbidden']]);
    // …and its plain call (no task) runs inline as usual.
    const inline = await fresh.client.request({ method: 'tools/call', params: { name: 'export_job', arguments: { ms: 10 } } }, CallToolResultSchema);
    expect(inline.content).toEqual([{ type: 'text', text: 'exported after 10 ms' }]);
    // 2026-07-28: the server decides; with reject it refuses, for both tools.
    for (const name of ['export_job', 'task_only']) {
      const v2 = await postModern(running.url, 'tools/call', { name, arguments: name === 'export_job' ? { ms: 10 } : {} });
      expect(v2.body.error, name).toMatchObject({ code: -31003, data: { reason: 'kill_switch', tool: name } });
    }

    // Refusals pass the service door: counted by reason, and in the audit trail.
    const exposition = (await metrics.exposition()).body;
    expect(metricValue(exposition, 'mcp_tasks_calls_refused_total', { tool: 'export_job', reason: 'kill_switch' })).toBe(2);
    expect(metricValue(exposition, 'mcp_tasks_calls_refused_total', { tool: 'task_only', reason: 'kill_switch' })).toBe(1);
    const audit = await running.store.listAudit({ tool: 'task_only', limit: 100 });
    expect(audit.some((entry) => entry.kind === 'call' && JSON.stringify(entry).includes('-31003'))).toBe(true);

    // Tasks created before stay observable, cancellable, and complete.
    const cancelled = await existing.client.experimental.tasks.cancelTask(toCancel.task.taskId);
    expect(cancelled.status).toBe('cancelled');
    const done = await pollUntil(
      () => existing.client.experimental.tasks.getTask(finishing.task.taskId),
      (task) => task.status === 'completed',
      { what: 'the task created before the switch to complete' },
    );
    expect(done.status).toBe('completed');
    const result = await existing.client.experimental.tasks.getTaskResult(finishing.task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'exported after 1500 ms' }]);
    expect(await pollModernTask(running.url, v2Before.body.result?.taskId as string)).toMatchObject({ status: 'completed' });

    // Off → everything back: a new session sees task support again, both generations create tasks.
    await switchOff(GLOBAL_SWITCH);
    const after = await newSession();
    expect((await listV1(after)).map((tool) => [tool.name, tool.execution?.taskSupport])).toEqual([
      ['export_job', 'optional'],
      ['task_only', 'required'],
    ]);
    expect((await createV1(existing, 'export_job', { ms: 10 })).task.status).toBe('working');
    expect((await postModern(running.url, 'tools/call', { name: 'task_only', arguments: {} })).body.result).toMatchObject({ resultType: 'task' });
  }, 60_000);

  it('a per-tool switch with fallback sync: 2026-07-28 calls run inline (bounded by maxSyncMs → -31003 sync_timeout), other tools keep task mode; a 2025-11-25 task is still refused', async () => {
    await switchOn('export_job', 'sync');
    try {
      const inline = await postModern(running.url, 'tools/call', { name: 'export_job', arguments: { ms: 20 } });
      expect(inline.body.error).toBeUndefined();
      expect(inline.body.result).not.toMatchObject({ resultType: 'task' });
      expect(inline.body.result?.content).toEqual([{ type: 'text', text: 'exported after 20 ms' }]);
      const slow = await postModern(running.url, 'tools/call', { name: 'export_job', arguments: { ms: 5000 } });
      expect(slow.body.error).toMatchObject({ code: -31003, data: { reason: 'sync_timeout', maxSyncMs: 1000 } });
      // The other tool is not switched off.
      expect((await postModern(running.url, 'tools/call', { name: 'task_only', arguments: {} })).body.result).toMatchObject({ resultType: 'task' });
      // A 2025-11-25 session that sends task is never silently run inline.
      expect(await rejection(createV1(existing, 'export_job', { ms: 10 }))).toMatchObject({ code: -31003, data: { reason: 'kill_switch' } });
      // A tool that runs only as a task has no inline fallback: sync on it is a refusal.
      await switchOn('task_only', 'sync');
      expect((await postModern(running.url, 'tools/call', { name: 'task_only', arguments: {} })).body.error).toMatchObject({
        code: -31003,
        data: { reason: 'kill_switch' },
      });
    } finally {
      await switchOff('export_job');
      await switchOff('task_only');
    }
    // Negative control: off, the same call is a task again.
    expect((await postModern(running.url, 'tools/call', { name: 'export_job', arguments: { ms: 20 } })).body.result).toMatchObject({ resultType: 'task' });
  }, 60_000);
});
