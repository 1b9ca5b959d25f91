import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, textResult } from '../../src/core/tool.js';
import { TRACE_STEP } from '../../src/core/trace-context.js';
import { TasksTracing } from '../../src/ops/tracing.js';
import { connectV1Http, pollUntil, type V1HttpClient } from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

// Issue 15 item 4 in one process: the request span (child of `_meta.traceparent`), the run's root span linked to
// it, child spans for ctx.step and ctx.operation, on both generations; the OTel SDK's in-memory exporter.

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;

const operations = { 'demo.effect': { reconcile: async () => ({ status: 'not_applied' as const }) } };
const tools = [
  defineTool({
    name: 'traced_job',
    description: 'two steps and one operation',
    execution: 'task-optional',
    journaled: true,
    operations,
    inputSchema: z.object({}),
    async run(_args, ctx) {
      const a = await ctx.step('fetch', () => 1);
      const b = await ctx.step('compute', () => a + 1);
      await ctx.operation({ key: 'publish', effect: 'demo.effect', target: 'demo' }, async () => ({ ref: 'R-1' }));
      return textResult(`done ${b}`);
    },
  }),
  defineTool({
    name: 'broken_job',
    description: 'fails inside a step',
    execution: 'task-optional',
    journaled: true,
    inputSchema: z.object({}),
    async run(_args, ctx) {
      await ctx.step('explode', () => {
        throw new Error('boom');
      });
      return textResult('unreachable');
    },
  }),
];

describe('traces in process (in-memory exporter)', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let running: RunningTasksServer;
  let v1: V1HttpClient;

  beforeAll(async () => {
    trace.setGlobalTracerProvider(provider);
    const tracing = await TasksTracing.load();
    running = await startTasksServer({ tools, hooks: [tracing.serviceHook()], runTracer: tracing.runTracer() });
    v1 = await connectV1Http(running.url);
  });
  afterAll(async () => {
    await v1?.close();
    await running?.close();
    await provider.shutdown();
    trace.disable();
  });
  beforeEach(() => exporter.reset());

  const spans = (): ReadableSpan[] => exporter.getFinishedSpans();
  const byName = (name: string): ReadableSpan[] => spans().filter((span) => span.name === name);
  /** The run span of a task, once the run ended (it ends after the outcome is decided). */
  const runSpanOf = async (taskId: string): Promise<ReadableSpan> => {
    let found: ReadableSpan | undefined;
    await pollUntil(
      async () => (found = spans().find((span) => span.name.startsWith('task ') && span.attributes['mcp_tasks.task_id'] === taskId)),
      (span) => span !== undefined,
      { what: `the run span of ${taskId}` },
    );
    return found as ReadableSpan;
  };

  /** Assert the shape every traced call has: request span under the caller's, run span linked to it, children. */
  const expectLinkedTrace = async (taskId: string, generation: string): Promise<ReadableSpan> => {
    const request = byName('tools/call traced_job').find((span) => span.attributes['mcp_tasks.task_id'] === taskId) as ReadableSpan;
    expect(request, 'a request span').toBeDefined();
    expect(request.spanContext().traceId).toBe(CALLER_TRACE);
    expect(request.parentSpanContext?.spanId).toBe(CALLER_SPAN);
    expect(request.attributes).toMatchObject({ 'mcp.tool.name': 'traced_job', 'mcp_tasks.generation': generation, 'mcp_tasks.outcome': 'task' });
    const run = await runSpanOf(taskId);
    // A root span of its own trace, linked (not parented) to the request span.
    expect(run.parentSpanContext).toBeUndefined();
    expect(run.spanContext().traceId).not.toBe(CALLER_TRACE);
    expect(run.links.map((link) => [link.context.traceId, link.context.spanId])).toEqual([[CALLER_TRACE, request.spanContext().spanId]]);
    expect(run.attributes).toMatchObject({
      'mcp.tool.name': 'traced_job',
      'mcp_tasks.generation': generation,
      'mcp_tasks.status': 'completed',
      'mcp_tasks.attempt': 1,
    });
    expect(run.status.code).not.toBe(SpanStatusCode.ERROR);
    const children = spans().filter((span) => span.parentSpanContext?.spanId === run.spanContext().spanId);
    expect(children.map((span) => span.name).sort()).toEqual(['operation demo.effect', 'step compute', 'step fetch']);
    for (const child of children) expect(child.spanContext().traceId).toBe(run.spanContext().traceId);
    expect(children.find((span) => span.name === 'operation demo.effect')?.attributes).toMatchObject({
      'mcp_tasks.status': 'confirmed',
      'mcp_tasks.operation.key': 'publish',
    });
    expect(children.find((span) => span.name === 'step fetch')?.attributes).toMatchObject({ 'mcp_tasks.replayed': false });
    return run;
  };

  it('v2 (2026-07-28): _meta.traceparent is the request span’s parent; the run span links to the request span; steps and the operation are its children', async () => {
    const created = await postModern(running.url, 'tools/call', {
      name: 'traced_job',
      arguments: {},
      _meta: { traceparent: TRACEPARENT, tracestate: 'vendor=1' },
    });
    const taskId = String(created.body.result?.taskId);
    expect(await pollModernTask(running.url, taskId)).toMatchObject({ status: 'completed' });
    await expectLinkedTrace(taskId, 'v2');
    // The task keeps the request span's context (and the caller's tracestate) for whichever worker runs it.
    const stored = (await running.store.getStep(taskId, TRACE_STEP))?.value as { traceparent: string; tracestate?: string };
    expect(stored.traceparent).toMatch(new RegExp(`^00-${CALLER_TRACE}-[0-9a-f]{16}-01$`));
    expect(stored.traceparent).not.toContain(CALLER_SPAN);
    expect(stored.tracestate).toBe('vendor=1');
  });

  it('v1 (2025-11-25, SDK 1.32.2 client): the same linked trace', async () => {
    const created = await v1.client.request(
      { method: 'tools/call', params: { name: 'traced_job', arguments: {}, _meta: { traceparent: TRACEPARENT } } },
      CreateTaskResultSchema,
      { task: {} },
    );
    await pollUntil(
      () => v1.client.experimental.tasks.getTask(created.task.taskId),
      (task) => task.status === 'completed',
      { what: 'v1 task completed' },
    );
    await expectLinkedTrace(created.task.taskId, 'v1');
  });

  it('a failed task: the run span has status error, the step it failed in too', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'broken_job', arguments: {}, _meta: { traceparent: TRACEPARENT } });
    const taskId = String(created.body.result?.taskId);
    expect(await pollModernTask(running.url, taskId)).toMatchObject({ status: 'failed' });
    const run = await runSpanOf(taskId);
    expect(run.status.code).toBe(SpanStatusCode.ERROR);
    expect(run.attributes['mcp_tasks.status']).toBe('failed');
    const step = spans().find((span) => span.parentSpanContext?.spanId === run.spanContext().spanId);
    expect(step?.name).toBe('step explode');
    expect(step?.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('without a traceparent the request span is a root and the run still links to it; an invalid traceparent is ignored, not an error', async () => {
    for (const meta of [{}, { traceparent: 'not-a-trace' }, { traceparent: `00-${'0'.repeat(32)}-${CALLER_SPAN}-01` }]) {
      exporter.reset();
      const created = await postModern(running.url, 'tools/call', { name: 'traced_job', arguments: {}, _meta: meta });
      expect(created.body.error, JSON.stringify(meta)).toBeUndefined();
      const taskId = String(created.body.result?.taskId);
      await pollModernTask(running.url, taskId);
      const run = await runSpanOf(taskId);
      const request = byName('tools/call traced_job')[0] as ReadableSpan;
      expect(request.parentSpanContext).toBeUndefined();
      expect(run.links[0]?.context.spanId).toBe(request.spanContext().spanId);
    }
  });

  it('no SDK registered: no spans, but the caller’s traceparent is stored with the task (a tracing worker elsewhere links to it); none without one', async () => {
    trace.disable();
    try {
      const tracing = await TasksTracing.load();
      const quiet = await startTasksServer({ tools, hooks: [tracing.serviceHook()], runTracer: tracing.runTracer() });
      try {
        const withParent = await postModern(quiet.url, 'tools/call', { name: 'traced_job', arguments: {}, _meta: { traceparent: TRACEPARENT } });
        const without = await postModern(quiet.url, 'tools/call', { name: 'traced_job', arguments: {} });
        for (const created of [withParent, without]) await pollModernTask(quiet.url, String(created.body.result?.taskId));
        expect((await quiet.store.getStep(String(withParent.body.result?.taskId), TRACE_STEP))?.value).toEqual({ traceparent: TRACEPARENT });
        expect(await quiet.store.getStep(String(without.body.result?.taskId), TRACE_STEP)).toBeUndefined();
        expect(spans()).toEqual([]);
      } finally {
        await quiet.close();
      }
    } finally {
      trace.setGlobalTracerProvider(provider);
    }
  });
});
