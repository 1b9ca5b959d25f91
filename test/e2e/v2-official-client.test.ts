/**
 * The Tasks Extension (v2, SEP-2663 on 2026-07-28) end to end with the real `@modelcontextprotocol/client@2.4.0`
 * (version negotiation on) and `@modelcontextprotocol/ext-tasks@0.2.2` sessions, over HTTP against a real server with
 * a real SQLite file. ext-tasks needs a host raw dispatch for v2 (the 2.4 client rejects `resultType: "task"`);
 * ours is `httpRawDispatch` in the shared helper. Exact wire shapes live in `v2-http-wire.test.ts`.
 */
import { randomUUID } from 'node:crypto';

import { SdkError } from '@modelcontextprotocol/client';
import {
  resultFromTaskOutcome,
  type SerializedTaskReference,
  type TaskEnabledSession,
  type TaskExecutionEvent,
  TaskFailedError,
  TaskRecoveryOwnershipError,
} from '@modelcontextprotocol/ext-tasks/client';
import { taskId as toTaskId } from '@modelcontextprotocol/ext-tasks/core';
import { CancelTaskResultV2Schema, DetailedTaskV2Schema, UpdateTaskResultV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { missingTasksExtensionMessage } from '../../src/core/errors.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import {
  connectV2Http,
  createV2TaskSession,
  gatedTools,
  Gates,
  httpRawDispatch,
  NOT_FOUND,
  pollUntil,
  RANDOM_ID,
  rejection,
  type V2HttpClient,
} from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { postModern, TASKS_EXTENSION } from '../helpers/wire.js';

const REQUIRED_CAPABILITIES = { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } };

describe('Tasks Extension over HTTP with client 2.4.0 and ext-tasks 0.2.2', () => {
  const gates = new Gates();
  let running: RunningTasksServer;
  let declaring: V2HttpClient;
  let session: TaskEnabledSession;

  beforeAll(async () => {
    running = await startTasksServer({ tools: [...conformanceFixtureTools(), ...gatedTools(gates)], limits: { pollIntervalMs: 50 } });
    declaring = await connectV2Http(running.url, { mode: 'auto' });
    session = createV2TaskSession(declaring.client, httpRawDispatch(running.url, declaring.http));
  });
  afterAll(async () => {
    await session?.close();
    await declaring?.close();
    await running?.close();
  });

  it('E1/C-BASE-07 versionNegotiation auto selects 2026-07-28 and sees the extension, not the legacy tasks capability', async () => {
    expect(declaring.client.getProtocolEra()).toBe('modern');
    expect(declaring.client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    expect(declaring.http.lastStatus('server/discover')).toBe(200);
    const capabilities = declaring.client.getServerCapabilities() as Record<string, unknown>;
    expect(capabilities.extensions).toEqual({ [TASKS_EXTENSION]: {}, 'dev.mcp-tasks/idempotency': {} });
    expect(capabilities).not.toHaveProperty('tasks');
    expect(session.capabilities).toMatchObject({ execution: true, cancellation: true, inputResponses: true, inventory: 'known-handles' });
  });

  it('E2/E8/E14/E19 a declaring call becomes a task that settles completed with the result inline', async () => {
    const execution = await session.callTool('slow_compute', { seconds: 0.1, label: 'v2' });
    expect(execution.kind).toBe('task');
    expect(declaring.http.lastStatus('tools/call')).toBe(200);
    const created = (await declaring.http.lastResponse('tools/call')).result ?? {};
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    expect(created).not.toHaveProperty('content');
    const statuses: string[] = [];
    const { outcome } = await execution.settle({
      onEvent: (event: TaskExecutionEvent<unknown>) => void (event.type === 'task' && statuses.push(event.task.status)),
    });
    expect(outcome.status).toBe('completed');
    expect(resultFromTaskOutcome(outcome)).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'Computed v2 after 0.1s' }] });
    expect(outcome.task?.status).toBe('completed');
    expect(statuses.at(-1)).toBe('completed');
    // The completed snapshot came from tasks/get with the result inline (no tasks/result exists in v2).
    const polled = (await declaring.http.lastResponse('tasks/get')).result ?? {};
    expect(polled).toMatchObject({ resultType: 'complete', status: 'completed', result: { content: [{ type: 'text', text: 'Computed v2 after 0.1s' }] } });
    expect(declaring.http.exchanges.some((exchange) => exchange.rpcMethods.includes('tasks/result'))).toBe(false);
  });

  it('E2/E4 a sync tool answers immediately even for a declaring client', async () => {
    const execution = await session.callTool('greet', { name: 'v2' });
    expect(execution.kind).toBe('immediate');
    expect(resultFromTaskOutcome((await execution.settle()).outcome)).toMatchObject({ content: [{ type: 'text', text: 'Hello, v2!' }] });
  });

  it('E13 a tool result with isError completes the task, with that result', async () => {
    const execution = await session.callTool('failing_job', {});
    expect(execution.kind).toBe('task');
    const { outcome } = await execution.settle();
    expect(outcome.status).toBe('completed');
    expect(resultFromTaskOutcome(outcome)).toMatchObject({ isError: true, content: [{ type: 'text', text: 'The job failed: simulated tool error' }] });
  });

  it('E13/E19 a thrown protocol error fails the task; ext-tasks returns a failed outcome with TaskFailedError carrying the code', async () => {
    const execution = await session.callTool('protocol_error_job', {});
    const { outcome } = await execution.settle();
    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.error).toBeInstanceOf(TaskFailedError);
    expect(outcome.error.code).toBe(-32603);
    expect(outcome.error.message).toBe('Simulated protocol error: upstream unavailable');
    expect(() => resultFromTaskOutcome(outcome)).toThrow(TaskFailedError);
    const polled = (await declaring.http.lastResponse('tasks/get')).result ?? {};
    expect(polled).toMatchObject({ status: 'failed', error: { code: -32603, message: 'Simulated protocol error: upstream unavailable' } });
    expect(polled).not.toHaveProperty('result');
  });

  it('E30/E31 cancel is acknowledged with an empty result and the task ends cancelled', async () => {
    const gate = randomUUID();
    const execution = await session.callTool('gated', { gate });
    if (execution.kind !== 'task') expect.fail('expected a task');
    await gates.started(gate);
    await execution.cancel();
    expect(declaring.http.lastStatus('tasks/cancel')).toBe(200);
    const ack = (await declaring.http.lastResponse('tasks/cancel')).result ?? {};
    const { _meta: _ignored, ...ackBody } = ack;
    expect(ackBody).toEqual({ resultType: 'complete' });
    expect((await execution.settle()).outcome.status).toBe('cancelled');
    const snapshot = await session.task(execution.handle.taskId).snapshot();
    expect(snapshot.status).toBe('cancelled');
  });

  it('E30 cancel of a terminal task is acknowledged and leaves it unchanged', async () => {
    const execution = await session.callTool('slow_compute', { seconds: 0 });
    if (execution.kind !== 'task') expect.fail('expected a task');
    expect((await execution.settle()).outcome.status).toBe('completed');
    const controller = session.task(execution.handle.taskId);
    await controller.cancel();
    expect(declaring.http.lastStatus('tasks/cancel')).toBe(200);
    expect((await controller.snapshot()).status).toBe('completed');
    expect(resultFromTaskOutcome(await controller.result())).toMatchObject({ content: [{ type: 'text', text: 'Computed result after 0s' }] });
  });

  it('E39 an unknown task id answers -32602 on tasks/get, tasks/update and tasks/cancel', async () => {
    const unknown = session.task(toTaskId(RANDOM_ID));
    expect(await rejection(unknown.snapshot())).toEqual(NOT_FOUND);
    expect(await rejection(unknown.update({}))).toEqual(NOT_FOUND);
    expect(await rejection(unknown.cancel())).toEqual(NOT_FOUND);
    // The plain 2.4 client (its own Mcp-Name header) gets the same answer.
    expect(await rejection(declaring.client.request({ method: 'tasks/get', params: { taskId: RANDOM_ID } }, DetailedTaskV2Schema))).toEqual(NOT_FOUND);
  });

  it('E18/E38 the plain 2.4 client can poll tasks/get (it sets Mcp-Name to the task id) until completed', async () => {
    const gate = randomUUID();
    const execution = await session.callTool('gated', { gate });
    if (execution.kind !== 'task') expect.fail('expected a task');
    const taskId = execution.handle.taskId;
    await execution.detach();
    const first = await declaring.client.request({ method: 'tasks/get', params: { taskId } }, DetailedTaskV2Schema);
    expect(first).toMatchObject({ taskId, status: 'working' });
    expect(declaring.http.last('tasks/get')?.requestHeaders.get('mcp-name')).toBe(taskId);
    gates.open(gate);
    const done = await pollUntil(
      () => declaring.client.request({ method: 'tasks/get', params: { taskId } }, DetailedTaskV2Schema),
      (task) => task.status === 'completed',
    );
    expect(done).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: `released ${gate}` }] } });
  });

  it('E38 an Mcp-Name naming another existing task gets -32020 (HTTP 400) and reveals neither task', async () => {
    const a = await session.callTool('slow_compute', { seconds: 0 });
    const b = await session.callTool('slow_compute', { seconds: 0 });
    if (a.kind !== 'task' || b.kind !== 'task') expect.fail('expected tasks');
    // The 2.4 client always sets Mcp-Name from params.taskId (request headers cannot override it), so this one is raw.
    const response = await postModern(running.url, 'tasks/get', { taskId: a.handle.taskId }, { headers: { 'mcp-name': b.handle.taskId } });
    expect(response.status).toBe(400);
    expect(response.body.error?.code).toBe(-32020);
    expect(response.body).not.toHaveProperty('result');
    await a.settle();
    await b.settle();
  });

  it('C-V2-06 resume: handoff in one client, resumeTask from a second client settles completed; same-session resume waits out TaskRecoveryOwnershipError', async () => {
    const gate = randomUUID();
    const execution = await session.callTool('gated', { gate });
    if (execution.kind !== 'task') expect.fail('expected a task');
    let reference: SerializedTaskReference | undefined;
    await execution.handoff((ref) => {
      reference = ref;
    });
    expect(reference).toMatchObject({ generation: 'v2', taskId: execution.handle.taskId, originalOperation: 'tools/call' });
    const persisted = JSON.parse(JSON.stringify(reference)) as SerializedTaskReference;

    const other = await connectV2Http(running.url);
    const otherSession = createV2TaskSession(other.client, httpRawDispatch(running.url, other.http));
    try {
      const resumed = await otherSession.resumeTask(persisted);
      expect(resumed.kind).toBe('task');
      const snapshot = await otherSession.task(persisted.taskId).snapshot();
      expect(snapshot.status).toBe('working');
      gates.open(gate);
      const { outcome } = await resumed.settle();
      expect(resultFromTaskOutcome(outcome)).toMatchObject({ content: [{ type: 'text', text: `released ${gate}` }] });
    } finally {
      await otherSession.close();
      await other.close();
    }

    // Documented ext-tasks quirk: right after a handoff the same session may still own the identity.
    const again = await pollUntil(
      async () => {
        try {
          return await session.resumeTask(persisted);
        } catch (error) {
          if (error instanceof TaskRecoveryOwnershipError) return undefined;
          throw error;
        }
      },
      (value) => value !== undefined,
      { what: 'same-session resume' },
    );
    expect((await again!.settle()).outcome.status).toBe('completed');
  });
});

describe('Tasks Extension: a 2.4 client that does not declare the extension', () => {
  let running: RunningTasksServer;
  let plain: V2HttpClient;
  let taskId: string;

  beforeAll(async () => {
    running = await startTasksServer({ tools: conformanceFixtureTools() });
    plain = await connectV2Http(running.url, { declareExtension: false });
    const created = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } });
    taskId = String(created.body.result?.taskId);
  });
  afterAll(async () => {
    await plain?.close();
    await running?.close();
  });

  it('E6 a task-required tool answers -32021 with data.requiredCapabilities (HTTP 400)', async () => {
    const error = await rejection(plain.client.callTool({ name: 'failing_job', arguments: {} }));
    expect(error).toEqual({ code: -32021, message: missingTasksExtensionMessage({ tool: 'failing_job' }), data: REQUIRED_CAPABILITIES });
    expect(plain.http.lastStatus('tools/call')).toBe(400);
  });

  it('E3 a task-optional tool answers a synchronous CallToolResult, never a task', async () => {
    const result = await plain.client.callTool({ name: 'slow_compute', arguments: { seconds: 0, label: 'sync' } });
    expect(result.content).toEqual([{ type: 'text', text: 'Computed sync after 0s' }]);
    const raw = (await plain.http.lastResponse('tools/call')).result ?? {};
    expect(raw.resultType).toBe('complete');
    expect(raw).not.toHaveProperty('taskId');
  });

  it('E41 tasks/get, tasks/update and tasks/cancel answer -32021 (HTTP 400), even for an existing task', async () => {
    const requests = [
      [{ method: 'tasks/get', params: { taskId } }, DetailedTaskV2Schema],
      [{ method: 'tasks/update', params: { taskId, inputResponses: {} } }, UpdateTaskResultV2Schema],
      [{ method: 'tasks/cancel', params: { taskId } }, CancelTaskResultV2Schema],
    ] as const;
    for (const [request, schema] of requests) {
      const error = await rejection(plain.client.request(request as never, schema));
      expect(error, request.method).toEqual({ code: -32021, message: missingTasksExtensionMessage({ method: request.method }), data: REQUIRED_CAPABILITIES });
      expect(plain.http.lastStatus(request.method), request.method).toBe(400);
    }
  });

  it('E42 tasks/result answers -32601 (HTTP 404); the 2.4 client refuses to send it on 2026-07-28, so the wire answer is read raw', async () => {
    let refused: unknown;
    try {
      // It throws synchronously, before anything is sent.
      await plain.client.request({ method: 'tasks/result', params: { taskId } } as never, DetailedTaskV2Schema);
    } catch (error) {
      refused = error;
    }
    expect(plain.http.last('tasks/result')).toBeUndefined();
    expect(refused).toBeInstanceOf(SdkError);
    expect((refused as SdkError).code).toBe('METHOD_NOT_SUPPORTED_BY_PROTOCOL_VERSION');
    for (const capabilities of [{}, { extensions: { [TASKS_EXTENSION]: {} } }]) {
      const response = await postModern(running.url, 'tasks/result', { taskId }, { capabilities });
      expect(response.status).toBe(404);
      expect(response.body.error?.code).toBe(-32601);
    }
  });

  it('E41 the capability gate comes before any lookup: an unknown id also answers -32021, not -32602', async () => {
    expect(await rejection(plain.client.request({ method: 'tasks/get', params: { taskId: RANDOM_ID } }, DetailedTaskV2Schema))).toMatchObject({ code: -32021 });
    expect(plain.http.lastStatus('tasks/get')).toBe(400);
  });
});
