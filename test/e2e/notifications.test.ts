/**
 * Task notifications end to end over HTTP against a real server with a real SQLite file (issue 3 §2, acceptance 3):
 * - v2: `subscriptions/listen` with `notifications.taskIds` (SEP-2663 E33–E37, base B18/B19), raw SSE;
 * - v1: `notifications/tasks/status` and `notifications/progress` on a 2025-11-25 session's GET stream (R31–R36), read
 *   off the stream of the real SDK 1.32.2 client as it arrives.
 */
import { randomUUID } from 'node:crypto';

import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { connectV1Http, gatedTools, Gates, type HttpRecorder, pollUntil, RANDOM_ID, RELATED_TASK, type V1HttpClient } from '../helpers/official-clients.js';
import { openListen, type OpenStream, SseMessages } from '../helpers/sse.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern, TASKS_EXTENSION } from '../helpers/wire.js';

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
const ATTEMPT = 'dev.mcp-tasks/attempt';
const ELICITING = { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {} } };
const YES = { action: 'accept', content: { confirm: true } };
const TERMINAL = ['completed', 'failed', 'cancelled'];
const ISSUER = 'https://issuer.e2e.test';
const TOKEN_A = 'listen-owner-a-token-0123456789';
const TOKEN_B = 'listen-owner-b-token-0123456789';

async function createRaw(url: string, name: string, args: Record<string, unknown>, token?: string): Promise<string> {
  const response = await postModern(url, 'tools/call', { name, arguments: args }, { capabilities: ELICITING, ...(token ? { token } : {}) });
  const taskId = response.body.result?.taskId;
  if (response.body.result?.resultType !== 'task' || typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(response.body)}`);
  return taskId;
}

function sse(stream: OpenStream): SseMessages {
  if (!stream.sse) throw new Error(`no SSE stream (HTTP ${stream.status}): ${JSON.stringify(stream.json?.body)}`);
  return stream.sse;
}

const taskNotes = (messages: SseMessages, taskId: string) =>
  messages.messages.filter((message) => message.method === 'notifications/tasks' && (message.params as { taskId?: string }).taskId === taskId);
const params = (message: Record<string, unknown>) => message.params as Record<string, any>;
/** Consecutive duplicates collapsed: several events may leave a task in the same status. */
const transitions = (statuses: string[]) => statuses.filter((status, index) => status !== statuses[index - 1]);

describe('v2 subscriptions/listen with taskIds', () => {
  const gates = new Gates();
  let running: RunningTasksServer;
  const streams: OpenStream[] = [];

  beforeAll(async () => {
    // One slot: a gated task in front keeps the next task queued (still `working`) until the test lets it run.
    running = await startTasksServer({ tools: [...conformanceFixtureTools(), ...gatedTools(gates)], limits: { pollIntervalMs: 50, concurrency: 1 } });
  });
  afterAll(async () => {
    for (const stream of streams) stream.close();
    await running?.close();
  });

  async function listen(
    notifications: Record<string, unknown>,
    id: string | number,
    options: { capabilities?: object; token?: string } = {},
  ): Promise<OpenStream> {
    const stream = await openListen(running.url, notifications, { id, ...options });
    streams.push(stream);
    return stream;
  }

  /** Check the notifications of one task: tagged, DetailedTask without resultType, each equal to a tasks/get shape. */
  async function checkNotes(messages: SseMessages, taskId: string, subscriptionId: string, completed: Record<string, unknown>): Promise<void> {
    for (const message of messages.messages) {
      // Tagged with the subscription id (B19); a task's notification also names its run (issue 26), nothing else.
      const { [ATTEMPT]: attempt, ...tag } = (params(message)._meta ?? {}) as Record<string, unknown>;
      expect(tag).toEqual({ [SUBSCRIPTION_ID]: subscriptionId });
      // Absent while no run has started (queued, or asking before it starts); the one run here is attempt 1.
      if (message.method === 'notifications/tasks') expect([undefined, 1]).toContain(attempt);
      if (message.method === 'notifications/tasks' && params(message).status === 'completed') expect(attempt).toBe(1);
    }
    for (const note of taskNotes(messages, taskId)) {
      // E33/E19: a DetailedTask without resultType; input_required lists every outstanding request (never none).
      expect(params(note)).not.toHaveProperty('resultType');
      expect(params(note)).toMatchObject({ taskId, createdAt: expect.any(String), lastUpdatedAt: expect.any(String) });
      if (params(note).status === 'input_required')
        expect(Object.keys(params(note).inputRequests ?? {}), `input_required notification ${JSON.stringify(note)}`).toEqual(['input-1']);
      else expect(params(note)).not.toHaveProperty('inputRequests');
    }
    // The terminal notification is the tasks/get answer of that moment (E33), minus resultType.
    const { resultType: _resultType, _meta: _getMeta, ...got } = (await postModern(running.url, 'tasks/get', { taskId })).body.result ?? {};
    const { _meta: _noteMeta, ...last } = params(completed);
    expect(last).toEqual(got);
    // E37: no progress or message notifications on a listen stream.
    expect(messages.messages.filter((message) => message.method === 'notifications/progress' || message.method === 'notifications/message')).toEqual([]);
  }

  it('E33/E34/B18/B19/C-V2-21 acceptance 3: working → input_required → working → completed with the result inline; ack first, every message tagged with the subscription id', async () => {
    const blocker = randomUUID();
    await createRaw(running.url, 'gated', { gate: blocker });
    await gates.started(blocker);
    // confirm_delete is created `working` and stays so (queued behind the blocker) while the client subscribes.
    const taskId = await createRaw(running.url, 'confirm_delete', { filename: 'listened.txt' });
    const stream = await listen({ taskIds: [taskId, RANDOM_ID] }, 'listen-7');
    expect(stream.status).toBe(200);
    const messages = sse(stream);

    // B18/E34: the acknowledgement comes first and lists only the ids agreed to (the unknown one is left out).
    const ack = await messages.waitFor(() => true, { what: 'first message' });
    expect(ack).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: [taskId] }, _meta: { [SUBSCRIPTION_ID]: 'listen-7' } },
    });
    gates.open(blocker);

    // Answer when a notification shows input_required (no polling needed).
    const waiting = await messages.waitFor((message) => message.method === 'notifications/tasks' && params(message).status === 'input_required', {
      what: 'input_required notification',
    });
    expect(params(waiting)).toMatchObject({
      taskId,
      inputRequests: { 'input-1': { method: 'elicitation/create', params: { message: 'Delete listened.txt?' } } },
    });
    const answered = await postModern(running.url, 'tasks/update', { taskId, inputResponses: { 'input-1': YES } });
    expect(answered.body.result?.resultType).toBe('complete');

    const completed = await messages.waitFor((message) => message.method === 'notifications/tasks' && TERMINAL.includes(params(message).status), {
      what: 'terminal notification',
    });
    expect(params(completed).status).toBe('completed');
    expect(params(completed).result).toMatchObject({ content: [{ type: 'text', text: 'Deleted listened.txt' }] });

    const statuses = taskNotes(messages, taskId).map((note) => params(note).status as string);
    expect.soft(transitions(statuses), `statuses pushed: ${statuses.join(' → ')}`).toEqual(['working', 'input_required', 'working', 'completed']);
    await checkNotes(messages, taskId, 'listen-7', completed);
  });

  it('E33/E34 subscribing right after creation races the task: the stream must still tell a client that subscribes after the task parked that it waits for input', async () => {
    const taskId = await createRaw(running.url, 'confirm_delete', { filename: 'late-listener.txt' });
    // Make the race certain: the task has already parked when the listen request arrives.
    await pollModernTask(running.url, taskId, { until: (status) => status === 'input_required' });
    const stream = await listen({ taskIds: [taskId] }, 'listen-late');
    const messages = sse(stream);
    expect(params(await messages.waitFor(() => true, { what: 'ack' })).notifications).toEqual({ taskIds: [taskId] });

    // Driven by notifications alone: without the task's current state after the ack, nothing ever arrives here.
    const waiting = await messages.waitFor((message) => message.method === 'notifications/tasks' && params(message).status === 'input_required', {
      what: 'current state (input_required) after the ack',
      timeoutMs: 10_000,
    });
    expect(params(waiting).inputRequests).toMatchObject({ 'input-1': { method: 'elicitation/create' } });
    await postModern(running.url, 'tasks/update', { taskId, inputResponses: { 'input-1': YES } });
    const completed = await messages.waitFor((message) => message.method === 'notifications/tasks' && TERMINAL.includes(params(message).status), {
      what: 'terminal notification',
    });
    expect(params(completed).result).toMatchObject({ content: [{ type: 'text', text: 'Deleted late-listener.txt' }] });
    expect(transitions(taskNotes(messages, taskId).map((note) => params(note).status as string))).toEqual(['input_required', 'working', 'completed']);
    await checkNotes(messages, taskId, 'listen-late', completed);
  });

  it('B18 listen without taskIds is left to the SDK: acknowledged with the subset it honours, no task ids', async () => {
    const stream = await listen({ toolsListChanged: true }, 'listen-sdk');
    expect(stream.status).toBe(200);
    const ack = await sse(stream).waitFor(() => true, { what: 'first message' });
    expect(ack).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { _meta: { [SUBSCRIPTION_ID]: 'listen-sdk' } } });
    expect(params(ack).notifications).not.toHaveProperty('taskIds');
  });

  it('E34/B18 taskIds together with a list-changed filter: one stream whose ack lists both honoured subsets (the list-changed part as the SDK honours it without taskIds)', async () => {
    const sdkStream = await listen({ toolsListChanged: true }, 'listen-sdk-only');
    const sdkHonoured = params(await sse(sdkStream).waitFor(() => true, { what: 'SDK ack' })).notifications as Record<string, unknown>;
    const taskId = await createRaw(running.url, 'slow_compute', { seconds: 0 });
    const stream = await listen({ taskIds: [taskId], toolsListChanged: true }, 'listen-both');
    const ack = await sse(stream).waitFor(() => true, { what: 'first message' });
    expect(ack).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { ...sdkHonoured, taskIds: [taskId] }, _meta: { [SUBSCRIPTION_ID]: 'listen-both' } },
    });
  });

  it('E35/E41/C-V2-20 listen with taskIds but without the extension is rejected as a whole: -32021 with requiredCapabilities, HTTP 400', async () => {
    const taskId = await createRaw(running.url, 'slow_compute', { seconds: 0 });
    for (const notifications of [{ taskIds: [taskId] }, { taskIds: [taskId], toolsListChanged: true }]) {
      const stream = await listen(notifications, 'listen-undeclared', { capabilities: { elicitation: {} } });
      expect(stream.status).toBe(400);
      expect(stream.sse).toBeUndefined();
      expect(stream.json?.body).toMatchObject({
        jsonrpc: '2.0',
        id: 'listen-undeclared',
        error: { code: -32021, data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } } },
      });
    }
  });
});

describe('v2 subscriptions/listen across owners (authentication on)', () => {
  let running: RunningTasksServer;
  const streams: OpenStream[] = [];

  beforeAll(async () => {
    const auth = new TokenFileAuthenticator({
      tokens: [
        { token: TOKEN_A, issuer: ISSUER, subject: 'alice', tenant: 'acme' },
        { token: TOKEN_B, issuer: ISSUER, subject: 'bob', tenant: 'acme' },
      ],
    });
    running = await startTasksServer({ tools: conformanceFixtureTools(), auth, limits: { pollIntervalMs: 50 } });
  });
  afterAll(async () => {
    for (const stream of streams) stream.close();
    await running?.close();
  });

  it('E45/C-SEC-07 another owner cannot subscribe to a task it does not own: its ack lists only its own ids and nothing is delivered for the foreign task', async () => {
    const taskId = await createRaw(running.url, 'confirm_delete', { filename: 'alice.txt' }, TOKEN_A);
    const bobsOwn = await createRaw(running.url, 'slow_compute', { seconds: 0 }, TOKEN_B);
    await pollModernTask(running.url, bobsOwn, { token: TOKEN_B });
    const intruder = await openListen(running.url, { taskIds: [taskId, bobsOwn] }, { id: 'listen-bob', token: TOKEN_B });
    streams.push(intruder);
    const owner = await openListen(running.url, { taskIds: [taskId] }, { id: 'listen-alice', token: TOKEN_A });
    streams.push(owner);
    expect(intruder.status).toBe(200);
    const bob = sse(intruder);
    const alice = sse(owner);
    expect(await bob.waitFor(() => true, { what: 'ack' })).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: [bobsOwn] }, _meta: { [SUBSCRIPTION_ID]: 'listen-bob' } },
    });
    expect(params(await alice.waitFor(() => true, { what: 'ack' })).notifications).toEqual({ taskIds: [taskId] });

    // Drive A's task to the end; A's own stream is the witness that every notification has been sent.
    await pollModernTask(running.url, taskId, { token: TOKEN_A, until: (status) => status === 'input_required' });
    await postModern(running.url, 'tasks/update', { taskId, inputResponses: { 'input-1': YES } }, { token: TOKEN_A });
    await alice.waitFor((message) => message.method === 'notifications/tasks' && params(message).status === 'completed', { what: 'owner sees completed' });
    // B's stream never names A's task: no notification, not even a hint that it exists.
    expect(bob.messages.filter((message) => JSON.stringify(message).includes(taskId))).toEqual([]);
    expect(taskNotes(bob, taskId)).toEqual([]);
  });
});

/** Reads every GET (standalone SSE) stream the SDK client opens, as it arrives, while the client reads it too. */
class GetStreamTap {
  readonly streams: SseMessages[] = [];

  wrap =
    (recorded: HttpRecorder['fetch']): HttpRecorder['fetch'] =>
    async (input, init) => {
      const response = await recorded(input, init);
      const isGet = (init?.method ?? 'GET') === 'GET';
      if (isGet && response.ok && response.body && (response.headers.get('content-type') ?? '').includes('text/event-stream')) {
        const [mine, theirs] = response.body.tee();
        this.streams.push(new SseMessages(mine));
        return new Response(theirs, { status: response.status, statusText: response.statusText, headers: response.headers });
      }
      return response;
    };

  get messages(): Array<Record<string, unknown>> {
    return this.streams.flatMap((stream) => stream.messages);
  }

  waitFor(match: (message: Record<string, unknown>) => boolean, what: string): Promise<Record<string, unknown>> {
    return pollUntil(
      async () => this.messages.find(match),
      (found) => found !== undefined,
      { what },
    ) as Promise<Record<string, unknown>>;
  }
}

const isStatusOf = (taskId: string, status?: string) => (message: Record<string, unknown>) =>
  message.method === 'notifications/tasks/status' && params(message).taskId === taskId && (status === undefined || params(message).status === status);

describe('v1 session notifications on the GET stream (SDK 1.32.2 client)', () => {
  const gates = new Gates();
  let lateReported: () => void = () => {};
  const lateDone = new Promise<void>((resolve) => (lateReported = resolve));
  const progressJob = defineTool({
    name: 'progress_job',
    description: 'Reports progress, waits for a gate, reports again, then finishes; a stray report follows later.',
    execution: 'task-optional',
    idempotent: true,
    inputSchema: z.object({ gate: z.string() }),
    async run({ gate }, ctx) {
      ctx.progress(1, 3, 'step');
      ctx.progress(2, 3, 'step');
      await gates.wait(gate, ctx.signal);
      ctx.progress(3, 3, 'step');
      // A report after the run has ended must never reach the client (R36: progress stops at terminal).
      void gates.wait(`${gate}-late`).then(() => {
        ctx.progress(4, 4, 'late');
        lateReported();
      });
      return textResult(`progressed ${gate}`);
    },
  });

  let running: RunningTasksServer;
  let v1: V1HttpClient;
  let other: V1HttpClient;
  const tap = new GetStreamTap();

  beforeAll(async () => {
    running = await startTasksServer({ tools: [...conformanceFixtureTools(), progressJob], limits: { pollIntervalMs: 50 } });
    v1 = await connectV1Http(running.url, { capabilities: { elicitation: { form: {} } }, wrapFetch: tap.wrap });
    other = await connectV1Http(running.url);
  });
  afterAll(async () => {
    await v1?.close();
    await other?.close();
    await running?.close();
  });

  it("R33/R34/C-V1-16 notifications/tasks/status on the GET stream for a task created in the session: the full Task, no related-task _meta; none for another session's task", async () => {
    // A task of another session, finished before ours starts.
    const foreign = (
      await other.client.request({ method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 0 } } }, CreateTaskResultSchema, { task: {} })
    ).task.taskId;
    await pollUntil(
      () => other.client.experimental.tasks.getTask(foreign),
      (task) => task.status === 'completed',
      { what: 'foreign task completed' },
    );

    // The session's own confirm_delete: the client answers only once the input_required push has arrived.
    let taskId = '';
    v1.client.setRequestHandler(ElicitRequestSchema, async () => {
      await tap.waitFor(isStatusOf(taskId, 'input_required'), 'input_required status notification');
      return YES as never;
    });
    const created = await v1.client.request(
      { method: 'tools/call', params: { name: 'confirm_delete', arguments: { filename: 'pushed.txt' } } },
      CreateTaskResultSchema,
      { task: {} },
    );
    taskId = created.task.taskId;
    const result = await v1.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'Deleted pushed.txt' }]);
    await tap.waitFor(isStatusOf(taskId, 'completed'), 'completed status notification');

    const pushed = tap.messages.filter(isStatusOf(taskId));
    const statuses = pushed.map((message) => params(message).status as string);
    // R34 allows sending only some changes; what is sent follows the lifecycle and ends terminal.
    expect(statuses[0]).toBe('input_required');
    expect(statuses.at(-1)).toBe('completed');
    expect(['input_required', 'working', 'completed']).toEqual(expect.arrayContaining(statuses));
    const final = await v1.client.experimental.tasks.getTask(taskId);
    for (const message of pushed) {
      const task = params(message);
      // The full 2025-11-25 Task (R34) and no related-task _meta (R33).
      expect(task).toMatchObject({
        taskId,
        status: expect.any(String),
        createdAt: final.createdAt,
        lastUpdatedAt: expect.any(String),
        ttl: final.ttl,
        pollInterval: final.pollInterval,
      });
      expect(task._meta === undefined || !(RELATED_TASK in task._meta)).toBe(true);
      // Issue 26: the run it belongs to, once one started.
      expect([undefined, JSON.stringify({ [ATTEMPT]: 1 })]).toContain(task._meta && JSON.stringify(task._meta));
      if (task.status === 'completed') expect(task._meta).toEqual({ [ATTEMPT]: 1 });
      expect(task).not.toHaveProperty('task');
    }
    expect(params(pushed.at(-1)!)).toMatchObject({ status: 'completed', lastUpdatedAt: final.lastUpdatedAt });
    // Only tasks created in this session are pushed to it.
    expect(tap.messages.filter((message) => JSON.stringify(message).includes(foreign))).toEqual([]);
  });

  it('R31/R36/C-V1-17 notifications/progress keeps the original progressToken while the task runs (with related-task _meta) and stops at the terminal state', async () => {
    const gate = randomUUID();
    const reported: Array<{ progress: number }> = [];
    const created = await v1.client.request({ method: 'tools/call', params: { name: 'progress_job', arguments: { gate } } }, CreateTaskResultSchema, {
      task: {},
      onprogress: (progress) => void reported.push(progress),
    });
    const taskId = created.task.taskId;
    const token = (v1.http.last('tools/call')?.requestBody as { params: { _meta: { progressToken: unknown } } }).params._meta.progressToken;
    expect(token).toEqual(expect.anything());
    const isProgress = (message: Record<string, unknown>) => message.method === 'notifications/progress' && params(message).progressToken === token;

    // While the task runs: the reports made before the gate arrive with the call's own token.
    await gates.started(gate);
    await tap.waitFor((message) => isProgress(message) && params(message).progress === 2, 'progress 2/3');
    expect((await v1.client.experimental.tasks.getTask(taskId)).status).toBe('working');

    gates.open(gate);
    await tap.waitFor(isStatusOf(taskId, 'completed'), 'completed status notification');
    // A stray report after the terminal state…
    gates.open(`${gate}-late`);
    await lateDone;
    // …then a later message on the same stream as a barrier: another task of this session, to its end.
    const barrier = (
      await v1.client.request({ method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 0 } } }, CreateTaskResultSchema, { task: {} })
    ).task.taskId;
    await tap.waitFor(isStatusOf(barrier, 'completed'), 'barrier task completed notification');

    const messages = tap.messages;
    const progress = messages.filter(isProgress);
    expect(progress.map((message) => params(message).progress)).toEqual([1, 2, 3]);
    for (const message of progress) {
      expect(params(message)).toMatchObject({ progressToken: token, total: 3, _meta: { [RELATED_TASK]: { taskId } } });
    }
    const terminalAt = messages.findIndex(isStatusOf(taskId, 'completed'));
    expect(messages.findIndex((message) => isProgress(message) && params(message).progress === 3)).toBeLessThan(terminalAt);
    expect(messages.slice(terminalAt).filter(isProgress)).toEqual([]);
    // The SDK client matched them to the call (its progress handler outlives the CreateTaskResult for tasks).
    expect(reported.map((entry) => entry.progress)).toEqual([1, 2, 3]);
    const result = await v1.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: `progressed ${gate}` }]);
  });
});
