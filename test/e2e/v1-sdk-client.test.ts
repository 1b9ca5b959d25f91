/**
 * 2025-11-25 tasks (v1) end to end with the real `@modelcontextprotocol/sdk@1.32.2` client over Streamable HTTP,
 * against a real server on loopback with a real SQLite file. Raw wire shapes are read from the recorded HTTP
 * responses of the client's own requests (the SDK's zod schemas would hide extra or missing keys).
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';

import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, GetTaskResultSchema, ListTasksResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import {
  connectV1Http,
  gatedTools,
  Gates,
  HttpRecorder,
  NOT_FOUND,
  pollUntil,
  RANDOM_ID,
  rejection,
  RELATED_TASK,
  rpcError,
  type V1HttpClient,
} from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { postRaw } from '../helpers/wire.js';

const MAX_TTL_MS = 60_000;
const MIN_TTL_MS = 100;
const LIMITS = { maxTtlMs: MAX_TTL_MS, defaultTtlMs: 30_000, runtimeLimitMs: 30_000, minResultRetentionMs: 0, minTtlMs: MIN_TTL_MS, pollIntervalMs: 250 };

type V1Task = { taskId: string; status: string; statusMessage?: string; createdAt: string; lastUpdatedAt: string; ttl: number | null; pollInterval?: number };

/** A task-augmented `tools/call` through the SDK (`options.task` puts `params.task` on the request). */
async function createTask(client: V1Client, name: string, args: Record<string, unknown>, task: { ttl?: number } = {}): Promise<V1Task> {
  const created = await client.request({ method: 'tools/call', params: { name, arguments: args } }, CreateTaskResultSchema, { task });
  return created.task as V1Task;
}

async function getTask(client: V1Client, taskId: string): Promise<V1Task> {
  return (await client.experimental.tasks.getTask(taskId)) as V1Task;
}

async function settle(client: V1Client, taskId: string): Promise<V1Task> {
  return pollUntil(
    () => getTask(client, taskId),
    (task) => ['completed', 'failed', 'cancelled'].includes(task.status),
    { what: `task ${taskId} terminal` },
  );
}

const TASK_KEYS = ['taskId', 'status', 'statusMessage', 'createdAt', 'lastUpdatedAt', 'ttl', 'pollInterval'];

describe('2025-11-25 tasks over HTTP with the SDK 1.32.2 client, authentication off', () => {
  const gates = new Gates();
  let running: RunningTasksServer;
  let session: V1HttpClient;

  beforeAll(async () => {
    running = await startTasksServer({ tools: [...conformanceFixtureTools(), ...gatedTools(gates)], limits: LIMITS });
    session = await connectV1Http(running.url);
  });
  afterAll(async () => {
    await session?.close();
    await running?.close();
  });

  it('R1/R4/R51 initialize negotiates 2025-11-25 and advertises tasks.cancel and tasks.requests.tools.call but no tasks.list without auth', async () => {
    expect(session.transport.protocolVersion).toBe('2025-11-25');
    expect(session.http.lastStatus('initialize')).toBe(200);
    expect(session.http.last('initialize')?.requestBody).toMatchObject({ params: { protocolVersion: '2025-11-25' } });
    expect(session.http.lastStatus('notifications/initialized')).toBe(202);
    expect(session.transport.sessionId).toEqual(expect.any(String));
    const capabilities = session.client.getServerCapabilities() as Record<string, unknown>;
    expect(capabilities.tasks).toEqual({ cancel: {}, requests: { tools: { call: {} } } });
    const raw = await session.http.lastResponse('initialize');
    expect(raw.result?.protocolVersion).toBe('2025-11-25');
    expect((raw.result?.capabilities as Record<string, unknown>).tasks).not.toHaveProperty('list');
  });

  it('C-V1-27 tasks/list without the advertised capability answers -32601', async () => {
    expect(await rejection(session.client.experimental.tasks.listTasks())).toMatchObject({ code: -32601 });
  });

  it('R8–R10 tools/list shows execution.taskSupport forbidden/optional/required', async () => {
    const { tools } = await session.client.listTools();
    const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]));
    expect(support).toMatchObject({ greet: 'forbidden', slow_compute: 'optional', protocol_error_job: 'optional', failing_job: 'required' });
  });

  it('R12–R14/R17–R19 a task-augmented call answers a nested CreateTaskResult (no content) with the ttl clamped to the server maximum', async () => {
    const task = await createTask(session.client, 'slow_compute', { seconds: 0 }, { ttl: MAX_TTL_MS * 10 });
    const raw = await session.http.lastResponse('tools/call');
    expect(Object.keys(raw.result ?? {})).toEqual(['task']);
    const wireTask = raw.result?.task as V1Task;
    expect(wireTask).toMatchObject({ taskId: task.taskId, status: 'working', ttl: MAX_TTL_MS });
    expect(Object.keys(wireTask).every((key) => TASK_KEYS.includes(key))).toBe(true);
    expect(Number.isInteger(wireTask.pollInterval)).toBe(true);
    expect(new Date(wireTask.createdAt).toISOString()).toBe(wireTask.createdAt);
    expect(new Date(wireTask.lastUpdatedAt).toISOString()).toBe(wireTask.lastUpdatedAt);
    const got = await getTask(session.client, task.taskId);
    expect(got.ttl).toBe(MAX_TTL_MS);
    expect(got.createdAt).toBe(wireTask.createdAt);
  });

  it('R18 a ttl below the server minimum is raised to it and reported', async () => {
    const task = await createTask(session.client, 'slow_compute', { seconds: 0 }, { ttl: 1 });
    expect(task.ttl).toBe(MIN_TTL_MS);
  });

  it('R17/R33 tasks/get answers a flat Task without related-task _meta; createdAt stays fixed while lastUpdatedAt moves', async () => {
    const gate = randomUUID();
    const task = await createTask(session.client, 'gated', { gate });
    await gates.started(gate);
    const working = await getTask(session.client, task.taskId);
    const raw = (await session.http.lastResponse('tasks/get')).result ?? {};
    expect(raw).toMatchObject({ taskId: task.taskId, status: 'working', createdAt: task.createdAt, ttl: 30_000 });
    expect(raw).not.toHaveProperty('task');
    expect(raw._meta === undefined || !(RELATED_TASK in (raw._meta as object))).toBe(true);
    gates.open(gate);
    const done = await settle(session.client, task.taskId);
    expect(done.status).toBe('completed');
    expect(done.createdAt).toBe(working.createdAt);
    expect(Date.parse(done.lastUpdatedAt)).toBeGreaterThanOrEqual(Date.parse(working.lastUpdatedAt));
    const rawDone = (await session.http.lastResponse('tasks/get')).result ?? {};
    expect(rawDone._meta === undefined || !(RELATED_TASK in (rawDone._meta as object))).toBe(true);
  });

  it('R22/R24–R26 tasks/result blocks until the task is terminal (tasks/get answers meanwhile) and returns exactly the CallToolResult with related-task _meta', async () => {
    const gate = randomUUID();
    const task = await createTask(session.client, 'gated', { gate });
    await gates.started(gate);
    const second = await connectV1Http(running.url);
    try {
      let settled = false;
      const pending = second.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema).finally(() => (settled = true));
      // A few round trips on the first session while tasks/result is outstanding on the second.
      for (let i = 0; i < 3; i += 1) expect((await getTask(session.client, task.taskId)).status).toBe('working');
      expect(settled).toBe(false);
      gates.open(gate);
      const result = await pending;
      expect(result.content).toEqual([{ type: 'text', text: `released ${gate}` }]);
      const raw = await second.http.lastResponse('tasks/result');
      expect(raw.result).toEqual({ content: [{ type: 'text', text: `released ${gate}` }], _meta: { [RELATED_TASK]: { taskId: task.taskId } } });
    } finally {
      await second.close();
    }
  });

  it('R9 a task-optional tool called without task answers a plain CallToolResult', async () => {
    const result = await session.client.callTool({ name: 'slow_compute', arguments: { seconds: 0, label: 'inline' } });
    expect(result.content).toEqual([{ type: 'text', text: 'Computed inline after 0s' }]);
    expect((await session.http.lastResponse('tools/call')).result).not.toHaveProperty('task');
  });

  it('R47 a tool result with isError fails the task with a diagnostic statusMessage; tasks/result returns that isError result', async () => {
    const task = await createTask(session.client, 'failing_job', {});
    const failed = await settle(session.client, task.taskId);
    expect(failed.status).toBe('failed');
    expect(failed.statusMessage).toBe('The job failed: simulated tool error');
    const result = await session.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'The job failed: simulated tool error' }] });
    expect((await session.http.lastResponse('tasks/result')).result).toEqual({
      content: [{ type: 'text', text: 'The job failed: simulated tool error' }],
      isError: true,
      _meta: { [RELATED_TASK]: { taskId: task.taskId } },
    });
  });

  it('R25/R47 a thrown protocol error fails the task; tasks/result rejects with the same code and message', async () => {
    const task = await createTask(session.client, 'protocol_error_job', {});
    const failed = await settle(session.client, task.taskId);
    expect(failed).toMatchObject({ status: 'failed', statusMessage: 'Simulated protocol error: upstream unavailable' });
    const error = await rejection(session.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema));
    expect(error).toEqual({ code: -32603, message: 'Simulated protocol error: upstream unavailable' });
    expect((await session.http.lastResponse('tasks/result')).error).toEqual({ code: -32603, message: 'Simulated protocol error: upstream unavailable' });
  });

  it('R41/R42 tasks/cancel on a working task answers cancelled and the task stays cancelled after the work ends', async () => {
    const gate = randomUUID();
    const task = await createTask(session.client, 'stubborn', { gate });
    await gates.started(gate);
    const cancelled = await session.client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled).toMatchObject({ taskId: task.taskId, status: 'cancelled' });
    const raw = (await session.http.lastResponse('tasks/cancel')).result ?? {};
    expect(raw).toMatchObject({ taskId: task.taskId, status: 'cancelled', createdAt: task.createdAt });
    expect(raw._meta === undefined || !(RELATED_TASK in (raw._meta as object))).toBe(true);
    // The tool ignores the abort and returns a success afterwards: that late outcome must be discarded (R42).
    gates.open(gate);
    await gates.returned(gate);
    for (let i = 0; i < 5; i += 1) {
      expect((await getTask(session.client, task.taskId)).status).toBe('cancelled');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  it('R40 tasks/cancel on a completed, failed or cancelled task answers -32602', async () => {
    const completed = await createTask(session.client, 'slow_compute', { seconds: 0 });
    const failed = await createTask(session.client, 'failing_job', {});
    const gate = randomUUID();
    const cancelled = await createTask(session.client, 'gated', { gate });
    await session.client.experimental.tasks.cancelTask(cancelled.taskId);
    for (const [task, status] of [
      [completed, 'completed'],
      [failed, 'failed'],
      [cancelled, 'cancelled'],
    ] as const) {
      expect((await settle(session.client, task.taskId)).status).toBe(status);
      const error = await rejection(session.client.experimental.tasks.cancelTask(task.taskId));
      expect(error).toEqual({ code: -32602, message: `Cannot cancel task: already in terminal status '${status}'` });
      expect((await getTask(session.client, task.taskId)).status).toBe(status);
    }
  });

  it('D4 tasks/result on a cancelled task answers at once with -32603 "Task was cancelled"', async () => {
    const gate = randomUUID();
    const task = await createTask(session.client, 'gated', { gate });
    await session.client.experimental.tasks.cancelTask(task.taskId);
    // The gate is never opened: an answer proves tasks/result did not wait for the (aborted) work.
    expect(await rejection(session.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema))).toEqual({
      code: -32603,
      message: 'Task was cancelled',
    });
  });

  it('R8/R10 taskSupport violations answer -32601: task on a forbidden tool, no task on a required tool', async () => {
    const forbidden = await rejection(
      session.client.request({ method: 'tools/call', params: { name: 'greet', arguments: { name: 'x' } } }, CreateTaskResultSchema, { task: { ttl: 1000 } }),
    );
    expect(forbidden).toEqual({ code: -32601, message: "Tool 'greet' does not support task-augmented execution" });
    // client.callTool refuses required tools locally once tools/list was cached, so send the plain request.
    const required = await rejection(session.client.request({ method: 'tools/call', params: { name: 'failing_job', arguments: {} } }, CallToolResultSchema));
    expect(required).toEqual({ code: -32601, message: "Tool 'failing_job' requires task-augmented execution" });
  });

  it('R45 an unknown task id answers -32602 on tasks/get, tasks/result and tasks/cancel', async () => {
    expect(await rejection(session.client.experimental.tasks.getTask(RANDOM_ID))).toEqual(NOT_FOUND);
    expect(await rejection(session.client.experimental.tasks.getTaskResult(RANDOM_ID, CallToolResultSchema))).toEqual(NOT_FOUND);
    expect(await rejection(session.client.experimental.tasks.cancelTask(RANDOM_ID))).toEqual(NOT_FOUND);
  });

  it('R32 related-task _meta naming another task is ignored by tasks/get, tasks/result and tasks/cancel', async () => {
    const gate = randomUUID();
    const target = await createTask(session.client, 'gated', { gate });
    const other = await createTask(session.client, 'slow_compute', { seconds: 0 });
    await settle(session.client, other.taskId);
    // The SDK's `relatedTask` request option routes through its side-channel queue, so the decoy goes into params._meta.
    const params = (taskId: string, decoyId: string) => ({ taskId, _meta: { [RELATED_TASK]: { taskId: decoyId } } });
    const got = await session.client.request({ method: 'tasks/get', params: params(target.taskId, other.taskId) }, GetTaskResultSchema);
    expect(got).toMatchObject({ taskId: target.taskId, status: 'working' });
    expect((session.http.last('tasks/get')?.requestBody as { params: unknown }).params).toEqual(params(target.taskId, other.taskId));
    gates.open(gate);
    const result = await session.client.request({ method: 'tasks/result', params: params(target.taskId, other.taskId) }, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: `released ${gate}` }]);
    expect(result._meta).toEqual({ [RELATED_TASK]: { taskId: target.taskId } });
    // Cancelling the (now completed) target is refused for the target; the live decoy is left alone.
    const liveGate = randomUUID();
    const live = await createTask(session.client, 'gated', { gate: liveGate });
    const refused = await rejection(session.client.request({ method: 'tasks/cancel', params: params(target.taskId, live.taskId) }, GetTaskResultSchema));
    expect(refused).toEqual({ code: -32602, message: "Cannot cancel task: already in terminal status 'completed'" });
    expect((await getTask(session.client, live.taskId)).status).toBe('working');
    gates.open(liveGate);
  });

  it('R20/R45 a task with a short ttl is not found once it expired', async () => {
    const task = await createTask(session.client, 'slow_compute', { seconds: 0 }, { ttl: 1000 });
    expect(task.ttl).toBe(1000);
    const readStatusOrError = async (): Promise<string | { code: number; message: string }> => {
      try {
        return (await getTask(session.client, task.taskId)).status;
      } catch (error) {
        return rpcError(error);
      }
    };
    const gone = await pollUntil(readStatusOrError, (value) => typeof value !== 'string', { what: 'expiry', intervalMs: 100 });
    expect(gone).toEqual(NOT_FOUND);
    expect(await rejection(session.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema))).toEqual(NOT_FOUND);
    expect(await rejection(session.client.experimental.tasks.cancelTask(task.taskId))).toEqual(NOT_FOUND);
  });

  describe('a session that negotiated 2025-06-18 (older than tasks)', () => {
    let old: V1HttpClient;
    beforeAll(async () => {
      old = await connectV1Http(running.url, { initializeProtocolVersion: '2025-06-18' });
    });
    afterAll(async () => {
      await old?.close();
    });

    it('R1/R5 no tasks capability and no execution field in tools/list', async () => {
      expect(old.transport.protocolVersion).toBe('2025-06-18');
      expect(old.client.getServerCapabilities()).not.toHaveProperty('tasks');
      await old.client.listTools();
      const raw = (await old.http.lastResponse('tools/list')).result as { tools: Array<Record<string, unknown>> };
      expect(raw.tools.length).toBeGreaterThan(0);
      for (const tool of raw.tools) expect(tool).not.toHaveProperty('execution');
    });

    it('R5 params.task is ignored: task-optional and forbidden tools run synchronously', async () => {
      const optional = await old.client.request(
        { method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 0, label: 'old' }, task: { ttl: 5000 } } },
        CallToolResultSchema,
      );
      expect(optional.content).toEqual([{ type: 'text', text: 'Computed old after 0s' }]);
      const raw = (await old.http.lastResponse('tools/call')).result ?? {};
      expect(raw).not.toHaveProperty('task');
      const forbidden = await old.client.request(
        { method: 'tools/call', params: { name: 'greet', arguments: { name: 'old' }, task: {} } },
        CallToolResultSchema,
      );
      expect(forbidden.content).toEqual([{ type: 'text', text: 'Hello, old!' }]);
    });

    it('R5/R10 a task-required tool answers an isError result naming what the client lacks', async () => {
      const result = await old.client.request({ method: 'tools/call', params: { name: 'failing_job', arguments: {} } }, CallToolResultSchema);
      expect(result.isError).toBe(true);
      const text = (result.content[0] as { text: string }).text;
      expect(text).toContain("Tool 'failing_job' runs only as a task");
      expect(text).toContain('2025-06-18');
      expect(text).toContain('2025-11-25');
      expect(text).toContain('io.modelcontextprotocol/tasks');
    });

    it('R1/D6 tasks/get, tasks/result and tasks/cancel answer -32601', async () => {
      expect((await rejection(old.client.experimental.tasks.getTask(RANDOM_ID))).code).toBe(-32601);
      expect((await rejection(old.client.experimental.tasks.getTaskResult(RANDOM_ID, CallToolResultSchema))).code).toBe(-32601);
      expect((await rejection(old.client.experimental.tasks.cancelTask(RANDOM_ID))).code).toBe(-32601);
    });
  });
});

const ISSUER = 'https://issuer.e2e.test';
const TOKENS = {
  alice: 'alice-v1-token-0123456789abcdef',
  lister: 'lister-v1-token-0123456789abcdef',
};

describe('2025-11-25 tasks over HTTP with the SDK 1.32.2 client, authentication on', () => {
  const auth = new TokenFileAuthenticator({
    tokens: [
      { token: TOKENS.alice, issuer: ISSUER, subject: 'alice', tenant: 'acme' },
      { token: TOKENS.lister, issuer: ISSUER, subject: 'lister', tenant: 'acme' },
    ],
  });
  let running: RunningTasksServer;
  beforeAll(async () => {
    running = await startTasksServer({ tools: conformanceFixtureTools(), auth, limits: { ...LIMITS, listPageSize: 3 } });
  });
  afterAll(async () => {
    await running?.close();
  });

  it('R4/R51 with authenticated requestors the tasks capability includes list', async () => {
    const session = await connectV1Http(running.url, { token: TOKENS.alice });
    try {
      expect(session.client.getServerCapabilities()?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    } finally {
      await session.close();
    }
  });

  it('R37/R38 tasks/list pages (page size 3) while new tasks are created during the walk: each task exactly once, last page without nextCursor', async () => {
    const session = await connectV1Http(running.url, { token: TOKENS.lister });
    try {
      const before: string[] = [];
      for (let i = 0; i < 7; i += 1) before.push((await createTask(session.client, 'slow_compute', { seconds: 0, label: `b${i}` })).taskId);
      const during: string[] = [];
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await session.client.experimental.tasks.listTasks(cursor);
        pages += 1;
        expect(page.tasks.length).toBeLessThanOrEqual(3);
        for (const task of page.tasks) {
          expect(Object.keys(task).every((key) => TASK_KEYS.includes(key))).toBe(true);
          seen.push(task.taskId);
        }
        const raw = (await session.http.lastResponse('tasks/list')).result ?? {};
        expect(raw._meta === undefined || !(RELATED_TASK in (raw._meta as object))).toBe(true);
        if (page.nextCursor === undefined) expect(raw).not.toHaveProperty('nextCursor');
        if (pages <= 2) during.push((await createTask(session.client, 'slow_compute', { seconds: 0, label: `d${pages}` })).taskId);
        cursor = page.nextCursor;
        expect(pages).toBeLessThan(20);
      } while (cursor !== undefined);
      expect(pages).toBeGreaterThan(2);
      expect(new Set(seen).size).toBe(seen.length);
      expect([...seen].sort()).toEqual([...before, ...during].sort());
    } finally {
      await session.close();
    }
  });

  it('R39 a forged or altered cursor answers -32602', async () => {
    const session = await connectV1Http(running.url, { token: TOKENS.lister });
    try {
      const first = await session.client.experimental.tasks.listTasks();
      const cursor = first.nextCursor;
      expect(cursor).toBeDefined();
      const text = String(cursor);
      // Not the last character: its low bits may be base64 padding, so changing it can leave the bytes as they were.
      const flipAt = (index: number): string => `${text.slice(0, index)}${text[index] === 'A' ? 'B' : 'A'}${text.slice(index + 1)}`;
      for (const bad of [
        'not-a-cursor',
        'MTA.forged',
        flipAt(0),
        flipAt(Math.floor(text.length / 2)),
        flipAt(text.length - 4),
        text.slice(0, -4),
        `${text}x`,
        '',
      ]) {
        const error = await rejection(session.client.request({ method: 'tasks/list', params: { cursor: bad } }, ListTasksResultSchema));
        expect(error, bad).toEqual({ code: -32602, message: 'Invalid cursor' });
      }
    } finally {
      await session.close();
    }
  });

  it('R48 tasks are bound to the owner, not the session: a task created in session A is read and its result fetched from a new session B of the same owner', async () => {
    const a = await connectV1Http(running.url, { token: TOKENS.alice });
    const task = await createTask(a.client, 'slow_compute', { seconds: 0.05, label: 'cross-session' });
    await a.close();
    const b = await connectV1Http(running.url, { token: TOKENS.alice });
    try {
      expect(b.transport.sessionId).toBeDefined();
      expect(b.transport.sessionId).not.toBe(a.transport.sessionId);
      expect((await settle(b.client, task.taskId)).status).toBe('completed');
      const result = await b.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      expect(result.content).toEqual([{ type: 'text', text: 'Computed cross-session after 0.05s' }]);
    } finally {
      await b.close();
    }
  });
});

describe('2025-11-25 tasks across a server restart on the same SQLite file', () => {
  const temp = makeTempDir('mcp-tasks-restart-');
  const dbPath = join(temp.dir, 'tasks.db');
  const auth = new TokenFileAuthenticator({ tokens: [{ token: TOKENS.alice, issuer: ISSUER, subject: 'alice', tenant: 'acme' }] });
  afterAll(() => temp.remove());

  it('R48 after a restart on the same SQLite file the old session goes on (its record is in the store); once DELETEd its id gets HTTP 404 and a new session of the same owner reads the old completed task and its result', async () => {
    const first = await startTasksServer({ tools: conformanceFixtureTools(), auth, dbPath, limits: LIMITS });
    let session: V1HttpClient | undefined;
    let taskId: string;
    try {
      session = await connectV1Http(first.url, { token: TOKENS.alice });
      taskId = (await createTask(session.client, 'slow_compute', { seconds: 0, label: 'before restart' })).taskId;
      expect((await settle(session.client, taskId)).status).toBe('completed');
      // The client does not end its session: the server goes away under it.
    } finally {
      await first.close();
      await session?.client.close();
    }
    const oldSessionId = session.transport.sessionId;
    expect(oldSessionId).toEqual(expect.any(String));

    const second = await startTasksServer({ tools: conformanceFixtureTools(), auth, dbPath, limits: LIMITS });
    try {
      // The same SDK client transport, resuming its old session id against the restarted server: rebuilt from the store.
      const http = new HttpRecorder({ token: TOKENS.alice });
      const stale = new StreamableHTTPClientTransport(new URL(second.url), { fetch: http.fetch, sessionId: oldSessionId });
      const staleClient = new V1Client({ name: 'stale', version: '1.0.0' });
      await staleClient.connect(stale);
      await expect(staleClient.listTools()).resolves.toMatchObject({ tools: expect.any(Array) });
      expect(http.lastStatus('tools/list')).toBe(200);
      const headers = { authorization: `Bearer ${TOKENS.alice}`, 'mcp-session-id': String(oldSessionId), 'mcp-protocol-version': '2025-11-25' };
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { taskId } });
      expect((await postRaw(second.url, body, headers)).body.result).toMatchObject({ taskId, status: 'completed' });
      await stale.terminateSession();
      await staleClient.close();
      const raw = await postRaw(second.url, body, headers);
      expect(raw.status).toBe(404);

      const fresh = await connectV1Http(second.url, { token: TOKENS.alice });
      try {
        const task = await getTask(fresh.client, taskId);
        expect(task).toMatchObject({ taskId, status: 'completed' });
        const result = await fresh.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
        expect(result.content).toEqual([{ type: 'text', text: 'Computed before restart after 0s' }]);
        expect(result._meta).toEqual({ [RELATED_TASK]: { taskId } });
        expect(GetTaskResultSchema.safeParse(task).success).toBe(true);
      } finally {
        await fresh.close();
      }
    } finally {
      await second.close();
    }
  });
});
