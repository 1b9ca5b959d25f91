import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { createMcpHandler, InMemoryTransport, isLegacyRequest, type JSONRPCMessage, Server, type ServerCapabilities } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

import { withSpecErrorStatus } from '../../src/server/http/error-status.js';
import { DECLARING, modernMeta, readJsonRpc } from '../helpers/wire.js';

/**
 * Contract tests for the undocumented SDK behaviours our server relies on (issue: "a contract test per seam").
 * Each one builds the smallest bare SDK server that shows the behaviour, so an SDK upgrade that changes it fails
 * here, naming the seam, before it breaks the product in a subtler way.
 */

function installedVersion(pkg: string): string {
  return JSON.parse(readFileSync(resolve(import.meta.dirname, '../../node_modules', pkg, 'package.json'), 'utf8')).version;
}

function bareServer(era: 'legacy' | 'modern', capabilities: ServerCapabilities): Server {
  const server = new Server({ name: 'seam', version: '0' }, { capabilities });
  server.fallbackRequestHandler = async (request) => {
    if (request.method !== 'tools/call') throw Object.assign(new Error('Method not found: ' + request.method), { code: -32601 });
    if (era === 'modern') return { resultType: 'task', taskId: 't', status: 'working', createdAt: 'c', lastUpdatedAt: 'c', ttlMs: 1 } as never;
    return { task: { taskId: 't', status: 'working', createdAt: 'c', lastUpdatedAt: 'c', ttl: 1 } } as never;
  };
  server.setRequestHandler('tasks/get', { params: z.looseObject({ taskId: z.string() }) }, async ({ taskId }) => ({ resultType: 'complete', taskId }) as never);
  server.setRequestHandler('tasks/result', { params: z.looseObject({ taskId: z.string() }) }, async () => ({ content: [] }) as never);
  server.setRequestHandler('tasks/list', { params: z.looseObject({}) }, async () => ({ tasks: [] }) as never);
  server.setRequestHandler(
    'tasks/update',
    { params: z.looseObject({}) },
    async (params, context) =>
      ({
        resultType: 'complete',
        seenInParams: 'inputResponses' in params,
        lifted: context.mcpReq.inputResponses ?? null,
      }) as never,
  );
  server.setRequestHandler('tasks/cancel', { params: z.looseObject({}) }, async () => {
    throw Object.assign(new Error('Missing required client capability'), { code: -32021, data: { requiredCapabilities: DECLARING } });
  });
  return server;
}

const modernCapabilities = { tools: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } } as ServerCapabilities;
const handler = createMcpHandler(() => bareServer('modern', modernCapabilities), { legacy: 'reject' });

async function modern(method: string, params: Record<string, unknown> = {}, rewrite = false) {
  const name = method === 'tools/call' ? params.name : params.taskId;
  const request = new Request('http://localhost/mcp', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: modernMeta() } }),
  });
  const response = await handler.fetch(request);
  return readJsonRpc(rewrite ? await withSpecErrorStatus(response) : response);
}

/** Drive a legacy-era server through `initialize` over an in-memory transport; returns the InitializeResult. */
async function initializeLegacy(server: Server, protocolVersion: string): Promise<Record<string, any>> {
  const [client, serverSide] = InMemoryTransport.createLinkedPair();
  const reply = new Promise<JSONRPCMessage>((resolve) => (client.onmessage = resolve));
  await server.connect(serverSide);
  await client.start();
  await client.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'c', version: '0' } } });
  const message = (await reply) as { result: Record<string, any> };
  await client.close();
  return message.result;
}

describe('SDK seams (pinned versions)', () => {
  it('runs against the exact SDK versions these seams were verified on', () => {
    expect(installedVersion('@modelcontextprotocol/server')).toBe('2.4.0');
    expect(installedVersion('@modelcontextprotocol/client')).toBe('2.4.0');
    expect(installedVersion('@modelcontextprotocol/node')).toBe('2.1.2');
    expect(installedVersion('@modelcontextprotocol/ext-tasks')).toBe('0.2.2');
  });

  it('seam 1: a tools/call answered by fallbackRequestHandler is sent verbatim (no content key added) on the modern era', async () => {
    const { body } = await modern('tools/call', { name: 'x', arguments: {} });
    expect(body.result).toMatchObject({ resultType: 'task', taskId: 't' });
    expect(body.result).not.toHaveProperty('content');
  });

  it('seam 1: …and a nested v1 {task} result is sent verbatim on a legacy session', async () => {
    const server = bareServer('legacy', { tools: {} });
    const [client, serverSide] = InMemoryTransport.createLinkedPair();
    const replies: JSONRPCMessage[] = [];
    client.onmessage = (message) => void replies.push(message);
    await server.connect(serverSide);
    await client.start();
    await client.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '0' } },
    });
    await client.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await client.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'x', arguments: {}, task: {} } });
    await expect.poll(() => replies.length).toBe(2);
    const call = replies[1] as { result: Record<string, unknown> };
    expect(call.result).toEqual({ task: { taskId: 't', status: 'working', createdAt: 'c', lastUpdatedAt: 'c', ttl: 1 } });
    await client.close();
  });

  it('seam 2: explicit-schema tasks/get|update|cancel pass the modern era gate; tasks/result and tasks/list answer 404 -32601 even when registered', async () => {
    expect((await modern('tasks/get', { taskId: 'a' })).body.result).toMatchObject({ taskId: 'a' });
    for (const method of ['tasks/result', 'tasks/list']) {
      const response = await modern(method, { taskId: 'a' });
      expect(response.status, method).toBe(404);
      expect(response.body.error?.code, method).toBe(-32601);
    }
  });

  it('seam 3: handler errors are answered HTTP 200 except -32021 (400), so our error-status seam sets 404 for -32601', async () => {
    const raw = await modern('tools/frobnicate', {});
    expect(raw.body.error?.code).toBe(-32601);
    expect(raw.status).toBe(200);
    expect((await modern('tools/frobnicate', {}, true)).status).toBe(404);
    const capability = await modern('tasks/cancel', { taskId: 'a' });
    expect(capability.status).toBe(400);
    expect(capability.body.error).toEqual({ code: -32021, message: 'Missing required client capability', data: { requiredCapabilities: DECLARING } });
  });

  it('seam 4: the SDK lifts inputResponses out of tasks/update params into ctx.mcpReq.inputResponses', async () => {
    const { body } = await modern('tasks/update', { taskId: 'a', inputResponses: { k: { action: 'accept', content: {} }, bad: 'x' } });
    expect(body.result).toMatchObject({ seenInParams: false, lifted: { k: { action: 'accept', content: {} } } });
  });

  it('seam 5: initialize reads getCapabilities() after the negotiated version is set (our per-version capability override)', async () => {
    class Probe extends Server {
      override getCapabilities(): ServerCapabilities {
        return { ...super.getCapabilities(), experimental: { seenVersion: { v: this.getNegotiatedProtocolVersion() } } } as ServerCapabilities;
      }
    }
    const result = await initializeLegacy(new Probe({ name: 'p', version: '0' }, { capabilities: { tools: {} } }), '2025-06-18');
    expect(result.protocolVersion).toBe('2025-06-18');
    expect(result.capabilities.experimental).toEqual({ seenVersion: { v: '2025-06-18' } });
  });

  it('seam 6: isLegacyRequest routes initialize to the legacy leg and envelope requests to the modern one', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '0' } },
    };
    const discover = { jsonrpc: '2.0', id: 2, method: 'server/discover', params: { _meta: modernMeta({}) } };
    const request = (body: unknown) =>
      new Request('http://localhost/mcp', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(await isLegacyRequest(request(initialize), initialize)).toBe(true);
    expect(await isLegacyRequest(request(discover), discover)).toBe(false);
  });
});
