import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import {
  connectTasksClient,
  type ElicitAnswer,
  type InputHandler,
  InputNotAnsweredError,
  type InputRequest,
  type TasksClient,
  type TaskSnapshot,
} from '../../src/client/index.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { countingTools, Gate, RequestLog } from './support.js';

/**
 * Tasks that ask for input, answered by `mcp-tasks/client` against a real server (SQLite, loopback HTTP):
 * v2 `inputRequests` + `tasks/update`, MRTR rounds before a task, v1 `elicitation/create` on `tasks/result`
 * (through the SDK 2.4 client), `answerTask` from a second client, and notifications through `subscriptions/listen`.
 */

const CONFIRM = { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] };
const gate = new Gate();

/** Works until the test opens the gate, then asks one question: lets a test see `working` before `input_required`. */
const gatedConfirm = defineTool({
  name: 'gated_confirm',
  description: 'Waits for the test, then asks for confirmation.',
  execution: 'task-optional',
  idempotent: true,
  elicits: true,
  inputSchema: z.object({}),
  async run(_args, ctx) {
    await gate.opened;
    const answer = await ctx.elicit({ message: 'Go on?', requestedSchema: CONFIRM });
    return textResult(`gated: ${answer.action}`);
  },
});

/** A handler that records the questions and answers from a list of answers by key. */
function scripted(answers: Record<string, ElicitAnswer | undefined>): { handler: InputHandler; asked: InputRequest[] } {
  const asked: InputRequest[] = [];
  return {
    asked,
    handler: (request) => {
      asked.push(request);
      return answers[request.key];
    },
  };
}

const accept = (content: Record<string, boolean | string>): ElicitAnswer => ({ action: 'accept', content });

describe('answering input with mcp-tasks/client', () => {
  let running: RunningTasksServer;
  let clients: TasksClient[] = [];
  const open = async (protocol: '2025-11-25' | '2026-07-28', options: { onInput?: InputHandler; log?: RequestLog } = {}): Promise<TasksClient> => {
    const client = await connectTasksClient({
      url: running.url,
      protocol,
      journal: false,
      ...(options.onInput ? { onInput: options.onInput } : {}),
      ...(options.log ? { fetch: options.log.fetch } : {}),
    });
    clients.push(client);
    return client;
  };
  const taskIdOf = (outcome: Awaited<ReturnType<TasksClient['callTool']>>): string => {
    if (outcome.kind !== 'task') throw new Error(`expected a task, got ${JSON.stringify(outcome)}`);
    return outcome.taskId;
  };

  beforeAll(async () => {
    running = await startTasksServer({ tools: [...countingTools().tools, gatedConfirm], limits: { pollIntervalMs: 50 } });
  });
  afterEach(async () => {
    await Promise.all(clients.map((client) => client.close()));
    clients = [];
    gate.reset();
  });
  afterAll(async () => {
    await running.close();
  });

  describe('2026-07-28 (tasks v2)', () => {
    it('answers one question once (however many polls show it) with tasks/update, declaring elicitation on tools/call and tasks/*', async () => {
      const log = new RequestLog();
      const { handler, asked } = scripted({ 'input-1': accept({ confirm: true }) });
      const client = await open('2026-07-28', { onInput: handler, log });
      const taskId = taskIdOf(await client.callTool('confirm_delete', { filename: 'notes.txt' }));
      const result = await client.resume(taskId);
      expect(result.content).toEqual([{ type: 'text', text: 'Deleted notes.txt' }]);
      expect(asked).toEqual([
        { key: 'input-1', taskId, method: 'elicitation/create', params: { mode: 'form', message: 'Delete notes.txt?', requestedSchema: CONFIRM } },
      ]);
      expect(log.params('tasks/update')).toEqual([
        expect.objectContaining({ taskId, inputResponses: { 'input-1': { action: 'accept', content: { confirm: true } } } }),
      ]);
      const capabilities = (params: Record<string, unknown>) => (params._meta as Record<string, unknown>)['io.modelcontextprotocol/clientCapabilities'];
      expect(capabilities(log.params('tools/call')[0]!)).toEqual({ extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: { form: {} } });
      expect(capabilities(log.params('tasks/get')[0]!)).toMatchObject({ elicitation: { form: {} } });
    });

    it('answers two questions asked at once in one tasks/update', async () => {
      const log = new RequestLog();
      const { handler, asked } = scripted({ 'input-1': accept({ confirm: true }), 'input-2': { action: 'decline' } });
      const client = await open('2026-07-28', { onInput: handler, log });
      const taskId = taskIdOf(await client.callTool('multi_input'));
      expect((await client.resume(taskId)).content).toEqual([{ type: 'text', text: 'first: accept, second: decline' }]);
      expect(asked.map((request) => request.key)).toEqual(['input-1', 'input-2']);
      expect(log.params('tasks/update').map((params) => Object.keys(params.inputResponses as object))).toEqual([['input-1', 'input-2']]);
    });

    it('a partial answer keeps the task input_required; the rest answered later by another client (answerTask) completes it', async () => {
      const first = scripted({ 'input-1': accept({ confirm: true }) });
      const waiter = await open('2026-07-28', { onInput: first.handler });
      const taskId = taskIdOf(await waiter.callTool('multi_input'));
      const waiting = waiter.resume(taskId);

      const other = await open('2026-07-28');
      let snapshot: TaskSnapshot;
      do snapshot = await other.getTask(taskId);
      while (!(snapshot.status === 'input_required' && Object.keys(snapshot.inputRequests ?? {}).join() === 'input-2'));
      expect(first.asked.map((request) => request.key)).toEqual(['input-1', 'input-2']);

      const report = await other.answerTask(taskId, { 'input-2': accept({ confirm: false }), 'input-9': { action: 'cancel' } });
      expect(report).toMatchObject({ taskId, status: 'input_required', answered: ['input-2'], left: [] });
      expect(report.asked.map((request) => request.key)).toEqual(['input-2']);
      expect((await waiting).content).toEqual([{ type: 'text', text: 'first: accept, second: accept' }]);
      expect(await other.answerTask(taskId, { 'input-2': accept({ confirm: true }) })).toMatchObject({ status: 'completed', asked: [], answered: [] });
    });

    it('MRTR: answers the round before the task, retries with a new id and the requestState echoed byte for byte, then follows the task', async () => {
      const log = new RequestLog();
      const { handler, asked } = scripted({ 'gather-1': accept({ name: 'Ada' }) });
      const client = await open('2026-07-28', { onInput: handler, log });
      const outcome = await client.callTool('test_tool_with_task');
      expect(outcome.kind).toBe('task');
      expect(asked).toEqual([{ key: 'gather-1', method: 'elicitation/create', params: expect.objectContaining({ message: 'What is your name?' }) }]);
      const calls = log.messages.filter((message) => message.method === 'tools/call');
      expect(calls).toHaveLength(2);
      expect(calls[1]!.id).not.toBe(calls[0]!.id);
      expect(calls[0]!.params).not.toHaveProperty('requestState');
      const retry = calls[1]!.params as Record<string, unknown>;
      expect(retry.inputResponses).toEqual({ 'gather-1': { action: 'accept', content: { name: 'Ada' } } });
      expect(typeof retry.requestState).toBe('string');
      expect((await client.resume(taskIdOf(outcome))).content).toEqual([{ type: 'text', text: 'Hello, Ada!' }]);
    });

    it('MRTR without an answer: InputNotAnsweredError names the question, and no task exists', async () => {
      const client = await open('2026-07-28', { onInput: () => undefined });
      const error = await client.callTool('test_tool_with_task').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(InputNotAnsweredError);
      expect((error as InputNotAnsweredError).requests.map((request) => request.key)).toEqual(['gather-1']);
      const bare = await open('2026-07-28');
      await expect(bare.callTool('test_tool_with_task')).rejects.toMatchObject({ code: -32021 });
    });

    it('an exception from onInput ends the wait with it; the question stays open for someone else', async () => {
      const refusal = new Error('no user at this terminal');
      const client = await open('2026-07-28', {
        onInput: () => {
          throw refusal;
        },
      });
      const taskId = taskIdOf(await client.callTool('confirm_delete', { filename: 'c' }));
      await expect(client.waitForTask(taskId)).rejects.toBe(refusal);
      expect(await client.getTask(taskId)).toMatchObject({ status: 'input_required', inputRequests: { 'input-1': expect.anything() } });
      await client.answerTask(taskId, { 'input-1': { action: 'cancel' } });
      expect((await client.resume(taskId)).content).toEqual([{ type: 'text', text: 'Kept c (cancel)' }]);
    });

    it('watch() follows the task through subscriptions/listen: working → input_required → working → completed', async () => {
      const log = new RequestLog();
      const { handler } = scripted({ 'input-1': accept({ confirm: true }) });
      const client = await open('2026-07-28', { onInput: handler, log });
      const taskId = taskIdOf(await client.callTool('gated_confirm'));
      const statuses: string[] = [];
      let last: TaskSnapshot | undefined;
      for await (const snapshot of client.watch(taskId)) {
        if (statuses.at(-1) !== snapshot.status) statuses.push(snapshot.status);
        if (statuses.length === 1) gate.open(); // subscribed and seen working: now let the tool ask
        last = snapshot;
      }
      expect(statuses).toEqual(['working', 'input_required', 'working', 'completed']);
      expect(last?.result?.content).toEqual([{ type: 'text', text: 'gated: accept' }]);
      expect(log.count('subscriptions/listen')).toBe(1);
      expect(log.count('tasks/get')).toBe(1); // the read right after subscribing; everything else was pushed
    });

    it('watch() falls back to polling when listen is refused (HTTP 404, -32601) or its stream ends early', async () => {
      for (const fault of ['refused', 'cut'] as const) {
        const log = new RequestLog();
        // Between client and server, subscriptions/listen is answered as by a server without it, or cut after the ack.
        const fetchWithFault = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
          const response = await log.fetch(input, init);
          if (!(typeof init?.body === 'string' && init.body.includes('"subscriptions/listen"'))) return response;
          if (fault === 'refused') {
            await response.body?.cancel();
            return new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32601, message: 'Method not found' } }), {
              status: 404,
              headers: { 'content-type': 'application/json' },
            });
          }
          const reader = (response.body as ReadableStream<Uint8Array>).getReader();
          const first = await reader.read(); // the acknowledgement
          await reader.cancel();
          return new Response(first.value, { status: 200, headers: { 'content-type': 'text/event-stream' } });
        };
        const client = await connectTasksClient({
          url: running.url,
          protocol: '2026-07-28',
          journal: false,
          fetch: fetchWithFault,
          onInput: () => accept({ confirm: true }),
        });
        clients.push(client);
        const taskId = taskIdOf(await client.callTool('confirm_delete', { filename: fault }));
        const statuses: string[] = [];
        for await (const snapshot of client.watch(taskId)) statuses.push(snapshot.status);
        expect(statuses.at(-1), fault).toBe('completed');
        expect(log.count('subscriptions/listen'), fault).toBe(1);
        expect(log.count('tasks/get'), fault).toBeGreaterThanOrEqual(2); // polled after the fault
      }
    });

    it('subscribe() accepts only known tasks and ends when they are terminal', async () => {
      const client = await open('2026-07-28', { onInput: scripted({ 'input-1': { action: 'decline' } }).handler });
      const taskId = taskIdOf(await client.callTool('confirm_delete', { filename: 'a' }));
      const subscription = await client.subscribe([taskId, 'Zz9Yy8Xx7Ww6Vv5Uu4Tt3S']);
      expect(subscription.taskIds).toEqual([taskId]);
      const done = client.resume(taskId);
      const seen: string[] = [];
      for await (const snapshot of subscription) seen.push(snapshot.status);
      expect(seen.at(-1)).toBe('completed');
      expect(subscription.ended).toBe('done');
      expect((await done).content).toEqual([{ type: 'text', text: 'Kept a (decline)' }]);
    });
  });

  describe('2025-11-25 (tasks v1, SDK 2.4 client)', () => {
    it('answers the elicitation/create the server sends on tasks/result (related-task _meta, key from the request id)', async () => {
      const log = new RequestLog();
      const { handler, asked } = scripted({ 'input-1': accept({ confirm: true }) });
      const client = await open('2025-11-25', { onInput: handler, log });
      const taskId = taskIdOf(await client.callTool('confirm_delete', { filename: 'old.log' }));
      expect((await client.resume(taskId)).content).toEqual([{ type: 'text', text: 'Deleted old.log' }]);
      expect(asked).toEqual([
        { key: 'input-1', taskId, method: 'elicitation/create', params: { mode: 'form', message: 'Delete old.log?', requestedSchema: CONFIRM } },
      ]);
      expect(log.count('tasks/result')).toBeGreaterThanOrEqual(2); // held open for the question, then the delivery
      expect(log.messages).toContainEqual({
        jsonrpc: '2.0',
        id: `mcp-tasks-input/${taskId}/input-1`,
        result: { action: 'accept', content: { confirm: true } },
      });
    });

    it('answers two questions on one stream, one at a time', async () => {
      const { handler, asked } = scripted({ 'input-1': { action: 'decline' }, 'input-2': accept({ confirm: true }) });
      const client = await open('2025-11-25', { onInput: handler });
      const taskId = taskIdOf(await client.callTool('multi_input'));
      expect((await client.resume(taskId)).content).toEqual([{ type: 'text', text: 'first: decline, second: accept' }]);
      expect(asked.map((request) => request.key).sort()).toEqual(['input-1', 'input-2']);
    });

    it('answers a question asked during tools/call (before the task exists), then follows the task', async () => {
      const asked: InputRequest[] = [];
      const client = await open('2025-11-25', {
        onInput: (request) => {
          asked.push(request);
          return accept({ name: 'Grace' });
        },
      });
      const outcome = await client.callTool('test_tool_with_task');
      // A plain server→client request of the call: no related task, the SDK's own request id as key.
      expect(asked).toEqual([{ key: expect.any(String), method: 'elicitation/create', params: expect.objectContaining({ message: 'What is your name?' }) }]);
      expect((await client.resume(taskIdOf(outcome))).content).toEqual([{ type: 'text', text: 'Hello, Grace!' }]);
    });

    it('an exception from onInput ends the wait without answering; answerTask on the same session answers later', async () => {
      const refusal = new Error('no user at this terminal');
      const client = await open('2025-11-25', {
        onInput: () => {
          throw refusal;
        },
      });
      const taskId = taskIdOf(await client.callTool('confirm_delete', { filename: 'd' }));
      await expect(client.waitForTask(taskId)).rejects.toBe(refusal);
      expect((await client.getTask(taskId)).status).toBe('input_required');
      const report = await client.answerTask(taskId, { 'input-1': accept({ confirm: true }) });
      expect(report.answered).toEqual(['input-1']);
      expect((await client.resume(taskId)).content).toEqual([{ type: 'text', text: 'Deleted d' }]);
    });

    it('a question during tools/call that the handler leaves unanswered ends the call with InputNotAnsweredError', async () => {
      const client = await open('2025-11-25', { onInput: () => undefined });
      const error = await client.callTool('test_tool_with_task').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(InputNotAnsweredError);
      expect((error as InputNotAnsweredError).requests.map((request) => request.params.message)).toEqual(['What is your name?']);
    });

    it('answerTask from a second client answers a task nobody waits on, then detaches', async () => {
      const creator = await open('2025-11-25', { onInput: () => undefined });
      const taskId = taskIdOf(await creator.callTool('confirm_delete', { filename: 'b.log' }));
      let snapshot: TaskSnapshot;
      do snapshot = await creator.getTask(taskId);
      while (snapshot.status !== 'input_required');
      await creator.close();

      const answerer = await open('2025-11-25', { onInput: () => undefined });
      const report = await answerer.answerTask(taskId, { 'input-1': accept({ confirm: false }) });
      expect(report).toMatchObject({ taskId, status: 'input_required', answered: ['input-1'], left: [] });
      expect(report.asked.map((request) => request.params.message)).toEqual(['Delete b.log?']);
      expect((await answerer.resume(taskId)).content).toEqual([{ type: 'text', text: 'Kept b.log (accept)' }]);
    });
  });
});
