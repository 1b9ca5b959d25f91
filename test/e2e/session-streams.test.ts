/**
 * Issue 11 item 5 / acceptance 2: a 2025-11-25 session's GET stream on ANY instance carries the session's task
 * notifications. Real processes on one PostgreSQL: API instances A and B (`serve --no-worker`), C the same with the
 * stream following switched off (`MCP_TASKS_TEST_NO_STREAM_FOLLOW=1`, the negative control), one `worker`. The
 * session's `tools/call` goes to A while its GET stream is held by B (or C); B learns of the task from its `created`
 * event (which names the session) through the event feed (LISTEN/NOTIFY), and of tasks created before the stream
 * opened from the store.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ensureBuilt } from '../cli/support.js';
import { connectV1Http, type HttpRecorder, pollUntil, type V1HttpClient } from '../helpers/official-clients.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { eventually, runNotes } from '../helpers/run-notes.js';
import { type ServerProcess, startServerProcess, startWorkerProcess, type WorkerProcess } from '../helpers/server-process.js';
import { type OpenStream, RawLegacySession, SseMessages } from '../helpers/sse.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/worker-tools.mjs');
const SECRET = 'session-streams-e2e-secret-0123456789abcdef';

type Message = Record<string, unknown>;
const params = (message: Message) => (message.params ?? {}) as Record<string, unknown>;
const isStatusOf = (taskId: string, status?: string) => (message: Message) =>
  message.method === 'notifications/tasks/status' && params(message).taskId === taskId && (status === undefined || params(message).status === status);
const statusesOf = (sse: SseMessages, taskId: string) => sse.messages.filter(isStatusOf(taskId)).map((message) => params(message).status);

function sseOf(stream: OpenStream): SseMessages {
  if (!stream.sse) throw new Error(`the GET stream was not opened: HTTP ${stream.status} ${JSON.stringify(stream.json?.body)}`);
  return stream.sse;
}

async function createTask(session: RawLegacySession, url: string, args: Record<string, unknown>, id: number): Promise<string> {
  const created = await session.post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'role_job', arguments: args, task: {} } }, { url });
  const taskId = (created.body.result?.task as { taskId?: unknown } | undefined)?.taskId;
  if (typeof taskId !== 'string') throw new Error(`tools/call created no task: ${JSON.stringify(created.body)}`);
  return taskId;
}

async function statusOn(session: RawLegacySession, url: string, taskId: string, id: number): Promise<unknown> {
  return (await session.post({ jsonrpc: '2.0', id, method: 'tasks/get', params: { taskId } }, { url })).body.result?.status;
}

describe("a v1 session's GET stream on any instance carries its task notifications (PostgreSQL, real processes)", () => {
  const temp = makeTempDir('mcp-tasks-session-streams-');
  let database: TestDatabase;
  let a: ServerProcess;
  let b: ServerProcess;
  let c: ServerProcess;
  let worker: WorkerProcess;
  const streams: OpenStream[] = [];

  beforeAll(async () => {
    ensureBuilt();
    database = await createTestDatabase();
    const env = { MCP_TASKS_SECRET: SECRET };
    const shared = ['--no-worker', '--store', database.url, '--no-builtins', '--tools', TOOLS];
    [a, b, c] = await Promise.all([
      startServerProcess(join(temp.dir, 'api-a'), [...shared, '--instance-id', 'api-a'], env),
      startServerProcess(join(temp.dir, 'api-b'), [...shared, '--instance-id', 'api-b'], env),
      startServerProcess(join(temp.dir, 'api-c'), [...shared, '--instance-id', 'api-c'], { ...env, MCP_TASKS_TEST_NO_STREAM_FOLLOW: '1' }),
    ]);
    worker = await startWorkerProcess(
      ['--data-dir', join(temp.dir, 'worker'), '--store', database.url, '--no-builtins', '--tools', TOOLS, '--instance-id', 'worker-1', '--concurrency', '4'],
      env,
    );
  }, 60_000);
  afterAll(async () => {
    for (const stream of streams) stream.close();
    await worker?.stop();
    await Promise.all([a?.stop(), b?.stop(), c?.stop()]);
    await database?.drop();
    temp.remove();
  });

  const open = async (session: RawLegacySession, url: string): Promise<SseMessages> => {
    const stream = await session.getStream(url);
    streams.push(stream);
    return sseOf(stream);
  };

  it("R33/R34: GET stream on B, tools/call on A — B's stream gets notifications/tasks/status working → completed (the full Task, each status once)", async () => {
    const session = await RawLegacySession.open(a.url);
    const onB = await open(session, b.url);
    const log = join(temp.dir, 'ab.log');
    const taskId = await createTask(session, a.url, { log, ms: 400 }, 1);
    await onB.waitFor(isStatusOf(taskId, 'completed'), { what: "completed on B's GET stream" });
    expect(statusesOf(onB, taskId)).toEqual(['working', 'completed']);
    const final = (await session.post({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId } }, { url: a.url })).body.result as Record<
      string,
      unknown
    >;
    const pushed = params(onB.messages.find(isStatusOf(taskId, 'completed'))!);
    expect(pushed).toMatchObject({ taskId, status: 'completed', createdAt: final.createdAt, lastUpdatedAt: final.lastUpdatedAt, ttl: final.ttl });
    expect(runNotes(log).map((note) => note.pid)).toContain(worker.child.pid);
  });

  it('a task created before the stream opened is followed from the store (its current status first); DELETE on A ends the stream on B', async () => {
    const session = await RawLegacySession.open(a.url);
    const log = join(temp.dir, 'before.log');
    const taskId = await createTask(session, a.url, { log }, 1);
    await eventually('the run to start', () => runNotes(log).find((note) => note.event === 'start'));
    const onB = await open(session, b.url);
    await onB.waitFor(isStatusOf(taskId, 'working'), { what: 'the working snapshot on B' });
    writeFileSync(`${log}.release`, '');
    await onB.waitFor(isStatusOf(taskId, 'completed'), { what: 'completed on B' });
    expect(statusesOf(onB, taskId)).toEqual(['working', 'completed']);
    // Another session's task never reaches this stream.
    const other = await RawLegacySession.open(a.url);
    const foreign = await createTask(other, a.url, { log: join(temp.dir, 'foreign.log'), ms: 50 }, 1);
    await pollUntil(
      () => statusOn(other, a.url, foreign, 2),
      (status) => status === 'completed',
      { what: "the other session's task to complete" },
    );
    // The session ends everywhere: B closes its copy and its stream (the record is gone from the store).
    expect((await fetch(a.url, { method: 'DELETE', headers: session.headers() })).status).toBe(200);
    await eventually("B's GET stream to end", () => onB.done || undefined, 10_000);
    expect(onB.messages.filter((message) => JSON.stringify(message).includes(foreign))).toEqual([]);
  });

  it("the SDK 1.32.2 v1 client: POSTs to A, its GET stream on B — the task's status notifications arrive", async () => {
    const tapped: SseMessages[] = [];
    // The client's own transport, with its GET (the standalone SSE stream) sent to B and read here too.
    const wrap =
      (recorded: HttpRecorder['fetch']): HttpRecorder['fetch'] =>
      async (input, init) => {
        const isGet = (init?.method ?? 'GET') === 'GET';
        const response = await recorded(isGet ? b.url : input, init);
        if (isGet && response.ok && response.body && (response.headers.get('content-type') ?? '').includes('text/event-stream')) {
          const [mine, theirs] = response.body.tee();
          tapped.push(new SseMessages(mine));
          return new Response(theirs, { status: response.status, statusText: response.statusText, headers: response.headers });
        }
        return response;
      };
    let client: V1HttpClient | undefined;
    try {
      client = await connectV1Http(a.url, { wrapFetch: wrap });
      const seen: Message[] = [];
      client.client.fallbackNotificationHandler = async (notification) => void seen.push(notification as unknown as Message);
      const created = await client.client.request(
        { method: 'tools/call', params: { name: 'role_job', arguments: { log: join(temp.dir, 'sdk.log'), ms: 300 } } },
        CreateTaskResultSchema,
        { task: {} },
      );
      const taskId = created.task.taskId;
      await pollUntil(
        async () => tapped.flatMap((sse) => sse.messages).find(isStatusOf(taskId, 'completed')),
        (found) => found !== undefined,
        { what: "completed on the SDK client's GET stream (B)" },
      );
      expect(tapped.length).toBeGreaterThan(0);
      expect(
        tapped
          .flatMap((sse) => sse.messages)
          .filter(isStatusOf(taskId))
          .map((message) => params(message).status),
      ).toEqual(['working', 'completed']);
    } finally {
      await client?.close();
    }
  });

  it("negative control: with the following off (C), the GET stream on C gets nothing for a task created on A, while B's does", async () => {
    const controlled = await RawLegacySession.open(a.url);
    const witness = await RawLegacySession.open(a.url);
    const onC = await open(controlled, c.url);
    const onB = await open(witness, b.url);
    const quiet = await createTask(controlled, a.url, { log: join(temp.dir, 'quiet.log'), ms: 200 }, 1);
    const heard = await createTask(witness, a.url, { log: join(temp.dir, 'heard.log'), ms: 200 }, 1);
    await onB.waitFor(isStatusOf(heard, 'completed'), { what: 'completed on B' });
    await pollUntil(
      () => statusOn(controlled, a.url, quiet, 2),
      (status) => status === 'completed',
      { what: 'the controlled task to complete' },
    );
    // Give C the same time B needed and more: nothing is on its way.
    await new Promise((done) => setTimeout(done, 1_500));
    expect(onC.done).toBe(false);
    expect(onC.messages).toEqual([]);
    expect(onC.messages.filter((message) => message.method === 'notifications/tasks/status')).toEqual([]);
  });
});

describe('the same on SQLite: two `serve` processes (embedded workers) on one file', () => {
  const temp = makeTempDir('mcp-tasks-session-streams-sqlite-');
  let a: ServerProcess;
  let b: ServerProcess;
  const streams: OpenStream[] = [];

  beforeAll(async () => {
    ensureBuilt();
    const env = { MCP_TASKS_SECRET: SECRET };
    const shared = ['--store', join(temp.dir, 'tasks.db'), '--no-builtins', '--tools', TOOLS];
    a = await startServerProcess(join(temp.dir, 'a'), [...shared, '--instance-id', 'serve-a'], env);
    b = await startServerProcess(join(temp.dir, 'b'), [...shared, '--instance-id', 'serve-b'], env);
  }, 60_000);
  afterAll(async () => {
    for (const stream of streams) stream.close();
    await Promise.all([a?.stop(), b?.stop()]);
    temp.remove();
  });

  it("GET stream on B, tools/call on A: B's stream gets working → completed (through the tail of the shared file)", async () => {
    const session = await RawLegacySession.open(a.url);
    const stream = await session.getStream(b.url);
    streams.push(stream);
    const onB = sseOf(stream);
    const taskId = await createTask(session, a.url, { log: join(temp.dir, 'sqlite.log'), ms: 400 }, 1);
    await onB.waitFor(isStatusOf(taskId, 'completed'), { what: "completed on B's GET stream" });
    expect(statusesOf(onB, taskId)).toEqual(['working', 'completed']);
  });
});
