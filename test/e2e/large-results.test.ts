/**
 * Issue 10 §2 result size over real HTTP with the official SDK clients, both generations: a tool result above
 * `maxResultBytes` completes the task with bounded content and a `resource_link` to
 * `mcp-tasks://tasks/{taskId}/result`; the owner reads it back byte-exact with `resources/read` (streamed on the fast
 * path, and the same bytes on the SDK path); the 2026-07-28 answer carries `ttlMs`, `cacheScope: "private"` and
 * `resultType`; another owner and an unknown URI get the same `-32602`; a token without `tasks:read` gets it too
 * (negative control: the same owner with the scope reads it); above `maxStoredResultBytes` the task fails with
 * `result_too_large`; the chunk rows are deleted with the task.
 */
import { randomUUID } from 'node:crypto';

import { resultFromTaskOutcome, type TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import type { TasksServerLimits } from '../../src/core/limits.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { resultResourceUri } from '../../src/protocol/result-uri.js';
import { Scope } from '../../src/protocol/scopes.js';
import {
  connectV1Http,
  connectV2Http,
  createV2TaskSession,
  httpRawDispatch,
  RANDOM_ID,
  rejection,
  type V1HttpClient,
  type V2HttpClient,
} from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

const ISSUER = 'https://issuer.example';
const TOKEN_A = `a-${randomUUID()}`;
const TOKEN_B = `b-${randomUUID()}`;
/** Alice again, without tasks:read (a token that lost the scope). */
const TOKEN_A_NO_READ = `a-noread-${randomUUID()}`;

const LIMITS: Partial<TasksServerLimits> = { pollIntervalMs: 50, maxResultBytes: 300_000, maxStoredResultBytes: 2_000_000 };
const NOT_FOUND = { code: -32602, message: 'Resource not found' };

/** A text of about `chars` characters with multi-byte characters everywhere (so chunk boundaries split some). */
function bigText(chars: number, seed: string): string {
  const unit = `${seed} héllo ✓ 漢字 🙂 "quoted" \\ line\n`;
  return unit.repeat(Math.ceil(chars / unit.length)).slice(0, chars);
}

/** Returns `bigText(chars, seed)` as its one text block. */
const bigTool = defineTool({
  name: 'big',
  description: 'Returns a large text result.',
  execution: 'task-optional',
  inputSchema: z.object({ chars: z.number().int().positive(), seed: z.string() }),
  run: ({ chars, seed }) => Promise.resolve(textResult(bigText(chars, seed))),
});

function authenticator(): TokenFileAuthenticator {
  return new TokenFileAuthenticator({
    tokens: [
      { token: TOKEN_A, issuer: ISSUER, subject: 'alice', tenant: 'acme' },
      { token: TOKEN_B, issuer: ISSUER, subject: 'bob', tenant: 'acme' },
      { token: TOKEN_A_NO_READ, issuer: ISSUER, subject: 'alice', tenant: 'acme', scopes: [Scope.TasksCancel, Scope.TasksAnswer] },
    ],
  });
}

/** The whole result as the tool returned it, in JSON (what the resource holds). */
const wholeJson = (chars: number, seed: string) => JSON.stringify({ content: [{ type: 'text', text: bigText(chars, seed) }] });

function linkOf(result: { content: Array<Record<string, unknown>> }): Record<string, unknown> {
  const link = result.content.find((block) => block.type === 'resource_link');
  if (!link) expect.fail(`no resource_link in ${JSON.stringify(result).slice(0, 300)}`);
  return link;
}

function chunkRows(dbPath: string, taskId: string): number {
  const db = new Database(dbPath, { readonly: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM result_chunks WHERE task_id = ?').get(taskId) as { n: number }).n;
  } finally {
    db.close();
  }
}

describe.each([
  { path: 'fast path (streamed)', fastPath: true },
  { path: 'SDK path', fastPath: false },
])('large results (issue 10 §2) over HTTP, $path', ({ fastPath }) => {
  let running: RunningTasksServer;
  let v1A: V1HttpClient;
  let v1B: V1HttpClient;
  let v2A: V2HttpClient;
  let v2B: V2HttpClient;
  let v2NoRead: V2HttpClient;
  let sessionA: TaskEnabledSession;

  beforeAll(async () => {
    running = await startTasksServer({ tools: [bigTool], auth: authenticator(), limits: LIMITS, fastPath });
    v1A = await connectV1Http(running.url, { token: TOKEN_A, name: 'alice' });
    v1B = await connectV1Http(running.url, { token: TOKEN_B, name: 'bob' });
    v2A = await connectV2Http(running.url, { token: TOKEN_A });
    v2B = await connectV2Http(running.url, { token: TOKEN_B });
    v2NoRead = await connectV2Http(running.url, { token: TOKEN_A_NO_READ });
    sessionA = createV2TaskSession(v2A.client, httpRawDispatch(running.url, v2A.http), 'large-a');
  });
  afterAll(async () => {
    await sessionA?.close();
    for (const client of [v1A, v1B, v2A, v2B, v2NoRead]) await client?.close();
    await running?.close();
  });

  it('the server advertises the resources capability on both generations', () => {
    expect(v2A.client.getServerCapabilities()?.resources).toBeDefined();
    expect(v1A.client.getServerCapabilities()?.resources).toBeDefined();
  });

  it('v2: a result above maxResultBytes completes with its first part, a note and a resource_link; the owner reads it back byte-exact with ttlMs and cacheScope private', async () => {
    const seed = randomUUID();
    const chars = 600_000;
    const execution = await sessionA.callTool('big', { chars, seed });
    if (execution.kind !== 'task') expect.fail('expected a task');
    const settled = await execution.settle();
    expect(settled.outcome.status).toBe('completed');
    const result = resultFromTaskOutcome(settled.outcome) as unknown as { content: Array<Record<string, unknown>>; structuredContent?: unknown };
    const taskId = execution.handle.taskId as string;
    const whole = wholeJson(chars, seed);
    const link = linkOf(result);
    expect(link).toMatchObject({ uri: resultResourceUri(taskId), mimeType: 'application/json', size: Buffer.byteLength(whole) });
    expect(result.content[0]).toMatchObject({ type: 'text' });
    expect(bigText(chars, seed).startsWith(result.content[0]!.text as string)).toBe(true);
    expect(Buffer.byteLength(result.content[0]!.text as string)).toBeLessThanOrEqual(LIMITS.maxResultBytes! / 4);
    expect(result.content[1]!.text).toMatch(/Result truncated: the whole result is \d+ bytes of JSON.*resources\/read of mcp-tasks:\/\/tasks\//);
    // What the task stored inline is bounded; the whole result lives in chunk rows.
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThan(LIMITS.maxResultBytes!);
    expect(chunkRows(running.dbPath, taskId)).toBeGreaterThan(1);

    const read = await v2A.client.readResource({ uri: link.uri as string });
    expect(read.contents).toHaveLength(1);
    expect(read.contents[0]).toMatchObject({ uri: link.uri, mimeType: 'application/json' });
    expect((read.contents[0] as { text: string }).text).toBe(whole);
    const wire = await v2A.http.lastResponse('resources/read');
    expect(wire.result).toMatchObject({ cacheScope: 'private', resultType: 'complete' });
    expect(wire.result?.ttlMs).toEqual(expect.any(Number));
    expect(wire.result?.ttlMs as number).toBeGreaterThan(0);
    // A plain JSON-RPC client (no SDK) gets the same bytes.
    const raw = await postModern(running.url, 'resources/read', { uri: link.uri }, { token: TOKEN_A, headers: { 'mcp-name': link.uri as string } });
    expect((raw.body.result?.contents as Array<{ text: string }>)[0]?.text).toBe(whole);
  });

  it('v1: the same over a 2025-11-25 session (tasks/result has the link; resources/read gives the whole result)', async () => {
    const seed = randomUUID();
    const chars = 400_000;
    const created = await v1A.client.request({ method: 'tools/call', params: { name: 'big', arguments: { chars, seed } } }, CreateTaskResultSchema, {
      task: {},
    });
    const taskId = created.task.taskId;
    const result = (await v1A.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)) as unknown as { content: Array<Record<string, unknown>> };
    const link = linkOf(result);
    expect(link.uri).toBe(resultResourceUri(taskId));
    const read = await v1A.client.readResource({ uri: link.uri as string });
    expect((read.contents[0] as { text: string }).text).toBe(wholeJson(chars, seed));
  });

  it("another owner's resources/read of the link, an unknown task's URI and a malformed URI all get the same -32602 (v2 and v1)", async () => {
    const execution = await sessionA.callTool('big', { chars: 400_000, seed: randomUUID() });
    if (execution.kind !== 'task') expect.fail('expected a task');
    await execution.settle();
    const uri = resultResourceUri(execution.handle.taskId as string);
    const unknown = resultResourceUri(RANDOM_ID);
    for (const candidate of [uri, unknown, 'mcp-tasks://tasks/../result', 'file:///etc/passwd']) {
      expect(await rejection(v2B.client.readResource({ uri: candidate })), candidate).toEqual(NOT_FOUND);
      expect(await rejection(v1B.client.readResource({ uri: candidate })), candidate).toEqual(NOT_FOUND);
    }
    // Byte for byte: the foreign answer and the unknown answer are the same error object.
    await rejection(v2B.client.readResource({ uri }));
    const foreign = (await v2B.http.lastResponse('resources/read')).error;
    await rejection(v2B.client.readResource({ uri: unknown }));
    expect((await v2B.http.lastResponse('resources/read')).error).toEqual(foreign);
    // Negative control: the owner reads it.
    expect((await v2A.client.readResource({ uri })).contents).toHaveLength(1);
  });

  it('a token of the owner without tasks:read gets the unknown answer (the scope is re-checked at read time); with the scope it reads', async () => {
    const execution = await sessionA.callTool('big', { chars: 400_000, seed: randomUUID() });
    if (execution.kind !== 'task') expect.fail('expected a task');
    await execution.settle();
    const uri = resultResourceUri(execution.handle.taskId as string);
    const refused = await v2NoRead.client.readResource({ uri }).then(
      () => undefined,
      (error: unknown) => error,
    );
    // The HTTP front may refuse the method itself (403 insufficient_scope) before the door does (-32602): either way, no content.
    expect(refused).toBeDefined();
    expect(v2NoRead.http.lastStatus('resources/read') === 403 || (await v2NoRead.http.lastResponse('resources/read')).error?.code === -32602).toBe(true);
    expect((await v2A.client.readResource({ uri })).contents).toHaveLength(1);
  });

  it('a result below maxResultBytes stays inline (no link, no chunk rows) — the negative control of the size check', async () => {
    const seed = randomUUID();
    const execution = await sessionA.callTool('big', { chars: 1000, seed });
    if (execution.kind !== 'task') expect.fail('expected a task');
    const settled = await execution.settle();
    const result = resultFromTaskOutcome(settled.outcome) as unknown as { content: Array<Record<string, unknown>> };
    expect(result.content).toEqual([{ type: 'text', text: bigText(1000, seed) }]);
    expect(chunkRows(running.dbPath, execution.handle.taskId as string)).toBe(0);
    expect(await rejection(v2A.client.readResource({ uri: resultResourceUri(execution.handle.taskId as string) }))).toEqual(NOT_FOUND);
  });

  it('above maxStoredResultBytes the task fails with data.reason result_too_large and nothing is stored (v2 and v1)', async () => {
    const execution = await sessionA.callTool('big', { chars: 2_100_000, seed: randomUUID() });
    if (execution.kind !== 'task') expect.fail('expected a task');
    const settled = await execution.settle();
    expect(settled.outcome.status).toBe('failed');
    expect(settled.outcome).toMatchObject({ error: { code: -32603, data: { reason: 'result_too_large', limit: LIMITS.maxStoredResultBytes } } });
    expect(chunkRows(running.dbPath, execution.handle.taskId as string)).toBe(0);

    const created = await v1A.client.request(
      { method: 'tools/call', params: { name: 'big', arguments: { chars: 2_100_000, seed: randomUUID() } } },
      CreateTaskResultSchema,
      { task: {} },
    );
    const failure = await rejection(v1A.client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema));
    expect(failure).toMatchObject({ code: -32603, data: { reason: 'result_too_large' } });
  });
});

describe('large results expire with their task', () => {
  it('the chunk rows are deleted when the task expires, and the URI then answers -32602', async () => {
    const limits: Partial<TasksServerLimits> = {
      ...LIMITS,
      minTtlMs: 500,
      defaultTtlMs: 2500,
      runtimeLimitMs: 1000,
      minResultRetentionMs: 1000,
      sweepIntervalMs: 100,
    };
    const running = await startTasksServer({ tools: [bigTool], auth: authenticator(), limits });
    try {
      const created = await postModern(running.url, 'tools/call', { name: 'big', arguments: { chars: 400_000, seed: 'x' } }, { token: TOKEN_A });
      const taskId = created.body.result?.taskId as string | undefined;
      if (!taskId) expect.fail(`no task: ${JSON.stringify(created.body)}`);
      await pollModernTask(running.url, taskId, { token: TOKEN_A, until: (status) => status === 'completed' });
      expect(chunkRows(running.dbPath, taskId)).toBeGreaterThan(1);
      const read = await postModern(
        running.url,
        'resources/read',
        { uri: resultResourceUri(taskId) },
        { token: TOKEN_A, headers: { 'mcp-name': resultResourceUri(taskId) } },
      );
      expect((read.body.result?.contents as Array<{ text: string }>)[0]?.text).toBe(wholeJson(400_000, 'x'));
      expect(read.body.result?.ttlMs as number).toBeGreaterThan(0);
      expect(read.body.result?.ttlMs as number).toBeLessThanOrEqual(2500);
      const deadline = Date.now() + 15_000;
      while (chunkRows(running.dbPath, taskId) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(chunkRows(running.dbPath, taskId)).toBe(0);
      const gone = await postModern(
        running.url,
        'resources/read',
        { uri: resultResourceUri(taskId) },
        { token: TOKEN_A, headers: { 'mcp-name': resultResourceUri(taskId) } },
      );
      expect(gone.body.error).toEqual(NOT_FOUND);
    } finally {
      await running.close();
    }
  });
});
