import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { Client, SdkError, SdkErrorCode, SdkHttpError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { countingTools } from './support.js';

/**
 * Contract tests for the behaviours of `@modelcontextprotocol/client` 2.4.0 that `mcp-tasks/client` is built
 * around. Each test shows one seam against our real server, so an SDK upgrade that changes it fails here first.
 */

const TASKS_CAPABILITY = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

async function sdkClient(url: string, mode: 'auto' | 'legacy'): Promise<Client> {
  const client = new Client({ name: 'seam-test', version: '0' }, { capabilities: TASKS_CAPABILITY as never, versionNegotiation: { mode } });
  client.onerror = () => {};
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

describe('@modelcontextprotocol/client 2.4.0 seams', () => {
  const counting = countingTools();
  let running: RunningTasksServer;
  beforeAll(async () => {
    running = await startTasksServer({ tools: counting.tools });
  });
  afterAll(async () => {
    await running.close();
  });

  it('is the pinned version', () => {
    const pkg = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../node_modules/@modelcontextprotocol/client/package.json'), 'utf8')) as {
      version: string;
    };
    expect(pkg.version).toBe('2.4.0');
  });

  it('seam A: callTool rejects resultType "task" with UNSUPPORTED_RESULT_TYPE — after the server created the task (hence the raw tools/call)', async () => {
    const client = await sdkClient(running.url, 'auto');
    expect(client.getProtocolEra()).toBe('modern');
    const before = counting.runs.get('slow_compute') ?? 0;
    const error = await client.callTool({ name: 'slow_compute', arguments: { seconds: 0 } }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SdkError);
    expect((error as SdkError).code).toBe(SdkErrorCode.UnsupportedResultType);
    await expect.poll(() => counting.runs.get('slow_compute')).toBe(before + 1);
    await client.close();
  });

  it('seam B: request() strips the top-level resultType before the result schema runs (so DetailedTask schemas must not require it)', async () => {
    const client = await sdkClient(running.url, 'auto');
    let seen: Record<string, unknown> | undefined;
    const probe = z.looseObject({}).transform((value) => (seen = value));
    await expect(client.request({ method: 'tasks/get', params: { taskId: 'nope' } }, probe)).rejects.toMatchObject({ code: -32602 });
    const created = await fetch(running.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'slow_compute',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'slow_compute',
          arguments: { seconds: 0 },
          _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': TASKS_CAPABILITY },
        },
      }),
    }).then((response) => response.json() as Promise<{ result: { taskId: string; resultType: string } }>);
    expect(created.result.resultType).toBe('task');
    await client.request({ method: 'tasks/get', params: { taskId: created.result.taskId } }, probe);
    expect(seen).toMatchObject({ taskId: created.result.taskId });
    expect(seen).not.toHaveProperty('resultType');
    await expect(
      client.request({ method: 'tasks/get', params: { taskId: created.result.taskId } }, z.object({ resultType: z.literal('complete') })),
    ).rejects.toMatchObject({
      code: SdkErrorCode.InvalidResult,
    });
    await client.close();
  });

  it('seam C: tasks/result is refused client-side on the modern era, by a synchronous throw (not a rejected promise)', async () => {
    const client = await sdkClient(running.url, 'auto');
    expect(() => client.request({ method: 'tasks/result', params: { taskId: 'x' } }, z.looseObject({}))).toThrow(
      expect.objectContaining({ code: SdkErrorCode.MethodNotSupportedByProtocolVersion }),
    );
    await client.close();
  });

  it('seam D: a lost 2025 session surfaces as SdkHttpError 404 (the client re-initialises on it)', async () => {
    const dir = makeTempDir('mcp-tasks-seam-');
    const server = await startTasksServer({ tools: counting.tools, dbPath: resolve(dir.dir, 'tasks.db') });
    try {
      const client = await sdkClient(server.url, 'legacy');
      expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
      // Sessions outlive a process (they are in the store); one the store no longer has (pruned or deleted) is lost.
      await server.server.http.legacySessions.close();
      expect(await server.store.sessions.deleteIdleSessions(Number.MAX_SAFE_INTEGER, 100)).toBe(1);
      const error = await client.request({ method: 'tasks/get', params: { taskId: 'x' } }, z.looseObject({})).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(SdkHttpError);
      expect((error as SdkHttpError).status).toBe(404);
      await client.close();
    } finally {
      await server.close();
      dir.remove();
    }
  });

  it('seam E: setRequestHandler("elicitation/create") throws CAPABILITY_NOT_SUPPORTED unless elicitation was declared (so the session declares it)', () => {
    const bare = new Client({ name: 'seam-test', version: '0' }, { capabilities: TASKS_CAPABILITY as never });
    expect(() => bare.setRequestHandler('elicitation/create', async () => ({ action: 'cancel' }))).toThrow(
      expect.objectContaining({ code: SdkErrorCode.CapabilityNotSupported }),
    );
    const declaring = new Client({ name: 'seam-test', version: '0' }, { capabilities: { ...TASKS_CAPABILITY, elicitation: { form: {} } } as never });
    expect(() => declaring.setRequestHandler('elicitation/create', async () => ({ action: 'cancel' }))).not.toThrow();
  });

  it('seam F: a 2025 elicitation/create on tasks/result reaches the handler with our request id and related-task _meta; the SDK checks the ElicitResult shape, not requestedSchema', async () => {
    const client = new Client(
      { name: 'seam-test', version: '0' },
      { capabilities: { elicitation: { form: {} } } as never, versionNegotiation: { mode: 'legacy' } },
    );
    client.onerror = () => {};
    const seen: Array<{ id: unknown; meta: unknown }> = [];
    client.setRequestHandler('elicitation/create', async (request, context) => {
      seen.push({ id: context.mcpReq.id, meta: request.params._meta });
      // First a content of the wrong type (the SDK posts it as is; the server re-asks), then a valid one.
      return { action: 'accept', content: { confirm: seen.length === 1 ? 'yes' : true } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(running.url)));
    const created = (await client.request(
      { method: 'tools/call', params: { name: 'confirm_delete', arguments: { filename: 'f' }, task: {} } },
      z.looseObject({}),
    )) as { task: { taskId: string } };
    const { taskId } = created.task;
    let status = 'working';
    while (status === 'working') status = ((await client.request({ method: 'tasks/get', params: { taskId } }, z.looseObject({}))) as { status: string }).status;
    const result = await client.request({ method: 'tasks/result', params: { taskId } }, z.looseObject({}));
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'Deleted f' }] });
    expect(seen).toEqual([
      { id: `mcp-tasks-input/${taskId}/input-1`, meta: { 'io.modelcontextprotocol/related-task': { taskId } } },
      { id: `mcp-tasks-input/${taskId}/input-1.2`, meta: { 'io.modelcontextprotocol/related-task': { taskId } } },
    ]);
    await client.close();
  });
});
