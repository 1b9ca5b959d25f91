import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import { McpServer as LegacyMcpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport as LegacyHttpTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { connectTasksClient, TaskNotFoundError, type TasksClient, TasksConnectionError, TasksProtocolError } from '../../src/client/index.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { countingTools, RequestLog } from './support.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const authenticator = new TokenFileAuthenticator({
  tokens: [
    { token: ALICE, issuer: 'test', subject: 'alice', tenant: 't' },
    { token: BOB, issuer: 'test', subject: 'bob', tenant: 't' },
  ],
});

describe('connecting: negotiation, capabilities, credentials', () => {
  const temp = makeTempDir('mcp-tasks-connection-');
  const journal = join(temp.dir, 'tasks.json');
  let open: RunningTasksServer;
  let secured: RunningTasksServer;

  beforeAll(async () => {
    open = await startTasksServer({ tools: countingTools().tools });
    secured = await startTasksServer({ tools: countingTools().tools, auth: authenticator });
  });
  afterAll(async () => {
    await open.close();
    await secured.close();
    temp.remove();
  });

  it('auto probes 2026-07-28 first and picks the Tasks Extension when the server advertises it', async () => {
    const log = new RequestLog();
    const client = await connectTasksClient({ url: open.url, journal: false, fetch: log.fetch });
    expect([client.protocolVersion, client.generation, client.journal]).toEqual(['2026-07-28', 'v2', undefined]);
    expect(log.sent.map((entry) => entry.method)).toEqual(['server/discover']);
    // Every later request carries the extension in its _meta envelope and the SEP-2243 headers.
    const created = await client.callTool('slow_compute', { seconds: 0 });
    if (created.kind !== 'task') throw new Error('expected a task');
    await client.getTask(created.taskId);
    const get = log.sent.find((entry) => entry.method === 'tasks/get');
    expect(get?.headers.get('mcp-name')).toBe(created.taskId);
    expect(get?.headers.get('mcp-protocol-version')).toBe('2026-07-28');
    const call = log.sent.find((entry) => entry.method === 'tools/call');
    expect([call?.headers.get('mcp-method'), call?.headers.get('mcp-name')]).toEqual(['tools/call', 'slow_compute']);
    await client.close();
  });

  it('encodes a non-ASCII tool name in Mcp-Name (SEP-2243 base64 form) so the server judges the name, not the header', async () => {
    const log = new RequestLog();
    const client = await connectTasksClient({ url: open.url, journal: false, fetch: log.fetch });
    const error = await client.callTool('grüße').catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: -32602 }); // unknown tool, not -32020 header mismatch
    expect(log.sent.find((entry) => entry.method === 'tools/call')?.headers.get('mcp-name')).toBe(`=?base64?${Buffer.from('grüße').toString('base64')}?=`);
    await client.close();
  });

  it('an already aborted signal stops callTool before anything is sent', async () => {
    const log = new RequestLog();
    const client = await connectTasksClient({ url: open.url, journal: false, fetch: log.fetch });
    await expect(client.callTool('slow_compute', { seconds: 0 }, { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
    expect(log.count('tools/call')).toBe(0);
    await client.close();
  });

  it('the manifest is built once per connection, and afresh after a new server/discover (never reused by server name)', async () => {
    const log = new RequestLog();
    const client = await connectTasksClient({ url: open.url, journal: false, fetch: log.fetch });
    const first = await client.manifest();
    expect(await client.manifest()).toBe(first);
    expect(log.count('tools/list')).toBe(1);
    expect(first).toMatchObject({ generation: 'v2', server: { name: 'mcp-tasks' }, session: { kind: 'discover' } });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const refreshed = await client.refreshManifest();
    expect([log.count('server/discover'), log.count('tools/list')]).toEqual([2, 2]);
    expect(Date.parse(refreshed.session.at)).toBeGreaterThan(Date.parse(first.session.at));
    expect(refreshed.capabilitiesDigest).toBe(first.capabilitiesDigest);
    // Another connection to the same server gets its own manifest, with its own session evidence.
    const legacy = await connectTasksClient({ url: open.url, protocol: '2025-11-25', journal: false });
    const v1 = await legacy.manifest();
    expect(v1.session).toMatchObject({ kind: 'initialize', sessionId: expect.any(String) });
    expect(v1.capabilitiesDigest).not.toBe(first.capabilitiesDigest);
    await legacy.close();
    await client.close();
  });

  it('a 2025-11-25 pin runs initialize and reads the v1 capabilities', async () => {
    const log = new RequestLog();
    const client = await connectTasksClient({ url: open.url, protocol: '2025-11-25', journal: false, fetch: log.fetch });
    expect([client.protocolVersion, client.generation]).toEqual(['2025-11-25', 'v1']);
    expect(log.sent[0]?.method).toBe('initialize');
    await client.close();
  });

  it('against a 2025-only server without tasks (SDK 1.x), auto falls back to initialize and runs tools inline', async () => {
    const legacy = createServer(async (request, response) => {
      const server = new LegacyMcpServer({ name: 'legacy-only', version: '1.0.0' });
      server.registerTool('greet', { inputSchema: { name: z.string() } }, async ({ name }) => ({ content: [{ type: 'text', text: `Hi ${name}` }] }));
      const transport = new LegacyHttpTransport({ sessionIdGenerator: undefined });
      response.on('close', () => void transport.close());
      await server.connect(transport);
      await transport.handleRequest(request, response);
    });
    await new Promise<void>((resolve) => legacy.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(legacy.address() as AddressInfo).port}/mcp`;
    try {
      const client = await connectTasksClient({ url, journal: false });
      expect([client.protocolVersion, client.generation, client.taskCapabilities]).toEqual(['2025-11-25', null, { cancel: false, list: false }]);
      await expect(client.callTool('greet', { name: 'old' })).resolves.toMatchObject({
        kind: 'result',
        route: 'sync',
        result: { content: [{ type: 'text', text: 'Hi old' }] },
      });
      await expect(client.getTask('x')).rejects.toMatchObject({ code: -32601 });
      await client.close();
      const pinned = await connectTasksClient({ url, protocol: '2026-07-28', journal: false }).catch((caught: unknown) => caught);
      expect(pinned).toBeInstanceOf(TasksProtocolError);
    } finally {
      await new Promise<void>((resolve) => legacy.close(() => resolve()));
    }
  });

  it('an unreachable endpoint is a retryable TasksConnectionError naming the cause', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    for (const protocol of ['auto', '2025-11-25', '2026-07-28'] as const) {
      const error = await connectTasksClient({ url: `http://127.0.0.1:${port}/mcp`, protocol, journal: false }).catch((caught: unknown) => caught);
      expect(error, protocol).toBeInstanceOf(TasksConnectionError);
      expect((error as Error).message, protocol).toMatch(/ECONNREFUSED/);
    }
  });

  it('a rejected token is a TasksConnectionError with HTTP 401 that is not retryable', async () => {
    for (const protocol of ['auto', '2025-11-25'] as const) {
      const error = await connectTasksClient({ url: secured.url, protocol, token: 'wrong-token-0123456789', journal: false }).catch(
        (caught: unknown) => caught,
      );
      expect(error, protocol).toBeInstanceOf(TasksConnectionError);
      expect(error, protocol).toMatchObject({ httpStatus: 401, retryable: false });
    }
  });

  describe('with authentication', () => {
    let alice: TasksClient;
    let bob: TasksClient;
    beforeAll(async () => {
      alice = await connectTasksClient({ url: secured.url, protocol: '2025-11-25', token: ALICE, journal });
      bob = await connectTasksClient({ url: secured.url, protocol: '2025-11-25', token: BOB, journal: false });
    });
    afterAll(async () => {
      await alice.close();
      await bob.close();
    });

    it('v1 offers tasks/list to an authenticated requestor and lists only its own tasks', async () => {
      expect(alice.taskCapabilities).toEqual({ cancel: true, list: true });
      const created = await alice.callTool('slow_compute', { seconds: 30 });
      if (created.kind !== 'task') throw new Error('expected a task');
      expect((await alice.listTasks()).tasks.map((task) => task.taskId)).toContain(created.taskId);
      expect((await bob.listTasks()).tasks.map((task) => task.taskId)).not.toContain(created.taskId);
      await expect(bob.getTask(created.taskId)).rejects.toBeInstanceOf(TaskNotFoundError);
      await alice.cancelTask(created.taskId);
    });

    it('v2 has no tasks/list: the client refuses before sending (-32601)', async () => {
      const modern = await connectTasksClient({ url: secured.url, protocol: '2026-07-28', token: ALICE, journal: false });
      const error = await modern.listTasks().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(TasksProtocolError);
      expect((error as TasksProtocolError).code).toBe(-32601);
      await modern.close();
    });
  });
});
