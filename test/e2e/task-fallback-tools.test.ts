/**
 * Issue 13 item 7: task fallback tools for hosts without task support (`--task-fallback-tools`), end to end over
 * real HTTP against a real server on a real SQLite file, with real clients: the SDK 1.32.2 client declaring no
 * `capabilities.tasks` (2025-11-25 R1), `@langchain/mcp-adapters` 1.1.4 (an SDK 1.x host that never polls), raw
 * 2026-07-28 requests without the Tasks Extension.
 * - Without the flag such hosts do not see task-required tools (SDK 1.x clients refuse them locally anyway); a
 *   declaring client still sees `taskSupport: "required"` (negative control).
 * - With it they see them task-optional and without an `outputSchema`, plus `get_task_status`, `get_task_result`,
 *   `cancel_task`; a call answers at once with a text result naming the task; the fallback tools are the task
 *   operations, owner-bound and hooked like `tasks/get` / `tasks/cancel`.
 * - 2026-07-28 without the extension (Claude Code's `-p` mode, or tasks turned off): without the flag `-32021`
 *   (SEP-2663 E6) whose message says in words what to declare and the alternatives (the model reads only the
 *   message); with the flag the same fallback as 2025-era hosts (issue 27 §4).
 */
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { missingTasksExtensionMessage, TasksError } from '../../src/core/errors.js';
import { type AnyToolDefinition, defineTool, textResult } from '../../src/core/tool.js';
import { modelTextProblems } from '../../src/protocol/model-text.js';
import type { TaskOperationContext, TaskServiceHook } from '../../src/service/hooks.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { connectV1Http, rejection, type V1HttpClient } from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { postModern, postRaw, type WireResponse } from '../helpers/wire.js';

const ISSUER = 'https://issuer.test';
const TOKEN_A = 'fallback-token-alice-0123456789';
const TOKEN_B = 'fallback-token-bob-0123456789ab';
const FALLBACK_NAMES = ['get_task_status', 'get_task_result', 'cancel_task'];

/** Task-required tools: `report_job` waits `seconds` then answers; its run count is kept. */
function requiredTools(runs: Map<string, number>): AnyToolDefinition[] {
  const count = (name: string) => runs.set(name, (runs.get(name) ?? 0) + 1);
  return [
    defineTool({
      name: 'report_job',
      description: 'Builds a report (only as a task).',
      execution: 'task-required',
      idempotent: true,
      inputSchema: z.object({ seconds: z.number().min(0).max(600), title: z.string() }),
      outputSchema: z.object({ title: z.string() }),
      immediateResponse: ({ seconds, title }) => `Started the report ${title}; it takes about ${seconds} s.`,
      async run({ seconds, title }, ctx) {
        count('report_job');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, seconds * 1000);
          ctx.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve();
          });
        });
        return textResult(`Report ${title} ready`, { structuredContent: { title } });
      },
    }),
    defineTool({
      name: 'quick_echo',
      description: 'Echoes inline or as a task.',
      execution: 'task-optional',
      idempotent: true,
      inputSchema: z.object({ text: z.string() }),
      async run({ text }) {
        return textResult(text);
      },
    }),
  ];
}

/** A raw 2025-era session negotiated at `protocolVersion` (for revisions the SDK clients do not offer). */
async function legacySession(
  url: string,
  protocolVersion: string,
  token?: string,
): Promise<{ post(method: string, params: Record<string, unknown>): Promise<WireResponse> }> {
  const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const init = await postRaw(
    url,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw-legacy', version: '1.0.0' } },
    }),
    auth,
  );
  expect(init.body.result?.protocolVersion).toBe(protocolVersion);
  const headers = { ...auth, 'mcp-session-id': String(init.headers.get('mcp-session-id')), 'mcp-protocol-version': protocolVersion };
  await postRaw(url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers);
  let id = 1;
  return { post: (method, params) => postRaw(url, JSON.stringify({ jsonrpc: '2.0', id: (id += 1), method, params }), headers) };
}

const text = (result: unknown): string => String(((result as { content?: Array<{ text?: string }> }).content ?? [])[0]?.text);
/** What a LangChain MCP tool returned, as text: a string, or (with structuredContent) a text block. */
const said = (value: unknown): string => (typeof value === 'string' ? value : String((value as { text?: unknown }).text));
const structured = (result: unknown): Record<string, unknown> => (result as { structuredContent: Record<string, unknown> }).structuredContent;

describe('task fallback tools (issue 13 item 7)', () => {
  const runs = new Map<string, number>();
  const refuseGets = { on: false };
  /** Stands for the scope check of the auth stage: refuses `get` (tasks:read) while on. */
  const hook: TaskServiceHook = {
    around<T>(context: TaskOperationContext, next: () => Promise<T>): Promise<T> {
      if (refuseGets.on && context.operation === 'get') throw new TasksError(-32003, 'Insufficient scope: tasks:read');
      return next();
    },
  };
  let plain: RunningTasksServer;
  let fallback: RunningTasksServer;

  beforeAll(async () => {
    const auth = new TokenFileAuthenticator({
      tokens: [
        { token: TOKEN_A, issuer: ISSUER, subject: 'alice', tenant: 'acme' },
        { token: TOKEN_B, issuer: ISSUER, subject: 'bob', tenant: 'acme' },
      ],
    });
    plain = await startTasksServer({ tools: requiredTools(runs), limits: { pollIntervalMs: 200 } });
    fallback = await startTasksServer({ tools: requiredTools(runs), auth, hooks: [hook], taskFallbackTools: true, limits: { pollIntervalMs: 200 } });
  });
  afterAll(async () => {
    await plain?.close();
    await fallback?.close();
  });

  const listed = async (client: V1HttpClient) => Object.fromEntries((await client.client.listTools()).tools.map((tool) => [tool.name, tool]));
  const call = (client: V1HttpClient, name: string, args: Record<string, unknown>) => client.client.callTool({ name, arguments: args });

  describe('without --task-fallback-tools', () => {
    it('R10 a 2025-11-25 client sees task-required tools as "required" whatever it declares (the Inspector CLI and the SDK tasks API declare no capabilities.tasks); without task: -32601; no fallback tools', async () => {
      const host = await connectV1Http(plain.url);
      try {
        const tools = await listed(host);
        expect(Object.keys(tools)).toEqual(['report_job', 'quick_echo']);
        expect(tools.report_job?.execution).toEqual({ taskSupport: 'required' });
        const refused = await rejection(
          host.client.request({ method: 'tools/call', params: { name: 'report_job', arguments: { seconds: 0, title: 'x' } } }, CallToolResultSchema),
        );
        expect(refused.code).toBe(-32601);
      } finally {
        await host.close();
      }
    });

    it('a session before 2025-11-25 (2025-06-18, no tasks) does not see task-required tools; calling one by name is an isError result', async () => {
      const session = await legacySession(plain.url, '2025-06-18');
      const list = await session.post('tools/list', {});
      expect((list.body.result?.tools as Array<{ name: string }>).map((tool) => tool.name)).toEqual(['quick_echo']);
      const called = await session.post('tools/call', { name: 'report_job', arguments: { seconds: 0, title: 'x' } });
      expect(called.body.result).toMatchObject({ isError: true });
    });

    it('R1/R8 negative control: a client declaring capabilities.tasks sees the tool with taskSupport "required" and no fallback tools', async () => {
      const requestor = await connectV1Http(plain.url, { declareTasks: true });
      try {
        const tools = await listed(requestor);
        expect(tools.report_job?.execution).toEqual({ taskSupport: 'required' });
        expect(Object.keys(tools).filter((name) => FALLBACK_NAMES.includes(name))).toEqual([]);
      } finally {
        await requestor.close();
      }
    });

    it('E6 2026-07-28 without the extension: the task-required tool is left out of tools/list and its call keeps -32021 (HTTP 400)', async () => {
      const list = await postModern(plain.url, 'tools/list', {}, { capabilities: {} });
      expect((list.body.result?.tools as Array<{ name: string }>).map((tool) => tool.name)).toEqual(['quick_echo']);
      const refused = await postModern(plain.url, 'tools/call', { name: 'report_job', arguments: { seconds: 0, title: 'x' } }, { capabilities: {} });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } } });
    });

    it('issue 27 §4 B4 E6 E41: every -32021 message says in one model-safe line what the client must declare and the alternatives', async () => {
      const refusals = [
        await postModern(plain.url, 'tools/call', { name: 'report_job', arguments: { seconds: 0, title: 'x' } }, { capabilities: {} }),
        await postModern(plain.url, 'tasks/get', { taskId: 'x'.repeat(22) }, { capabilities: {} }),
        await postModern(plain.url, 'tasks/cancel', { taskId: 'x'.repeat(22) }, { capabilities: {} }),
      ];
      const messages = refusals.map((refused) => String(refused.body.error?.message));
      expect(messages[0]).toBe(missingTasksExtensionMessage({ tool: 'report_job' }));
      expect(messages[1]).toBe(missingTasksExtensionMessage({ method: 'tasks/get' }));
      for (const message of messages) {
        expect(modelTextProblems(message), message).toEqual([]);
        expect(message).toMatch(/^Missing required client capability: /);
        // What to declare, where, and what else would work.
        expect(message).toContain('"io.modelcontextprotocol/tasks" in the extensions of _meta "io.modelcontextprotocol/clientCapabilities"');
        expect(message).toMatch(/Alternatives: .*2025-11-25.*get_task_status/);
      }
      expect(messages[0]).toContain('--task-fallback-tools');
    });
  });

  describe('with --task-fallback-tools', () => {
    let alice: V1HttpClient;
    let bob: V1HttpClient;
    beforeAll(async () => {
      alice = await connectV1Http(fallback.url, { token: TOKEN_A });
      bob = await connectV1Http(fallback.url, { token: TOKEN_B });
    });
    afterAll(async () => {
      await alice?.close();
      await bob?.close();
    });

    it('R1/R9 a host without task support sees the task-required tool task-optional without outputSchema, then the three fallback tools (sync)', async () => {
      const tools = await listed(alice);
      expect(Object.keys(tools)).toEqual(['report_job', 'quick_echo', ...FALLBACK_NAMES]);
      expect(tools.report_job?.execution).toEqual({ taskSupport: 'optional' });
      expect(tools.report_job?.outputSchema).toBeUndefined();
      for (const name of FALLBACK_NAMES) {
        expect(tools[name]?.execution).toEqual({ taskSupport: 'forbidden' });
        expect(tools[name]?.inputSchema).toMatchObject({ properties: { taskId: { type: 'string' } }, required: ['taskId'] });
      }
    });

    it('R15 a call answers at once with text naming the task and the fallback tools; get_task_status, then get_task_result give its result; one run', async () => {
      const before = runs.get('report_job') ?? 0;
      const started = await call(alice, 'report_job', { seconds: 0.4, title: 'Q3' });
      const taskId = String(structured(started).taskId);
      expect(structured(started)).toMatchObject({ taskId, status: 'working' });
      expect(text(started)).toContain('Started the report Q3; it takes about 0.4 s.');
      for (const name of FALLBACK_NAMES) expect(text(started)).toContain(`${name} {"taskId":"${taskId}"}`);
      expect(started.isError).toBeUndefined();

      const early = await call(alice, 'get_task_result', { taskId });
      expect(early.isError).toBeUndefined();
      expect(text(early)).toContain('has not finished yet');
      const status = await call(alice, 'get_task_status', { taskId });
      expect(structured(status)).toMatchObject({ taskId, status: expect.stringMatching(/working|completed/) });

      let result = early;
      const deadline = Date.now() + 10_000;
      while (text(result).includes('has not finished yet') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        result = await call(alice, 'get_task_result', { taskId });
      }
      expect(result.content).toEqual([{ type: 'text', text: 'Report Q3 ready' }]);
      expect(result.structuredContent).toEqual({ title: 'Q3' });
      expect(structured(await call(alice, 'get_task_status', { taskId }))).toMatchObject({ status: 'completed' });
      expect(runs.get('report_job')).toBe(before + 1);
    });

    it('R41 cancel_task cancels a running task; a second cancel_task says it had already ended; get_task_result says cancelled', async () => {
      const started = await call(alice, 'report_job', { seconds: 60, title: 'long' });
      const taskId = String(structured(started).taskId);
      const cancelled = await call(alice, 'cancel_task', { taskId });
      expect(text(cancelled)).toBe(`Task ${taskId} is cancelled.`);
      expect(structured(cancelled)).toMatchObject({ status: 'cancelled' });
      expect(text(await call(alice, 'cancel_task', { taskId }))).toContain('had already ended: cancelled');
      const result = await call(alice, 'get_task_result', { taskId });
      expect(result.isError).toBe(true);
      expect(text(result)).toContain('was cancelled');
    });

    it('R48/R49 the fallback tools are owner-bound: another owner gets "Task not found" for every operation and cannot cancel', async () => {
      const started = await call(alice, 'report_job', { seconds: 60, title: 'private' });
      const taskId = String(structured(started).taskId);
      for (const name of FALLBACK_NAMES) {
        const answer = await call(bob, name, { taskId });
        expect(answer).toMatchObject({ isError: true, content: [{ type: 'text', text: 'Failed to retrieve task: Task not found' }] });
      }
      // Negative control: the owner still sees it working (bob's cancel did nothing), then cancels it.
      expect(structured(await call(alice, 'get_task_status', { taskId }))).toMatchObject({ status: 'working' });
      expect(text(await call(alice, 'cancel_task', { taskId }))).toBe(`Task ${taskId} is cancelled.`);
      // An unknown id answers exactly like a foreign one.
      expect(text(await call(alice, 'get_task_status', { taskId: 'Zz9Yy8Xx7Ww6Vv5Uu4Tt3S' }))).toBe('Failed to retrieve task: Task not found');
    });

    it('hooks see get_task_status as the get operation (where the auth stage checks tasks:read): a refusal reaches the host as that error', async () => {
      const started = await call(alice, 'report_job', { seconds: 0, title: 'scoped' });
      const taskId = String(structured(started).taskId);
      refuseGets.on = true;
      try {
        expect(await rejection(call(alice, 'get_task_status', { taskId }))).toMatchObject({ code: -32003 });
        expect(await rejection(call(alice, 'get_task_result', { taskId }))).toMatchObject({ code: -32003 });
      } finally {
        refuseGets.on = false;
      }
      expect(structured(await call(alice, 'get_task_status', { taskId }))).toMatchObject({ taskId });
    });

    it('SEP-1303 a fallback tool call with a bad taskId is an isError tool result, and a task param on it is -32601 (R8)', async () => {
      const bad = await call(alice, 'get_task_status', {});
      expect(bad.isError).toBe(true);
      expect(text(bad)).toContain('Invalid arguments for tool get_task_status');
      const withTask = await rejection(
        alice.client.request({ method: 'tools/call', params: { name: 'get_task_status', arguments: { taskId: 'x' } } }, CreateTaskResultSchema, { task: {} }),
      );
      expect(withTask.code).toBe(-32601);
    });

    it('a session before 2025-11-25 (2025-06-18) gets the fallback path too: the task-required tool answers with a task its fallback tools follow', async () => {
      const session = await legacySession(fallback.url, '2025-06-18', TOKEN_A);
      const list = await session.post('tools/list', {});
      const tools = list.body.result?.tools as Array<{ name: string; execution?: unknown }>;
      expect(tools.map((tool) => tool.name)).toEqual(['report_job', 'quick_echo', ...FALLBACK_NAMES]);
      expect(tools[0]?.execution).toBeUndefined(); // no execution field before 2025-11-25
      const started = await session.post('tools/call', { name: 'report_job', arguments: { seconds: 0, title: 'old' } });
      const taskId = String(structured(started.body.result).taskId);
      let result: Record<string, unknown> | undefined;
      for (let attempt = 0; attempt < 100; attempt += 1) {
        result = (await session.post('tools/call', { name: 'get_task_result', arguments: { taskId } })).body.result;
        if (!text(result).includes('has not finished yet')) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(text(result)).toBe('Report old ready');
    });

    it('R1 negative control: a client declaring capabilities.tasks gets no fallback tools (unknown tool -32602) and taskSupport "required"', async () => {
      const requestor = await connectV1Http(fallback.url, { token: TOKEN_A, declareTasks: true });
      try {
        const tools = await listed(requestor);
        expect(tools.report_job?.execution).toEqual({ taskSupport: 'required' });
        expect(Object.keys(tools).filter((name) => FALLBACK_NAMES.includes(name))).toEqual([]);
        expect(await rejection(call(requestor, 'get_task_status', { taskId: 'x' }))).toMatchObject({ code: -32602 });
      } finally {
        await requestor.close();
      }
    });

    it('issue 27 §4: a 2026-07-28 request without the extension sees the task-required tool task-optional plus the fallback tools; its call answers with a task the fallback tools follow (owner-bound, one run)', async () => {
      const headers = { authorization: `Bearer ${TOKEN_A}` };
      const list = await postModern(fallback.url, 'tools/list', {}, { capabilities: {}, headers });
      const tools = list.body.result?.tools as Array<{ name: string; execution?: unknown; outputSchema?: unknown }>;
      expect(tools.map((tool) => tool.name)).toEqual(['report_job', 'quick_echo', ...FALLBACK_NAMES]);
      expect(tools[0]?.outputSchema).toBeUndefined();
      const before = runs.get('report_job') ?? 0;
      const started = await postModern(
        fallback.url,
        'tools/call',
        { name: 'report_job', arguments: { seconds: 0.2, title: 'modern' } },
        { capabilities: {}, headers },
      );
      expect(started.status).toBe(200);
      expect(started.body.error).toBeUndefined();
      const answer = started.body.result as Record<string, unknown>;
      expect(answer.resultType).not.toBe('task');
      const taskId = String(structured(answer).taskId);
      expect(text(answer)).toContain('Started the report modern; it takes about 0.2 s.');
      expect(text(answer)).toContain(`get_task_result {"taskId":"${taskId}"}`);
      // Claude Code gives its model structuredContent instead of the text: the instructions are there too.
      expect(structured(answer).message).toBe(text(answer));
      // Another owner cannot follow it.
      const foreign = await postModern(fallback.url, 'tools/call', { name: 'get_task_status', arguments: { taskId } }, { capabilities: {}, token: TOKEN_B });
      expect(foreign.body.result).toMatchObject({ isError: true });
      let result: Record<string, unknown> | undefined;
      for (let attempt = 0; attempt < 100; attempt += 1) {
        result = (await postModern(fallback.url, 'tools/call', { name: 'get_task_result', arguments: { taskId } }, { capabilities: {}, headers })).body.result;
        if (!text(result).includes('has not finished yet')) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(text(result)).toBe('Report modern ready');
      expect(runs.get('report_job')).toBe(before + 1);
      // Negative control: the same request declaring the extension gets a task (E8), and no fallback tools.
      const declared = await postModern(fallback.url, 'tools/call', { name: 'report_job', arguments: { seconds: 0, title: 'declared' } }, { headers });
      expect(declared.body.result).toMatchObject({ resultType: 'task' });
      const declaredList = await postModern(fallback.url, 'tools/list', {}, { headers });
      expect((declaredList.body.result?.tools as Array<{ name: string }>).map((tool) => tool.name)).toEqual(['report_job', 'quick_echo']);
    });
  });

  describe('@langchain/mcp-adapters 1.1.4 takes the fallback path', () => {
    let open: RunningTasksServer;
    let proxy: FaultProxy;
    beforeAll(async () => {
      open = await startTasksServer({ tools: requiredTools(runs), taskFallbackTools: true, limits: { pollIntervalMs: 200 } });
      proxy = await FaultProxy.start(open.url); // no faults armed: it counts what reaches the server
    });
    afterAll(async () => {
      await proxy?.close();
      await open?.close();
    });

    it('the task-required tool answers with a task id; the agent follows it through get_task_status / get_task_result; one tools/call per step, no tasks/* request, one run', async () => {
      const client = new MultiServerMCPClient({ mcpServers: { tasks: { transport: 'http', url: proxy.url } }, throwOnLoadError: true });
      try {
        const tools = new Map((await client.getTools()).map((tool) => [tool.name.replace(/^.*__/, ''), tool]));
        expect([...tools.keys()].sort()).toEqual(['cancel_task', 'get_task_result', 'get_task_status', 'quick_echo', 'report_job']);
        const before = runs.get('report_job') ?? 0;
        const calls = proxy.forwarded('tools/call');

        const started = said(await tools.get('report_job')?.invoke({ seconds: 0.3, title: 'agent' }));
        const taskId = /Started as task (\S+) /.exec(started)?.[1];
        expect(taskId, started).toEqual(expect.any(String));
        expect(started).toContain('Started the report agent; it takes about 0.3 s.');
        expect(started).toContain(`get_task_result {"taskId":"${taskId}"}`);

        expect(said(await tools.get('get_task_status')?.invoke({ taskId }))).toContain(`Task ${taskId} is`);
        let result = '';
        for (let attempt = 0; attempt < 100; attempt += 1) {
          result = said(await tools.get('get_task_result')?.invoke({ taskId }));
          if (!result.includes('has not finished yet')) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect(result).toBe('Report agent ready');
        expect(runs.get('report_job')).toBe(before + 1);
        expect(proxy.forwarded('tools/call')).toBeGreaterThanOrEqual(calls + 3);
        expect(proxy.forwarded('tasks/get') + proxy.forwarded('tasks/result')).toBe(0);
      } finally {
        await client.close();
      }
    });
  });
});
