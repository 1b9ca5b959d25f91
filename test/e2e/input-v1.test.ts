/**
 * Tasks that ask for input, 2025-11-25 generation (R27–R31), end to end with the real `@modelcontextprotocol/sdk@1.32.2`
 * client over Streamable HTTP against a real server with a real SQLite file. The client declares form elicitation
 * and answers `elicitation/create` with its own request handler; the server sends that request on the stream of the
 * `tasks/result` call the client opens when it sees `input_required`, and routes the client's JSON-RPC response back
 * into the task through the store.
 */
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { connectV1Http, pollUntil, rejection, RELATED_TASK, type V1HttpClient } from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';

const CONFIRM_SCHEMA = { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] };

/** One `elicitation/create` the client handled: its params and the JSON-RPC id it came with. */
interface Handled {
  params: Record<string, any>;
  requestId: string | number;
}

describe('2025-11-25 input through tasks/result with the SDK 1.32.2 client', () => {
  let running: RunningTasksServer;
  let v1: V1HttpClient;
  const handled: Handled[] = [];
  let answer: (params: Record<string, any>) => ElicitResult = () => ({ action: 'cancel' });

  beforeAll(async () => {
    running = await startTasksServer({ tools: conformanceFixtureTools(), limits: { pollIntervalMs: 50 } });
    v1 = await connectV1Http(running.url, { capabilities: { elicitation: { form: {} } } });
    v1.client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
      handled.push({ params: request.params as Record<string, any>, requestId: extra.requestId });
      return answer(request.params as Record<string, any>);
    });
  });
  afterAll(async () => {
    await v1?.close();
    await running?.close();
  });

  it("R27–R31/C-V1-15 callToolStream: input_required → tasks/result → elicitation/create with related-task _meta → the handler's answer → completed with that answer", async () => {
    handled.length = 0;
    answer = () => ({ action: 'accept', content: { confirm: true } });
    const events: Array<{ type: string; [key: string]: any }> = [];
    for await (const event of v1.client.experimental.tasks.callToolStream({ name: 'confirm_delete', arguments: { filename: 'v1.txt' } }, CallToolResultSchema, {
      task: {},
    })) {
      events.push(event as never);
    }
    expect(events[0]?.type).toBe('taskCreated');
    const taskId = events[0]?.task.taskId as string;
    const last = events.at(-1);
    expect(last?.type).toBe('result');
    expect(last?.result.content).toEqual([{ type: 'text', text: 'Deleted v1.txt' }]);
    expect(last?.result._meta).toEqual({ [RELATED_TASK]: { taskId } });
    // The stream saw input_required and then called tasks/result (R29) instead of polling on.
    expect(events.some((event) => event.type === 'taskStatus' && event.task.status === 'input_required')).toBe(true);
    expect(v1.http.exchanges.some((exchange) => exchange.rpcMethods.includes('tasks/result'))).toBe(true);

    // Exactly one question, with the related-task _meta (R28/R31) and an id that names the task and key.
    expect(handled).toHaveLength(1);
    expect(handled[0]?.params).toEqual({ mode: 'form', message: 'Delete v1.txt?', requestedSchema: CONFIRM_SCHEMA, _meta: { [RELATED_TASK]: { taskId } } });
    expect(handled[0]?.requestId).toBe(`mcp-tasks-input/${taskId}/input-1`);
    // The client's JSON-RPC response was POSTed and accepted (routed into the task through the store).
    const reply = v1.http.exchanges.find((exchange) => exchange.rpcMethods.includes('response'));
    expect(reply?.requestBody).toMatchObject({ id: `mcp-tasks-input/${taskId}/input-1`, result: { action: 'accept', content: { confirm: true } } });
    expect(reply?.status).toBe(202);

    const task = await v1.client.experimental.tasks.getTask(taskId);
    expect(task.status).toBe('completed');
    expect((await running.store.listInputRequests(taskId)).map((row) => [row.key, row.state, row.response])).toEqual([
      ['input-1', 'answered', { action: 'accept', content: { confirm: true } }],
    ]);
  });

  it('R29/R30 manual flow: poll to input_required, open tasks/result; a declined answer reaches the tool and tasks/result returns its result', async () => {
    handled.length = 0;
    answer = () => ({ action: 'decline' });
    const created = await v1.client.request(
      { method: 'tools/call', params: { name: 'confirm_delete', arguments: { filename: 'declined.txt' } } },
      CreateTaskResultSchema,
      { task: {} },
    );
    const taskId = created.task.taskId;
    const waiting = await pollUntil(
      () => v1.client.experimental.tasks.getTask(taskId),
      (task) => task.status === 'input_required',
      { what: 'input_required' },
    );
    expect(waiting.statusMessage).toEqual(expect.stringContaining('Delete declined.txt?'));
    // Nothing is asked before the client opens tasks/result.
    expect(handled).toHaveLength(0);

    const result = await v1.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'Kept declined.txt (decline)' }]);
    expect(handled.map((entry) => entry.params._meta)).toEqual([{ [RELATED_TASK]: { taskId } }]);
    expect((await v1.client.experimental.tasks.getTask(taskId)).status).toBe('completed');
  });

  it('R29 multi_input: both questions reach the client on the tasks/result stream and both answers reach the tool', async () => {
    handled.length = 0;
    answer = (params) => (String(params.message).includes('first') ? { action: 'accept', content: { confirm: true } } : { action: 'cancel' });
    const created = await v1.client.request({ method: 'tools/call', params: { name: 'multi_input', arguments: {} } }, CreateTaskResultSchema, { task: {} });
    const taskId = created.task.taskId;
    await pollUntil(
      () => v1.client.experimental.tasks.getTask(taskId),
      (task) => task.status === 'input_required',
      { what: 'input_required' },
    );
    const result = await v1.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'first: accept, second: cancel' }]);
    expect(handled.map((entry) => entry.requestId).sort()).toEqual([`mcp-tasks-input/${taskId}/input-1`, `mcp-tasks-input/${taskId}/input-2`]);
  });

  it('E28 (applied to v1) a session that did not declare elicitation gets a failed task (-32021 + requiredCapabilities) instead of a question that cannot come', async () => {
    const plain = await connectV1Http(running.url);
    try {
      const created = await plain.client.request(
        { method: 'tools/call', params: { name: 'confirm_delete', arguments: { filename: 'plain.txt' } } },
        CreateTaskResultSchema,
        { task: {} },
      );
      const taskId = created.task.taskId;
      const done = await pollUntil(
        () => plain.client.experimental.tasks.getTask(taskId),
        (task) => ['completed', 'failed', 'cancelled'].includes(task.status),
        { what: 'terminal' },
      );
      expect(done.status).toBe('failed');
      // tasks/result replays the JSON-RPC error of the execution (R25).
      const error = await rejection(plain.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema));
      expect(error).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: expect.any(Object) } } });
      expect(await running.store.listInputRequests(taskId)).toEqual([]);
    } finally {
      await plain.close();
    }
  });
});
