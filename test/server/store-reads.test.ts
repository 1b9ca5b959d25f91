/**
 * Issue 25: what a blocking v1 `tasks/result` reads from the store, and what a v1 task costs while nobody asks. Counted at the store port of a real server on
 * loopback: a session held by the server is not read for a `tools/call` or `tasks/result` (their first statement
 * checks its record: `requireSession`), and a record deleted elsewhere still answers 404 at once; statusMessage-only
 * changes of the running task do not make the waiting request re-read it, and the terminal read brings the small
 * outcome with it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import type { TaskScope, TaskStore } from '../../src/core/store.js';
import type { NewTask } from '../../src/core/task.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import type { TaskCaller } from '../../src/service/caller.js';
import { RawLegacySession } from '../helpers/sse.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';

/** Gates the test opens one at a time: the tool waits at each. */
const gates: Array<() => void> = [];
const gate = (): Promise<void> => new Promise((resolve) => gates.push(resolve));
let started = false;

const tools = [
  defineTool({
    name: 'chatty',
    description: 'Says three things while it runs, then returns.',
    execution: 'task-optional',
    inputSchema: z.object({}),
    async run(_args, ctx) {
      started = true;
      await gate();
      for (const step of ['one', 'two', 'three']) {
        ctx.setStatus(`step ${step}`);
        // Longer than the statusMessage flush interval (50 ms here): one `message` event per step.
        await new Promise((resolve) => setTimeout(resolve, 120));
      }
      await gate();
      return textResult('done');
    },
  }),
];

let running: RunningTasksServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** `target` with calls of its method `name` counted in `counts[name]`. */
function counting<T extends object>(target: T, names: ReadonlyArray<'getSession' | 'existingSessions'>): T {
  return new Proxy(target, {
    get(inner, key) {
      const value = Reflect.get(inner, key, inner) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const name = names.find((candidate) => candidate === key);
        if (name) counts[name] += 1;
        return (value as (...a: unknown[]) => unknown).apply(inner, args);
      };
    },
  });
}

const counts = { getSession: 0, existingSessions: 0, get: 0, getOutcome: 0 };
/** The `requireSession` of every task read and create, in order (`null`: none). */
const required: Array<string | null> = [];

/** `store` with its task reads (`get`, `getWithOutcome`), outcome reads and session reads counted in {@link counts}. */
function countingStore<S extends object>(store: S): TaskStore {
  return new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (key === 'sessions') return counting(value as object, ['getSession', 'existingSessions']);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (key === 'get' || key === 'getWithOutcome') {
          counts.get += 1;
          required.push((args[1] as TaskScope).requireSession ?? null);
        }
        if (key === 'create') required.push((args[0] as NewTask).requireSession === true ? String((args[0] as NewTask).sessionId) : null);
        if (key === 'getOutcome') counts.getOutcome += 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as unknown as TaskStore;
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(check()).toBe(true);
}

describe('store reads of a blocking v1 tasks/result (issue 25)', () => {
  it('R24: no session read for a held session, no task read for statusMessage changes while it waits, the outcome with the terminal read', async () => {
    running = await startTasksServer({
      tools,
      limits: { statusFlushIntervalMs: 50 },
      wrapStore: countingStore,
    });
    const session = await RawLegacySession.open(running.url);
    const created = await session.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'chatty', arguments: {}, task: {} } });
    const taskId = (created.messages[0] as { result: { task: { taskId: string } } }).result.task.taskId;
    await until(() => started && gates.length === 1);
    counts.getSession = 0;
    counts.get = 0;
    counts.getOutcome = 0;
    required.length = 0;
    const result = session.post({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } });
    await new Promise((resolve) => setTimeout(resolve, 150));
    gates.shift()?.();
    await until(() => gates.length === 1);
    gates.shift()?.();
    const answer = await result;
    expect(answer.messages.at(-1)).toMatchObject({ id: 2, result: { content: [{ type: 'text', text: 'done' }] } });
    // The session is held here: not read; the fast path's look (is it settled?) checks its record instead.
    expect(counts.getSession).toBe(0);
    expect(required[0]).toBe(session.sessionId);
    // Before the request settles: the fast path's look (the wait goes on from it) and the read on the terminal event.
    // Each of the three statusMessage events used to cost one more, and the wait's own first read one more.
    expect(counts.get).toBeLessThanOrEqual(2);
    // The terminal read brought the (small) outcome with it.
    expect(counts.getOutcome).toBe(0);
  });
});

/** A v1 requestor of the anonymous owner, calling the service directly. */
const v1Caller: TaskCaller = {
  ownerKey: 'anonymous',
  scopes: 'all',
  negotiation: 'per-session',
  generation: 'v1',
  protocolVersion: '2025-11-25',
  clientCapabilities: {},
};

/** Create a `chatty` task through `server`'s service as {@link v1Caller}; resolves once its tool waits at the first gate. */
async function startChatty(server: RunningTasksServer): Promise<string> {
  started = false;
  gates.length = 0;
  const plan = await server.server.service.calls.planCall(v1Caller, { name: 'chatty', arguments: {}, progressToken: null, task: {} });
  const outcome = await server.server.service.calls.callTool(v1Caller, plan);
  if (outcome.kind !== 'task') throw new Error(`no task: ${outcome.kind}`);
  await until(() => started && gates.length === 1);
  return outcome.task.taskId;
}

describe('openResultWait: the look of a v1 tasks/result and its wait share one read, and the end needs none when it ran here (issue 25)', () => {
  it('an end that lands between the look and the start of the wait still ends the wait (its events are followed from before the read)', async () => {
    running = await startTasksServer({ tools, wrapStore: countingStore });
    const service = running.server.service;
    const v1 = v1Caller;
    const taskId = await startChatty(running);
    counts.get = 0;
    const opened = await service.tasks.openResultWait(v1, taskId);
    if (opened === undefined || opened === 'asks') throw new Error(`not a wait: ${String(opened)}`);
    expect(opened.path).toBe('waits');
    // The run ends (and its events are delivered) before the wait starts.
    gates.shift()?.();
    await until(() => gates.length === 1);
    gates.shift()?.();
    const store = (running as RunningTasksServer).store;
    for (let i = 0; i < 500 && (await store.getUnscoped(taskId))?.status !== 'completed'; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const record = await opened.wait(AbortSignal.timeout(3_000));
    expect(record.status).toBe('completed');
    // No look read (the task was created here and nothing changed it before the look: FreshTasks), and none on the
    // terminal event either: this process's worker committed the end, and the read cache heard it as it committed.
    expect(counts.get).toBe(0);
  });

  it('negative control: an end committed by a worker in another process is read from the store on its event', async () => {
    running = await startTasksServer({ tools, wrapStore: countingStore, worker: false });
    const elsewhere = await startTasksServer({ tools, dbPath: running.dbPath });
    try {
      const service = running.server.service;
      const taskId = await startChatty(running);
      counts.get = 0;
      const opened = await service.tasks.openResultWait(v1Caller, taskId);
      if (opened === undefined || opened === 'asks') throw new Error(`not a wait: ${String(opened)}`);
      const waited = opened.wait(AbortSignal.timeout(5_000));
      gates.shift()?.();
      await until(() => gates.length === 1);
      gates.shift()?.();
      expect((await waited).status).toBe('completed');
      expect(counts.get).toBeGreaterThanOrEqual(1);
    } finally {
      await elsewhere.close();
    }
  });
});

describe('a blocking v1 tasks/result of a task created here starts without a read (issue 25: FreshTasks)', () => {
  const held = defineTool({
    name: 'held',
    description: 'Waits for the test, then returns.',
    execution: 'task-optional',
    inputSchema: z.object({}),
    async run() {
      started = true;
      await gate();
      return textResult('released');
    },
  });
  const others: RunningTasksServer[] = [];
  afterEach(async () => {
    for (const other of others.splice(0)) await other.close();
  });

  async function createHeld(server: RunningTasksServer): Promise<{ session: RawLegacySession; taskId: string }> {
    started = false;
    gates.length = 0;
    const session = await RawLegacySession.open(server.url);
    const created = await session.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'held', arguments: {}, task: {} } });
    const taskId = (created.messages[0] as { result: { task: { taskId: string } } }).result.task.taskId;
    await until(() => started && gates.length === 1);
    return { session, taskId };
  }

  it('one task read (on its end, with the session check), not two; the answer is the result', async () => {
    running = await startTasksServer({ tools: [held], wrapStore: countingStore });
    const { session, taskId } = await createHeld(running);
    counts.get = 0;
    required.length = 0;
    const answer = session.post({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(counts.get).toBe(0);
    gates.shift()?.();
    const answered = await answer;
    expect(answered.status).toBe(200);
    expect(answered.messages.at(-1)).toMatchObject({ id: 2, result: { content: [{ type: 'text', text: 'released' }] } });
    expect(counts.get).toBe(1);
    expect(required).toEqual([session.sessionId]);
  });

  it('negative control: a task another instance created (same database) is read by the look first', async () => {
    running = await startTasksServer({ tools: [held], wrapStore: countingStore });
    const other = await startTasksServer({ tools: [held], dbPath: running.dbPath, wrapStore: countingStore });
    others.push(other);
    const { taskId } = await createHeld(running);
    const session = await RawLegacySession.open(other.url);
    counts.get = 0;
    const answer = session.post({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } });
    await until(() => counts.get === 1);
    gates.shift()?.();
    expect((await answer).messages.at(-1)).toMatchObject({ id: 2, result: { content: [{ type: 'text', text: 'released' }] } });
    expect(counts.get).toBe(2);
  });

  it('a session deleted elsewhere before the request is still answered 404: at the end of a short task', async () => {
    running = await startTasksServer({ tools: [held], wrapStore: countingStore });
    const { session, taskId } = await createHeld(running);
    expect(await running.store.sessions.deleteSession(session.sessionId)).toBe(true);
    const answer = session.post({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    gates.shift()?.();
    const refused = await answer;
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({ error: { code: -32001 } });
  });

  it('… and for a task still running after the held-back time, by one session read before any header (the wait stops)', async () => {
    running = await startTasksServer({ tools: [held], wrapStore: countingStore });
    const { session, taskId } = await createHeld(running);
    expect(await running.store.sessions.deleteSession(session.sessionId)).toBe(true);
    counts.get = 0;
    const askedAt = Date.now();
    const refused = await session.post({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } });
    expect(refused.status).toBe(404);
    expect(Date.now() - askedAt).toBeGreaterThanOrEqual(900);
    expect(counts.get).toBe(0);
    gates.shift()?.();
  });

  it('negative control: the session still there, a task longer than the held-back time gets its headers, then its result', async () => {
    running = await startTasksServer({ tools: [held], wrapStore: countingStore });
    const { session, taskId } = await createHeld(running);
    const answer = session.post({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } });
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    gates.shift()?.();
    const answered = await answer;
    expect(answered.status).toBe(200);
    expect(answered.messages.at(-1)).toMatchObject({ id: 2, result: { content: [{ type: 'text', text: 'released' }] } });
  });
});

describe('the session check of a v1 request folded into its first statement (issue 25)', () => {
  const echo = defineTool({
    name: 'echo',
    description: 'Returns at once.',
    execution: 'task-optional',
    inputSchema: z.object({}),
    run: async () => textResult('echoed'),
  });

  it('tasks/get of a held session reads no session record: its task read checks it (issue 25: one session read per poll before)', async () => {
    running = await startTasksServer({ tools: [echo], wrapStore: countingStore });
    const session = await RawLegacySession.open(running.url);
    const created = await session.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {}, task: {} } });
    const taskId = (created.messages[0] as { result: { task: { taskId: string } } }).result.task.taskId;
    counts.getSession = 0;
    required.length = 0;
    for (let id = 2; id < 5; id++) {
      const polled = await session.post({ jsonrpc: '2.0', id, method: 'tasks/get', params: { taskId } });
      expect(polled.messages.at(-1)).toMatchObject({ id, result: { taskId } });
    }
    expect(counts.getSession).toBe(0);
    expect(required.length).toBeGreaterThanOrEqual(3);
    expect(required.every((entry) => entry === session.sessionId)).toBe(true);
    // A task that is not there (foreign, or never created) is still "not found", not a missing session.
    const missing = await session.post({ jsonrpc: '2.0', id: 9, method: 'tasks/get', params: { taskId: 'no-such-task' } });
    expect(missing.status).toBe(200);
    expect(missing.messages.at(-1)).toMatchObject({ id: 9, error: { code: -32602 } });
  });

  it('tools/call and tasks/result of a held session read no session record: the create and the first task read check it', async () => {
    running = await startTasksServer({ tools: [echo], wrapStore: countingStore });
    const session = await RawLegacySession.open(running.url);
    counts.getSession = 0;
    required.length = 0;
    const created = await session.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {}, task: {} } });
    const taskId = (created.messages[0] as { result: { task: { taskId: string } } }).result.task.taskId;
    const answer = await session.post({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } });
    expect(answer.messages.at(-1)).toMatchObject({ id: 2, result: { content: [{ type: 'text', text: 'echoed' }] } });
    expect(counts.getSession).toBe(0);
    // The create and the fast path's first read of tasks/result carry the session; reads after it do not.
    expect(required.slice(0, 2)).toEqual([session.sessionId, session.sessionId]);
    expect(required.slice(2).every((entry) => entry === null)).toBe(true);
  });

  it.each([
    { method: 'tools/call', what: 'tools/call creates nothing' },
    { method: 'tasks/result', what: 'tasks/result of a completed task' },
    { method: 'tasks/get', what: 'tasks/get of a completed task' },
  ])('a record deleted elsewhere (as by a DELETE on another instance) answers HTTP 404 at the next request, held copy or not: $what', async ({ method }) => {
    running = await startTasksServer({ tools: [echo], wrapStore: countingStore });
    const store = running.store;
    const session = await RawLegacySession.open(running.url);
    const created = await session.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {}, task: {} } });
    const taskId = (created.messages[0] as { result: { task: { taskId: string } } }).result.task.taskId;
    // Settled and cached as terminal here: the fold must not answer from the cache.
    expect((await session.post({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } })).messages.at(-1)).toMatchObject({ id: 2 });
    const before = (await store.list({ ownerKey: 'anonymous', generation: 'v1' }, { afterSeq: 0, limit: 100 })).length;
    expect(await store.sessions.deleteSession(session.sessionId)).toBe(true);
    const params = method === 'tools/call' ? { name: 'echo', arguments: {}, task: {} } : { taskId };
    const refused = await session.post({ jsonrpc: '2.0', id: 3, method, params });
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({ error: { code: -32001 } });
    expect((await store.list({ ownerKey: 'anonymous', generation: 'v1' }, { afterSeq: 0, limit: 100 })).length).toBe(before);
    // The local copy is closed: the next request reads the (missing) record and is answered 404 too.
    expect((await session.post({ jsonrpc: '2.0', id: 4, method: 'tasks/get', params: { taskId } })).status).toBe(404);
  });
});

describe('the recheck of the sessions held here (issue 25)', () => {
  it('one statement for every held session every 2 s: copies whose record is gone are closed (their GET streams end), the others stay', async () => {
    running = await startTasksServer({ tools, wrapStore: countingStore });
    const sessions = await Promise.all([0, 1, 2].map(() => RawLegacySession.open((running as RunningTasksServer).url)));
    const streams = await Promise.all(sessions.map((session) => session.getStream()));
    try {
      counts.getSession = 0;
      counts.existingSessions = 0;
      const store = (running as RunningTasksServer).store;
      await store.sessions.deleteSession(sessions[0]!.sessionId);
      await store.sessions.deleteSession(sessions[2]!.sessionId);
      await until(() => streams[0]!.sse?.done === true && streams[2]!.sse?.done === true);
      expect(streams[1]!.sse?.done).toBe(false);
      expect(counts.getSession).toBe(0);
      // One recheck (every 2 s) sufficed; at most one more ran meanwhile.
      expect(counts.existingSessions).toBeGreaterThanOrEqual(1);
      expect(counts.existingSessions).toBeLessThanOrEqual(2);
    } finally {
      for (const stream of streams) stream.close();
    }
  });
});

describe('store reads of a v1 task nobody asks about (issue 25)', () => {
  it.each([
    { stream: false, what: 'over HTTP without a GET stream: its status changes are not watched (the SDK would drop the notifications)' },
    { stream: true, what: 'negative control: with the GET stream open, each status change is read and pushed' },
  ])('R33: $what', async ({ stream }) => {
    running = await startTasksServer({
      tools,
      limits: { statusFlushIntervalMs: 50 },
      wrapStore: countingStore,
    });
    started = false;
    const session = await RawLegacySession.open(running.url);
    const events = stream ? await session.getStream() : undefined;
    try {
      counts.get = 0;
      const created = await session.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'chatty', arguments: {}, task: {} } });
      const taskId = (created.messages[0] as { result: { task: { taskId: string } } }).result.task.taskId;
      await until(() => started && gates.length === 1);
      gates.shift()?.();
      await until(() => gates.length === 1);
      gates.shift()?.();
      const store = (running as RunningTasksServer).store;
      for (let i = 0; i < 500 && (await store.getUnscoped(taskId))?.status !== 'completed'; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
      // The completed status reaches the stream, read once per status change (working, completed) when it is open.
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (stream) expect(counts.get).toBeGreaterThanOrEqual(1);
      else expect(counts.get).toBe(0);
    } finally {
      events?.close();
    }
  });
});
