/**
 * Issue 10 §1 × issue 13 item 7: the task fallback tools are task operations, so the service door gives them the
 * scopes of those operations — `get_task_status` / `get_task_result` need `tasks:read` (and the task's tool scope),
 * `cancel_task` needs `tasks:cancel`. A token lacking the scope gets the unknown-task answer (an `isError` result
 * "Task not found", nothing learnt about the task) and the task is untouched; the same owner with the scope gets the
 * real answer (negative control). Real HTTP, raw 2025-11-25 session of a host without task support, token-file
 * credentials of one subject with different scopes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { ScopePolicy } from '../../src/core/scopes.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { readJsonRpc, type WireResponse } from '../helpers/wire.js';

const ISSUER = 'https://issuer.test';
const FULL = 'fallback-scope-full-0123456789abcdef';
const NO_READ = 'fallback-scope-noread-0123456789abcd';
const NO_CANCEL = 'fallback-scope-nocancel-0123456789ab';
const NO_TOOL_SCOPE = 'fallback-scope-notool-0123456789abcd';
const V1 = '2025-11-25';

const tools = [
  defineTool({
    name: 'long_report',
    description: 'Runs until cancelled (only as a task).',
    execution: 'task-required',
    inputSchema: z.object({}),
    async run(_args, ctx) {
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      return textResult('aborted');
    },
  }),
];

describe('fallback tools carry the scopes of their task operations', () => {
  let running: RunningTasksServer;
  let sessionId: string;
  let id = 1;

  const post = async (token: string, message: Record<string, unknown>): Promise<WireResponse> =>
    readJsonRpc(
      await fetch(running.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': V1,
          authorization: `Bearer ${token}`,
          ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
        },
        body: JSON.stringify(message),
      }),
    );
  const call = async (token: string, name: string, args: Record<string, unknown>) =>
    (await post(token, { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name, arguments: args } })).body.result as {
      isError?: boolean;
      content: Array<{ text: string }>;
      structuredContent?: Record<string, unknown>;
    };

  beforeAll(async () => {
    const entry = (token: string, scopes: string[]) => ({ token, issuer: ISSUER, subject: 'alice', tenant: 'acme', scopes });
    const auth = new TokenFileAuthenticator({
      tokens: [
        entry(FULL, ['tasks:read', 'tasks:cancel', 'tasks:answer', 'reports:run']),
        entry(NO_READ, ['tasks:cancel', 'tasks:answer', 'reports:run']),
        entry(NO_CANCEL, ['tasks:read', 'tasks:answer', 'reports:run']),
        entry(NO_TOOL_SCOPE, ['tasks:read', 'tasks:cancel', 'tasks:answer']),
      ],
    });
    running = await startTasksServer({
      tools,
      auth,
      taskFallbackTools: true,
      scopes: new ScopePolicy(new Map([['long_report', ['reports:run']]])),
      limits: { pollIntervalMs: 50 },
    });
    const init = await fetch(running.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${FULL}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: V1, capabilities: {}, clientInfo: { name: 'no-tasks-host', version: '1' } },
      }),
    });
    sessionId = String(init.headers.get('mcp-session-id'));
    await init.text();
    await post(FULL, { jsonrpc: '2.0', method: 'notifications/initialized' });
  });
  afterAll(async () => {
    await running?.close();
  });

  it('get_task_status / get_task_result without tasks:read or without the tool scope, cancel_task without tasks:cancel → "Task not found" and the task keeps working; with the scopes they answer', async () => {
    const started = await call(FULL, 'long_report', {});
    const taskId = String(started.structuredContent?.taskId);
    expect(taskId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    for (const [token, tool] of [
      [NO_READ, 'get_task_status'],
      [NO_READ, 'get_task_result'],
      [NO_TOOL_SCOPE, 'get_task_status'],
      [NO_TOOL_SCOPE, 'get_task_result'],
      [NO_CANCEL, 'cancel_task'],
    ] as const) {
      const refused = await call(token, tool, { taskId });
      expect(refused, `${tool} with ${token}`).toMatchObject({ isError: true, content: [{ text: 'Failed to retrieve task: Task not found' }] });
    }
    expect((await running.store.getUnscoped(taskId))?.status).toBe('working');

    // Negative control: the same owner with the scopes.
    expect((await call(FULL, 'get_task_status', { taskId })).structuredContent).toMatchObject({ taskId, status: 'working' });
    // Cancelling needs no tool scope: stopping work never needs the authority to do it.
    expect((await call(NO_TOOL_SCOPE, 'cancel_task', { taskId })).content[0]?.text).toBe(`Task ${taskId} is cancelled.`);
    expect((await running.store.getUnscoped(taskId))?.status).toBe('cancelled');
  });
});
