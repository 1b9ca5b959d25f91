import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import {
  connectTasksClient,
  type ProtocolChoice,
  TaskCancelledError,
  TaskFailedError,
  TaskJournal,
  TaskNotFoundError,
  TaskNotTerminalError,
  type TasksClient,
  type TaskSnapshot,
  TasksProtocolError,
  TaskTimeoutError,
  ToolCallOutcomeUnknownError,
} from '../../src/client/index.js';
import { withRequestDeadline } from '../../src/client/request-deadline.js';
import { DEFAULT_LIMITS } from '../../src/core/limits.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/sqlite-task-store.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { countingTools, RequestLog, startDroppingProxy } from './support.js';

const POLL_INTERVAL_MS = 100;
const UNKNOWN_ID = 'Zz9Yy8Xx7Ww6Vv5Uu4Tt3S';

const GENERATIONS = [
  { protocol: '2025-11-25', generation: 'v1' },
  { protocol: '2026-07-28', generation: 'v2' },
] as const;

describe.each(GENERATIONS)('TasksClient over MCP $protocol (tasks $generation)', ({ protocol, generation }) => {
  const counting = countingTools();
  const temp = makeTempDir('mcp-tasks-client-');
  const journalPath = join(temp.dir, 'tasks.json');
  let running: RunningTasksServer;
  let clients: TasksClient[] = [];

  const open = async (options: { url?: string; log?: RequestLog; protocol?: ProtocolChoice } = {}): Promise<TasksClient> => {
    const client = await connectTasksClient({
      url: options.url ?? running.url,
      protocol: options.protocol ?? protocol,
      journal: journalPath,
      ...(options.log ? { fetch: options.log.fetch } : {}),
    });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    running = await startTasksServer({ tools: counting.tools, limits: { pollIntervalMs: POLL_INTERVAL_MS } });
  });
  afterEach(async () => {
    await Promise.all(clients.map((client) => client.close()));
    clients = [];
  });
  afterAll(async () => {
    await running.close();
    temp.remove();
  });

  it('negotiates the protocol and reports the task generation and capabilities', async () => {
    const client = await open();
    expect(client.protocolVersion).toBe(protocol);
    expect(client.generation).toBe(generation);
    expect(client.url).toBe(running.url);
    // Without authentication the server offers no tasks/list (R51); v2 has none at all.
    expect(client.taskCapabilities).toEqual({ cancel: true, list: false });
  });

  it('creates a task, journals it, polls at the server interval with jitter, delivers the result and forgets the task', async () => {
    const log = new RequestLog();
    const client = await open({ log });
    const runsBefore = counting.runs.get('slow_compute') ?? 0;
    const created = await client.callTool('slow_compute', { seconds: 0.8, label: 'lib' });
    // A young task gets the short end of the adaptive hint (v1 floor 50 ms; v2 never below 250 ms).
    expect(created).toMatchObject({ kind: 'task', generation, journaled: true, task: { status: 'working' } });
    if (created.kind !== 'task') return;
    // The hint grows with the task's age, which is a few ms on a quiet machine and more on a loaded one: the young
    // end of the range, never the old end (1 s).
    expect(created.task.pollIntervalMs).toBeGreaterThanOrEqual(generation === 'v1' ? 50 : 250);
    expect(created.task.pollIntervalMs).toBeLessThan(generation === 'v1' ? 250 : 500);
    expect(await new TaskJournal(journalPath).get(created.taskId)).toEqual({
      taskId: created.taskId,
      url: running.url,
      generation,
      protocolVersion: protocol,
      tool: 'slow_compute',
      createdAt: created.task.createdAt,
      idempotencyKey: created.idempotencyKey,
      correlationId: created.correlationId,
      lastStatus: 'working',
      lastUpdatedAt: created.task.lastUpdatedAt,
      observedAt: expect.any(String),
    });
    // Both keys went out in the call's _meta (R-less: our own namespaced keys) and are distinct.
    const sent = log.params('tools/call')[0]?._meta as Record<string, unknown>;
    expect([sent['dev.mcp-tasks/idempotency-key'], sent['dev.mcp-tasks/correlation-id']]).toEqual([created.idempotencyKey, created.correlationId]);
    expect(created.idempotencyKey).not.toBe(created.correlationId);

    const updates: TaskSnapshot[] = [];
    const final = await client.waitForTask(created.taskId, { timeoutMs: 15_000, onUpdate: (snapshot) => updates.push(snapshot) });
    expect(final.status).toBe('completed');
    const polls = log.sent.filter((entry) => entry.method === 'tasks/get');
    await expect(client.getResult(created.taskId)).resolves.toMatchObject({ content: [{ type: 'text', text: 'Computed lib after 0.8s' }] });
    expect(await new TaskJournal(journalPath).get(created.taskId)).toBeUndefined();

    expect(polls.length).toBe(updates.length);
    expect(polls.length).toBeGreaterThanOrEqual(2);
    // Every delay is at least the hint of the answer before it × 0.8 (jitter); the hints grow with the task's age.
    for (let index = 1; index < polls.length; index++) {
      const hint = updates[index - 1]?.pollIntervalMs ?? 0;
      expect(hint).toBeGreaterThan(0);
      expect((polls[index]?.at ?? 0) - (polls[index - 1]?.at ?? 0)).toBeGreaterThanOrEqual(hint * 0.8 - 2);
    }
    const hints = updates.slice(0, -1).map((snapshot) => snapshot.pollIntervalMs ?? 0);
    expect(hints).toEqual([...hints].sort((x, y) => x - y));
    expect(log.count('tools/call')).toBe(1);
    expect(counting.runs.get('slow_compute')).toBe(runsBefore + 1);
  });

  it('returns a tool error as a result with isError (v1: task failed; v2: task completed)', async () => {
    const client = await open();
    const created = await client.callTool('failing_job');
    if (created.kind !== 'task') throw new Error('expected a task');
    const final = await client.waitForTask(created.taskId, { timeoutMs: 15_000 });
    expect(final.status).toBe(generation === 'v1' ? 'failed' : 'completed');
    await expect(client.getResult(created.taskId)).resolves.toMatchObject({ isError: true, content: [{ text: 'The job failed: simulated tool error' }] });
  });

  it('turns a JSON-RPC error outcome into a TaskFailedError carrying the code, and forgets the task', async () => {
    const client = await open();
    const created = await client.callTool('protocol_error_job');
    if (created.kind !== 'task') throw new Error('expected a task');
    const error = await client.resume(created.taskId, { timeoutMs: 15_000 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TaskFailedError);
    expect(error).toMatchObject({ code: -32603, taskId: created.taskId, error: { code: -32603, message: 'Simulated protocol error: upstream unavailable' } });
    expect(await new TaskJournal(journalPath).get(created.taskId)).toBeUndefined();
  });

  it('cancels a running task: the wait ends cancelled and the result is a TaskCancelledError', async () => {
    const client = await open();
    const created = await client.callTool('slow_compute', { seconds: 60 });
    if (created.kind !== 'task') throw new Error('expected a task');
    await expect(client.getResult(created.taskId)).rejects.toBeInstanceOf(TaskNotTerminalError);
    const answer = await client.cancelTask(created.taskId);
    if (generation === 'v1') expect(answer).toMatchObject({ taskId: created.taskId, status: 'cancelled' });
    else expect(answer).toBeUndefined();
    expect(await new TaskJournal(journalPath).get(created.taskId)).toBeUndefined();
    expect((await client.waitForTask(created.taskId, { timeoutMs: 15_000 })).status).toBe('cancelled');
    await expect(client.getResult(created.taskId)).rejects.toBeInstanceOf(TaskCancelledError);
    // Cancelling again is not an error: v1 reports the terminal task, v2 acknowledges.
    const again = await client.cancelTask(created.taskId);
    if (generation === 'v1') expect(again?.status).toBe('cancelled');
  });

  it('reports an unknown task id as TaskNotFoundError (-32602) on get, wait and cancel', async () => {
    const client = await open();
    for (const attempt of [() => client.getTask(UNKNOWN_ID), () => client.waitForTask(UNKNOWN_ID), () => client.cancelTask(UNKNOWN_ID)]) {
      const error = await attempt().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(TaskNotFoundError);
      expect(error).toMatchObject({ code: -32602, taskId: UNKNOWN_ID });
    }
  });

  it('gives up at the deadline with a TaskTimeoutError while the task keeps running, then resumes', async () => {
    const log = new RequestLog();
    const client = await open({ log });
    const created = await client.callTool('slow_compute', { seconds: 1.5 });
    if (created.kind !== 'task') throw new Error('expected a task');
    const startedAt = Date.now();
    const error = await client.waitForTask(created.taskId, { timeoutMs: 400 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TaskTimeoutError);
    expect((error as TaskTimeoutError).snapshot?.status).toBe('working');
    const deadline = (error as TaskTimeoutError).deadline;
    expect(deadline - startedAt).toBeLessThanOrEqual(410);
    expect(log.sent.filter((entry) => entry.method === 'tasks/get').every((entry) => entry.at < deadline)).toBe(true);
    expect((await client.getTask(created.taskId)).status).toBe('working');
    expect(await new TaskJournal(journalPath).get(created.taskId)).toBeDefined();
    await expect(client.resume(created.taskId, { timeoutMs: 15_000 })).resolves.toMatchObject({ content: [{ text: 'Computed result after 1.5s' }] });
  });

  it('a request of a wait whose deadline came before the send never leaves: checked at the fetch, for the SDK session and the raw endpoint alike', async () => {
    const log = new RequestLog();
    const client = await open({ log });
    const created = await client.callTool('slow_compute', { seconds: 0.2 });
    if (created.kind !== 'task') throw new Error('expected a task');
    const before = log.count('tasks/get');
    const error = await withRequestDeadline(Date.now() - 1, () => client.getTask(created.taskId)).catch((caught: unknown) => caught);
    expect((error as Error).name).toBe('AbortError');
    expect(log.count('tasks/get')).toBe(before);
    // Negative control: the same read with no deadline in force goes out.
    await client.getTask(created.taskId);
    expect(log.count('tasks/get')).toBe(before + 1);
  });

  it('resumes after a crash: a new client instance finds the task in the journal and delivers it', async () => {
    const runsBefore = counting.runs.get('slow_compute') ?? 0;
    const first = await open();
    const created = await first.callTool('slow_compute', { seconds: 0.5, label: 'resumed' });
    if (created.kind !== 'task') throw new Error('expected a task');
    await first.close(); // the requestor "crashes": nothing but the journal survives

    const entry = await new TaskJournal(journalPath).get(created.taskId);
    expect(entry).toBeDefined();
    const log = new RequestLog();
    const second = await open({ url: entry?.url, protocol: entry?.protocolVersion as ProtocolChoice, log });
    await expect(second.resume(created.taskId, { timeoutMs: 15_000 })).resolves.toMatchObject({ content: [{ text: 'Computed resumed after 0.5s' }] });
    expect(await new TaskJournal(journalPath).get(created.taskId)).toBeUndefined();
    expect(log.count('tools/call')).toBe(0);
    expect(counting.runs.get('slow_compute')).toBe(runsBefore + 1);
  });

  it('refuses to resume a journaled task on another endpoint or generation, and keeps its entry', async () => {
    const journal = new TaskJournal(journalPath);
    await journal.add({
      taskId: 'elsewhere-task',
      url: 'http://127.0.0.1:9/mcp',
      generation,
      protocolVersion: protocol,
      tool: 'x',
      createdAt: '2026-01-01T00:00:00Z',
    });
    const client = await open();
    await expect(client.resume('elsewhere-task')).rejects.toThrow(/was created at http:\/\/127\.0\.0\.1:9\/mcp/);
    expect(await journal.get('elsewhere-task')).toBeDefined();
    await journal.remove('elsewhere-task');
  });

  it('a lost tools/call answer is resent once with the same key (the server honours keys, issue 12) and runs once; lost again it surfaces as ToolCallOutcomeUnknownError', async () => {
    const proxy = await startDroppingProxy(running.url);
    try {
      const log = new RequestLog();
      const client = await open({ url: proxy.url, log });
      // A first call while answers still arrive (v1 also learns the tools' taskSupport from tools/list here).
      await client.callTool('greet', { name: 'before' });
      const runsBefore = counting.runs.get('slow_compute') ?? 0;
      proxy.dropping = true;
      const error = await client.callTool('slow_compute', { seconds: 0.1 }).catch((caught: unknown) => caught);
      expect(error, String(error)).toBeInstanceOf(ToolCallOutcomeUnknownError);
      expect((error as Error).message).toMatch(/may have started it; it was not resent/);
      await sleep(500);
      // The server did receive it and ran it exactly once; the client resent it once, with the same key.
      expect(counting.runs.get('slow_compute')).toBe(runsBefore + 1);
      expect(log.count('tools/call')).toBe(3);
    } finally {
      await proxy.close();
    }
  });

  it.each([
    { sessionLost: false, shown: 'the 2025 session survives: it is in the store' },
    { sessionLost: true, shown: 'a 2025 session the store no longer has is re-initialised' },
  ])('keeps waiting across a server restart (backoff on connection errors; $shown)', async ({ sessionLost }) => {
    const dir = makeTempDir('mcp-tasks-restart-');
    const dbPath = join(dir.dir, 'tasks.db');
    let server = await startTasksServer({ tools: counting.tools, dbPath, limits: { pollIntervalMs: POLL_INTERVAL_MS } });
    const proxy = await startDroppingProxy(server.url);
    try {
      const log = new RequestLog();
      const client = await open({ url: proxy.url, log });
      const created = await client.callTool('slow_compute', { seconds: 1, label: 'restart' });
      if (created.kind !== 'task') throw new Error('expected a task');
      const statuses: string[] = [];
      const waiting = client.resume(created.taskId, { timeoutMs: 30_000, onUpdate: (snapshot) => statuses.push(snapshot.status) });
      await sleep(300);
      await server.close();
      if (sessionLost) {
        const offline = openSqliteTaskStore({ path: dbPath });
        await offline.sessions.deleteIdleSessions(Number.MAX_SAFE_INTEGER, 100);
        await offline.close();
      }
      await sleep(400);
      server = await startTasksServer({ tools: counting.tools, dbPath, limits: { pollIntervalMs: POLL_INTERVAL_MS } });
      proxy.retarget(server.url);
      await expect(waiting).resolves.toMatchObject({ content: [{ text: 'Computed restart after 1s' }] });
      expect(log.count('tools/call')).toBe(1);
      if (generation === 'v1') expect(log.count('initialize')).toBe(sessionLost ? 2 : 1);
    } finally {
      await proxy.close();
      await server.close();
      dir.remove();
    }
  });

  it('runs a task-forbidden tool inline and returns its result directly', async () => {
    const client = await open();
    await expect(client.callTool('greet', { name: 'inline' })).resolves.toMatchObject({ kind: 'result', result: { content: [{ text: 'Hello, inline!' }] } });
  });

  it('reports a refused call with the server code and no task (-32602 unknown tool)', async () => {
    const client = await open();
    const error = await client.callTool('no_such_tool').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TasksProtocolError);
    expect((error as TasksProtocolError).code).toBe(-32602);
  });

  it('only v1 requests a retention (task.ttl); the server may lower it', async () => {
    const client = await open();
    const created = await client.callTool('slow_compute', { seconds: 0 }, { ttlMs: 120_000 });
    if (created.kind !== 'task') throw new Error('expected a task');
    expect(created.task.ttlMs).toBe(generation === 'v1' ? 120_000 : DEFAULT_LIMITS.defaultTtlMs);
    await client.resume(created.taskId, { timeoutMs: 15_000 });
  });
});
