import { request as httpRequest } from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TasksError } from '../../src/core/errors.js';
import { defineTool } from '../../src/core/tool.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern, postRaw } from '../helpers/wire.js';

describe('2026-07-28 Tasks Extension over HTTP (exact wire)', () => {
  let running: RunningTasksServer;
  beforeAll(async () => {
    const crashing = defineTool({
      name: 'crashing_job',
      description: 'throws a plain Error carrying a secret',
      execution: 'task-optional',
      inputSchema: z.object({}),
      async run() {
        throw new Error('db password hunter2 rejected');
      },
    });
    const coded = defineTool({
      name: 'coded_job',
      description: 'throws errors that look coded but are not protocol errors, or use an undefined reserved code',
      execution: 'task-optional',
      inputSchema: z.object({ kind: z.enum(['http', 'reserved', 'bigint']) }),
      async run({ kind }) {
        if (kind === 'http') throw Object.assign(new Error('upstream said 500 with password=hunter2'), { code: 500 });
        if (kind === 'reserved') throw new TasksError(-32050, 'made-up reserved code');
        return { content: [], structuredContent: { big: 10n as unknown as number } };
      },
    });
    running = await startTasksServer({ tools: [...conformanceFixtureTools(), crashing, coded] });
  });
  afterAll(async () => {
    await running.close();
  });

  it('C-BASE-06/C-BASE-07 server/discover advertises the extension and no legacy tasks capability', async () => {
    const { status, body } = await postModern(running.url, 'server/discover');
    expect(status).toBe(200);
    const result = body.result as Record<string, any>;
    expect(result.resultType).toBe('complete');
    expect(result.supportedVersions).toContain('2026-07-28');
    expect(result.capabilities.extensions['io.modelcontextprotocol/tasks']).toEqual({});
    expect(result.capabilities.tasks).toBeUndefined();
  });

  it('E8/E14 a declaring tools/call returns a flat CreateTaskResult that tasks/get can read at once', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0.2 } });
    expect(created.status).toBe(200);
    const result = created.body.result as Record<string, unknown>;
    expect(result).toMatchObject({ resultType: 'task', status: 'working' });
    expect(Object.keys(result).sort()).toEqual(expect.arrayContaining(['taskId', 'createdAt', 'lastUpdatedAt', 'ttlMs', 'pollIntervalMs']));
    for (const forbidden of ['content', 'task', 'result', 'error', 'inputRequests', 'ttl', 'pollInterval']) expect(result).not.toHaveProperty(forbidden);
    expect(result.taskId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const got = await postModern(running.url, 'tasks/get', { taskId: result.taskId });
    expect(got.status).toBe(200);
    expect(got.body.result).toMatchObject({ resultType: 'complete', taskId: result.taskId });
  });

  it('E9/E19 a completed task carries its result inline with resultType "complete"', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0.05, label: 'x' } });
    const taskId = String(created.body.result?.taskId);
    const done = await pollModernTask(running.url, taskId);
    expect(done.status).toBe('completed');
    expect(done.resultType).toBe('complete');
    expect(done.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'Computed x after 0.05s' }] });
    expect(done).not.toHaveProperty('error');
  });

  it('E13 a tool result with isError ends completed, never failed', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'failing_job', arguments: {} });
    const done = await pollModernTask(running.url, String(created.body.result?.taskId));
    expect(done.status).toBe('completed');
    expect(done.result).toMatchObject({ isError: true });
  });

  it('E13 a thrown protocol error ends failed with the error inline and no result', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'protocol_error_job', arguments: {} });
    const done = await pollModernTask(running.url, String(created.body.result?.taskId));
    expect(done.status).toBe('failed');
    expect(done.error).toEqual({ code: -32603, message: 'Simulated protocol error: upstream unavailable' });
    expect(done).not.toHaveProperty('result');
    expect(done.statusMessage).toBe('Simulated protocol error: upstream unavailable');
  });

  it('R46/E40 any other exception fails the task with -32603 "Internal error in tool <name>" and leaks nothing', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'crashing_job', arguments: {} });
    const done = await pollModernTask(running.url, String(created.body.result?.taskId));
    expect(done.status).toBe('failed');
    expect(done.error).toEqual({ code: -32603, message: 'Internal error in tool crashing_job' });
    expect(JSON.stringify(done)).not.toContain('hunter2');
    const inline = await postModern(running.url, 'tools/call', { name: 'crashing_job', arguments: {} }, { capabilities: {} });
    expect(inline.body.error).toEqual({ code: -32603, message: 'Internal error in tool crashing_job' });
  });

  it('base §8 only deliberate protocol errors keep their code: a library error with code 500 is internal, an undefined reserved code becomes -32603', async () => {
    const outcome = async (kind: string) =>
      pollModernTask(running.url, String((await postModern(running.url, 'tools/call', { name: 'coded_job', arguments: { kind } })).body.result?.taskId));
    expect((await outcome('http')).error).toEqual({ code: -32603, message: 'Internal error in tool coded_job' });
    expect((await outcome('reserved')).error).toEqual({ code: -32603, message: 'made-up reserved code' });
  });

  it('a result JSON cannot carry fails the task at once as an internal error (not as a crash found later)', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'coded_job', arguments: { kind: 'bigint' } });
    const done = await pollModernTask(running.url, String(created.body.result?.taskId));
    expect(done.status).toBe('failed');
    expect(done.error).toEqual({ code: -32603, message: 'Internal error in tool coded_job' });
  });

  it('E30/E31 tasks/cancel acknowledges with an empty result and the task ends cancelled', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 60 } });
    const taskId = String(created.body.result?.taskId);
    const ack = await postModern(running.url, 'tasks/cancel', { taskId });
    expect(ack.status).toBe(200);
    expect(ack.body.result).toEqual({ resultType: 'complete', _meta: expect.any(Object) });
    const after = await postModern(running.url, 'tasks/get', { taskId });
    expect(after.body.result?.status).toBe('cancelled');
    const again = await postModern(running.url, 'tasks/cancel', { taskId });
    expect(again.body.result?.resultType).toBe('complete');
    expect((await postModern(running.url, 'tasks/get', { taskId })).body.result?.status).toBe('cancelled');
  });

  it('E41 tasks/get|update|cancel without the extension get -32021 (HTTP 400) before any lookup', async () => {
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const response = await postModern(running.url, method, { taskId: 'gate-test', inputResponses: {} }, { capabilities: {} });
      expect(response.status, method).toBe(400);
      expect(response.body.error?.code).toBe(-32021);
      expect(response.body.error?.data).toEqual({ requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } });
    }
  });

  it('E6 a task-required tool called without the extension gets -32021 (HTTP 400)', async () => {
    const response = await postModern(running.url, 'tools/call', { name: 'failing_job', arguments: {} }, { capabilities: {} });
    expect(response.status).toBe(400);
    expect(response.body.error?.code).toBe(-32021);
  });

  it('E3 a task-optional tool without the extension answers inline; E17 params.task is ignored', async () => {
    const inline = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, { capabilities: {} });
    expect(inline.body.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text' }] });
    expect(inline.body.result).not.toHaveProperty('taskId');
    const greet = await postModern(running.url, 'tools/call', { name: 'greet', arguments: { name: 'sep-2243' }, task: { ttl: 60000 } });
    expect(greet.body.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'Hello, sep-2243!' }] });
  });

  it('E42 tasks/result, tasks/list and unknown tasks/* answer -32601 with HTTP 404', async () => {
    for (const [method, params] of [
      ['tasks/result', { taskId: 'x' }],
      ['tasks/list', {}],
      ['tasks/frobnicate', {}],
    ] as const) {
      const response = await postModern(running.url, method, params);
      expect(response.status, method).toBe(404);
      expect(response.body.error?.code, method).toBe(-32601);
    }
  });

  it('E38 an Mcp-Name that does not match params.taskId gets -32020 (HTTP 400)', async () => {
    const response = await postModern(running.url, 'tasks/get', { taskId: 'aaaa' }, { headers: { 'mcp-name': 'bbbb' } });
    expect(response.status).toBe(400);
    expect(response.body.error?.code).toBe(-32020);
  });

  it('E39 an unknown task id gets -32602 on get, update and cancel', async () => {
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const response = await postModern(running.url, method, { taskId: 'AAAAAAAAAAAAAAAAAAAAAA', inputResponses: {} });
      expect(response.body.error, method).toEqual({ code: -32602, message: 'Failed to retrieve task: Task not found' });
    }
  });

  it('C-V2-14 tasks/update without inputResponses gets -32602', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 60 } });
    const taskId = String(created.body.result?.taskId);
    const response = await postModern(running.url, 'tasks/update', { taskId });
    expect(response.body.error?.code).toBe(-32602);
    await postModern(running.url, 'tasks/cancel', { taskId });
  });

  it('SEP-1303 arguments failing the inputSchema are an isError tool result and create no task', async () => {
    const response = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 'soon' } });
    expect(response.status).toBe(200);
    expect(response.body.result).toMatchObject({ resultType: 'complete', isError: true });
    expect(response.body.result).not.toHaveProperty('taskId');
  });

  it('unknown tool and malformed params get -32602', async () => {
    expect((await postModern(running.url, 'tools/call', { name: 'nope', arguments: {} })).body.error?.code).toBe(-32602);
    expect((await postModern(running.url, 'tools/call', { name: 'greet', arguments: 'x' })).body.error?.code).toBe(-32602);
  });

  it('invalid JSON gets -32700 (HTTP 400) and a body over 4 MiB gets -32600 (HTTP 413); the server keeps serving', async () => {
    const parse = await postRaw(running.url, '{"jsonrpc":"2.0",', { 'mcp-protocol-version': '2026-07-28' });
    expect(parse.status).toBe(400);
    expect(parse.body.error?.code).toBe(-32700);
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'greet', arguments: { name: 'x'.repeat(4 * 1024 * 1024 + 10) } },
    });
    const tooLarge = await postRaw(running.url, big, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'greet' });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body.error?.code).toBe(-32600);
    const ok = await postModern(running.url, 'tools/call', { name: 'greet', arguments: { name: 'still here' } });
    expect(ok.body.result).toMatchObject({ content: [{ text: 'Hello, still here!' }] });
  });

  it('DNS-rebinding protection: a foreign Host header is refused with 403', async () => {
    const { port } = new URL(running.url);
    const status = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(
        { host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers: { host: 'evil.example', 'content-type': 'application/json' } },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        },
      );
      request.on('error', reject);
      request.end('{}');
    });
    expect(status).toBe(403);
  });
});
