import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { cliRunner, ensureBuilt, type RunningCli } from '../cli/support.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';
import { until } from './support.js';

// Issue 15 item 4 across processes: `serve --no-worker` and `worker` on one SQLite file, each exporting over
// OTLP/HTTP (JSON) to a receiver this test runs; the worker's run span links to the API's request span.

const TOOLS = resolve(import.meta.dirname, '../fixtures/traced-tools.mjs');
const CALLER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CALLER_SPAN = 'b7ad6b7169203331';

/** One span of an OTLP JSON export, with the `service.name` of its resource. */
interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  links: Array<{ traceId: string; spanId: string }>;
  attributes: Record<string, unknown>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean };
const valueOf = (value: AnyValue): unknown => value.stringValue ?? (value.intValue === undefined ? value.boolValue : Number(value.intValue));
const attributesOf = (list: Array<{ key: string; value: AnyValue }> = []): Record<string, unknown> =>
  Object.fromEntries(list.map((entry) => [entry.key, valueOf(entry.value)]));

/** A minimal OTLP/HTTP trace receiver: decodes `ExportTraceServiceRequest` JSON posted to /v1/traces. */
function startReceiver(): Promise<{ server: Server; url: string; spans: ReceivedSpan[]; contentTypes: Set<string> }> {
  const spans: ReceivedSpan[] = [];
  const contentTypes = new Set<string>();
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces') return void response.writeHead(404).end();
      contentTypes.add(String(request.headers['content-type']));
      const exported = JSON.parse(body) as {
        resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: AnyValue }> }; scopeSpans: Array<{ spans: Array<Record<string, any>> }> }>;
      };
      for (const resourceSpans of exported.resourceSpans) {
        const service = String(attributesOf(resourceSpans.resource.attributes)['service.name']);
        for (const scope of resourceSpans.scopeSpans) {
          for (const span of scope.spans) {
            spans.push({
              service,
              traceId: span.traceId,
              spanId: span.spanId,
              ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
              name: span.name,
              links: (span.links ?? []).map((link: any) => ({ traceId: link.traceId, spanId: link.spanId })),
              attributes: attributesOf(span.attributes),
            });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolveStart) =>
    server.listen(0, '127.0.0.1', () => resolveStart({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, contentTypes })),
  );
}

describe('traces across an API process and a worker process (OTLP/HTTP)', () => {
  const temp = makeTempDir('mcp-tasks-traces-');
  const env: NodeJS.ProcessEnv = { ...process.env, OTEL_BSP_SCHEDULE_DELAY: '100' };
  delete env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const { start } = cliRunner(env);
  const shared = [
    '--store',
    join(temp.dir, 'tasks.db'),
    '--data-dir',
    join(temp.dir, 'data'),
    '--no-builtins',
    '--tools',
    TOOLS,
    '--log-level',
    'warn',
    '--root',
    temp.dir,
  ];
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let api: RunningCli;
  let worker: RunningCli;
  let url = '';

  beforeAll(async () => {
    ensureBuilt();
    receiver = await startReceiver();
    api = start(['serve', '--port', '0', '--no-worker', '--otlp-endpoint', receiver.url, '--service-name', 'tasks-api', ...shared]);
    url = `http://127.0.0.1:${(await api.stderrLine(/serving http:\/\/127\.0\.0\.1:(\d+)\/mcp/))[1]}/mcp`;
    expect((await api.stderrLine(/tracing:\s+(.*)/))[1]).toBe(`OTLP/HTTP ${receiver.url}/v1/traces`);
    worker = start(['worker', '--otlp-endpoint', receiver.url, '--service-name', 'tasks-worker', ...shared]);
    await worker.stderrLine(/worker \S+ running/);
  }, 60_000);
  afterAll(async () => {
    for (const child of [api?.child, worker?.child]) if (child && child.exitCode === null) child.kill('SIGKILL');
    receiver?.server.close();
    temp.remove();
  });

  it('the worker’s task span (its own trace) links to the API’s request span, whose parent is the caller’s _meta.traceparent; step spans are its children', async () => {
    const created = await postModern(url, 'tools/call', { name: 'traced_job', arguments: {}, _meta: { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` } });
    const taskId = String(created.body.result?.taskId);
    expect(await pollModernTask(url, taskId)).toMatchObject({ status: 'completed' });
    const runSpan = (): ReceivedSpan | undefined =>
      receiver.spans.find((span) => span.name === 'task traced_job' && span.attributes['mcp_tasks.task_id'] === taskId);
    await until('both processes to export their spans', async () => runSpan() !== undefined && receiver.spans.some((span) => span.service === 'tasks-api'));
    await until('the step spans', async () => receiver.spans.filter((span) => span.parentSpanId === runSpan()?.spanId).length === 2);

    const request = receiver.spans.find((span) => span.name === 'tools/call traced_job') as ReceivedSpan;
    expect(request).toMatchObject({ service: 'tasks-api', traceId: CALLER_TRACE, parentSpanId: CALLER_SPAN });
    expect(request.attributes).toMatchObject({ 'mcp.tool.name': 'traced_job', 'mcp_tasks.generation': 'v2', 'mcp_tasks.task_id': taskId });
    const run = runSpan() as ReceivedSpan;
    expect(run.service).toBe('tasks-worker');
    expect(run.parentSpanId).toBeUndefined();
    expect(run.traceId).not.toBe(CALLER_TRACE);
    expect(run.links).toEqual([{ traceId: CALLER_TRACE, spanId: request.spanId }]);
    expect(run.attributes).toMatchObject({ 'mcp_tasks.status': 'completed', 'mcp_tasks.generation': 'v2' });
    const steps = receiver.spans.filter((span) => span.parentSpanId === run.spanId);
    expect(steps.map((span) => span.name).sort()).toEqual(['step compute', 'step fetch']);
    expect(steps.every((span) => span.service === 'tasks-worker' && span.traceId === run.traceId)).toBe(true);
    expect([...receiver.contentTypes]).toEqual(['application/json']);
  });
});
