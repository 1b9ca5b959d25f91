/**
 * Issue 28, the limits a newcomer's review found in `serve --upstream` (2026-12-06), end to end through a real
 * `mcp-tasks serve` process in front of a small stdio MCP server built on the official SDK server
 * (test/fixtures/upstream-sizes.mjs): an answer past the SDK stdio transport's default 10 MiB read buffer; an inline
 * (`sync`) call whose client leaves, observed where the cancel lands — the upstream's own request signal.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ensureBuilt } from '../cli/support.js';
import { connectV1Http, pollUntil, TERMINAL, type V1HttpClient } from '../helpers/official-clients.js';
import { eventually } from '../helpers/run-notes.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { stdioSpec } from '../helpers/upstream-servers.js';
import { modernMeta } from '../helpers/wire.js';

const SIZES = join(import.meta.dirname, '..', 'fixtures', 'upstream-sizes.mjs');
const MIB = 1024 * 1024;

type V1Task = { taskId: string; status: string; statusMessage?: string };

async function createTask(client: V1Client, name: string, args: Record<string, unknown>): Promise<V1Task> {
  return (await client.request({ method: 'tools/call', params: { name, arguments: args } }, CreateTaskResultSchema, { task: { ttl: 120_000 } })).task as V1Task;
}

const settle = (client: V1Client, taskId: string): Promise<V1Task> =>
  pollUntil(
    () => client.experimental.tasks.getTask(taskId) as Promise<V1Task>,
    (task) => TERMINAL.includes(task.status),
    { what: `task ${taskId}` },
  );

const failureOf = (client: V1Client, taskId: string): Promise<{ code?: number; message?: string; data?: unknown } | undefined> =>
  client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema).then(
    () => undefined,
    (thrown: { code?: number; data?: unknown }) => thrown,
  );

describe('serve --upstream: a stdio answer larger than 10 MiB (issue 28)', () => {
  const temp = makeTempDir('mcp-tasks-upstream-limits-');
  let server: ServerProcess;
  let small: ServerProcess;
  let v1: V1HttpClient;
  let v1Small: V1HttpClient;

  beforeAll(async () => {
    ensureBuilt();
    [server, small] = await Promise.all([
      startServerProcess(join(temp.dir, 'data'), ['--no-builtins', '--upstream', stdioSpec('sizes', [process.execPath, SIZES])]),
      // A stored-result limit of 2 MiB: answers are read up to 3 MiB (the limit and 1 MiB of envelope).
      startServerProcess(join(temp.dir, 'small'), [
        '--no-builtins',
        '--max-result-bytes',
        String(MIB),
        '--max-stored-result-bytes',
        String(2 * MIB),
        '--upstream',
        stdioSpec('sizes', [process.execPath, SIZES]),
      ]),
    ]);
    [v1, v1Small] = await Promise.all([connectV1Http(server.url, { declareTasks: true }), connectV1Http(small.url, { declareTasks: true })]);
  }, 120_000);
  afterAll(async () => {
    await v1?.close();
    await v1Small?.close();
    await server?.stop();
    await small?.stop();
    temp.remove();
  });

  it('a 12 MiB answer is read and stored (up to the stored-result limit), and a call running beside it on the same upstream goes on', async () => {
    const beside = await createTask(v1.client, 'sizes_wait', { ms: 1500 });
    const big = await createTask(v1.client, 'sizes_big', { mib: 12 });
    const done = await settle(v1.client, big.taskId);
    expect(done, JSON.stringify(done)).toMatchObject({ status: 'completed' });
    // 12 MiB is over the inline result limit (4 MiB): the task holds its first part and a link to the whole.
    const result = await v1.client.experimental.tasks.getTaskResult(big.taskId, CallToolResultSchema);
    const link = result.content.find((block) => block.type === 'resource_link') as { size?: number } | undefined;
    expect(link?.size).toBeGreaterThanOrEqual(12 * MIB);
    expect(await settle(v1.client, beside.taskId)).toMatchObject({ status: 'completed' });
    const waited = await v1.client.experimental.tasks.getTaskResult(beside.taskId, CallToolResultSchema);
    expect(waited.content).toEqual([{ type: 'text', text: 'waited 1500 ms' }]);
  });

  it('an answer past the read limit fails with one line saying so (upstream_down), and the upstream is restarted for the next call', async () => {
    const big = await createTask(v1Small.client, 'sizes_big', { mib: 4 });
    const failed = await settle(v1Small.client, big.taskId);
    expect(failed.status).toBe('failed');
    expect(failed.statusMessage).toBe(
      `Upstream sizes stopped while big ran (an answer larger than ${3 * MIB} bytes, more than a task may store, closed the connection); it may have done part of the work, so the call is not sent again`,
    );
    expect(await failureOf(v1Small.client, big.taskId)).toMatchObject({ code: -32603, data: { reason: 'upstream_down', upstream: 'sizes' } });
    // Between the stored-result limit and the read limit: read, then refused by the result size rules of every task.
    const over = await createTask(v1Small.client, 'sizes_big', { mib: 2.5 });
    expect(await settle(v1Small.client, over.taskId)).toMatchObject({ status: 'failed' });
    expect(await failureOf(v1Small.client, over.taskId)).toMatchObject({ code: -32603, data: { reason: 'result_too_large' } });
  });
});

describe('serve --upstream: an inline (sync) call whose client leaves (issue 28)', () => {
  const temp = makeTempDir('mcp-tasks-upstream-inline-');
  const events = join(temp.dir, 'events.jsonl');
  let server: ServerProcess;
  let v1: V1HttpClient;

  /** What the upstream's `hang` tool saw for `label`: started, then aborted when its request was cancelled. */
  const seen = (label: string): string[] =>
    existsSync(events)
      ? readFileSync(events, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { event: string; label: string })
          .filter((entry) => entry.label === label)
          .map((entry) => entry.event)
      : [];

  beforeAll(async () => {
    ensureBuilt();
    const config = join(temp.dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        upstreams: [stdioSpec('sizes', [process.execPath, SIZES, '--events', events])],
        upstreamTools: { sizes_hang: { execution: 'sync' } },
        limits: { runtimeLimitMs: 4000 },
      }),
    );
    server = await startServerProcess(join(temp.dir, 'data'), ['--no-builtins', '--config', config]);
    v1 = await connectV1Http(server.url, { declareTasks: true });
  }, 120_000);
  afterAll(async () => {
    await v1?.close();
    await server?.stop();
    temp.remove();
  });

  it('R41 a client that cancels its inline call (notifications/cancelled): the upstream request is cancelled too', async () => {
    const controller = new AbortController();
    const call = v1.client.callTool({ name: 'sizes_hang', arguments: { label: 'cancelled' } }, undefined, { signal: controller.signal }).catch(() => 'aborted');
    await eventually('the upstream to start', async () => (seen('cancelled').includes('started') ? true : undefined));
    controller.abort();
    expect(await call).toBe('aborted');
    await eventually('the upstream request to be aborted', async () => (seen('cancelled').includes('aborted') ? true : undefined));
  });

  /**
   * POST a `tools/call` of `sizes_hang` labelled `label` with `headers`, close the connection once the upstream has
   * started it, and wait for the upstream's own request signal to abort.
   */
  async function closeDuringCall(label: string, headers: Record<string, string>, params: Record<string, unknown> = {}): Promise<void> {
    const controller = new AbortController();
    const call = fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: `raw-${label}`, method: 'tools/call', params: { name: 'sizes_hang', arguments: { label }, ...params } }),
      signal: controller.signal,
    }).then(
      (response) => response.text(),
      () => 'closed',
    );
    await eventually('the upstream to start', async () => (seen(label).includes('started') ? true : undefined));
    controller.abort();
    expect(await call).toBe('closed');
    await eventually('the upstream request to be aborted', async () => (seen(label).includes('aborted') ? true : undefined), 3000);
  }

  it('a client whose connection closes during its inline call: the upstream request is cancelled', async () => {
    await closeDuringCall('gone', { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'sizes_hang' }, { _meta: modernMeta({}) });
  });

  it('a 2025-11-25 session whose POST stream closes during its inline call: the upstream request is cancelled', async () => {
    const sessionId = (v1.client.transport as { sessionId?: string } | undefined)?.sessionId;
    expect(sessionId).toBeTruthy();
    await closeDuringCall('session', { 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': sessionId as string });
  });

  it('an inline call is bounded by the runtime limit: past it the upstream request is cancelled and the call fails', async () => {
    const started = Date.now();
    const answer = await v1.client.callTool({ name: 'sizes_hang', arguments: { label: 'limit' } }).then(
      (result) => ({ result }),
      (error: unknown) => ({ error: error as { code?: number; message?: string; data?: unknown } }),
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(3900);
    expect(answer).toMatchObject({ error: { code: -32603, data: { reason: 'runtime_limit' } } });
    expect((answer as { error: { message: string } }).error.message).toContain('Tool sizes_hang exceeded the runtime limit of 4000 ms');
    await eventually('the upstream request to be aborted', async () => (seen('limit').includes('aborted') ? true : undefined));
  });
});

describe('serve --upstream: restart counts (issue 28)', () => {
  const temp = makeTempDir('mcp-tasks-upstream-restarts-');
  const pidFile = join(temp.dir, 'upstream.pid');
  let server: ServerProcess;

  beforeAll(async () => {
    ensureBuilt();
    server = await startServerProcess(join(temp.dir, 'data'), [
      '--no-builtins',
      '--upstream',
      stdioSpec('once', [process.execPath, SIZES, '--pid-file', pidFile, '--once', join(temp.dir, 'started')]),
    ]);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    temp.remove();
  });

  it('an upstream that dies and cannot start again: restarts counts successes only (0), failedRestarts the failed attempts, in /readyz and /metrics', async () => {
    process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
    const base = server.url.replace(/\/mcp$/, '');
    const status = await eventually('two failed restart attempts', async () => {
      const readyz = (await (await fetch(`${base}/readyz`)).json()) as { checks: { executor: { upstreams: Array<Record<string, unknown>> } } };
      const once = readyz.checks.executor.upstreams[0];
      return typeof once?.failedRestarts === 'number' && once.failedRestarts >= 2 ? once : undefined;
    });
    expect(status).toMatchObject({ name: 'once', state: 'restarting', restarts: 0 });
    expect(String(status.error)).toContain('refusing to start again');
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^mcp_tasks_upstream_restarts\{[^}]*upstream="once"[^}]*\} 0$/m);
    expect(metrics).toMatch(/^mcp_tasks_upstream_failed_restarts\{[^}]*upstream="once"[^}]*\} [2-9]\d*$/m);
  });
});
