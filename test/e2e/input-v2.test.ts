/**
 * Tasks that ask for input, Tasks Extension generation (SEP-2663 on 2026-07-28), end to end over HTTP against a real
 * server with a real SQLite file:
 * - the real ext-tasks 0.2.2 client (on client 2.4.0, with our raw dispatch) answering `input_required` through its
 *   `onInputRequest` callback and `tasks/update` (one key, two keys at once, the rest of a partial answer);
 * - a raw client for what a compliant client never sends (duplicate answer, unknown key, invalid answer);
 * - declined/cancelled answers, a creating request without elicitation (E28), key stability (E23), input timeout.
 * - MRTR before a task (SEP-2322 rounds on `tools/call`, SEP-2663 E16) composed with task input, raw requests.
 * Tools: the conformance fixtures `confirm_delete {filename}`, `multi_input`, `test_tool_with_task`, plus an inline
 * tool that asks in both phases.
 */
import {
  type ApplicationElicitResult,
  type ApplicationInputRequest,
  createTaskSessionFromClient,
  type ResolvedInputExchangeContext,
  resultFromTaskOutcome,
  type TaskEnabledSession,
} from '@modelcontextprotocol/ext-tasks/client';
import { taskId as toTaskId } from '@modelcontextprotocol/ext-tasks/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { connectV2Http, httpRawDispatch, type HttpRecorder, pollUntil, v2Framing, type V2HttpClient } from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern, TASKS_EXTENSION } from '../helpers/wire.js';

const CONFIRM_SCHEMA = { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] };
/** Client capabilities of a 2026-07-28 request that declares the Tasks Extension and form elicitation. */
const ELICITING = { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {} } };
const YES = { action: 'accept', content: { confirm: true } } as const;
const NO = { action: 'accept', content: { confirm: false } } as const;

type Answerer = (request: ApplicationInputRequest, context: ResolvedInputExchangeContext) => ApplicationElicitResult | Promise<ApplicationElicitResult>;

/** One ext-tasks v2 session on its own 2.4 client (one adapter per client), declaring elicitation on every request. */
interface InputSession {
  client: V2HttpClient;
  session: TaskEnabledSession;
  /** Every `onInputRequest` call: the input key and the projected request. */
  asked: Array<{ inputId: string | undefined; request: ApplicationInputRequest }>;
  close(): Promise<void>;
}

async function openInputSession(url: string, endpointId: string, answer: Answerer): Promise<InputSession> {
  const client = await connectV2Http(url, { mode: 'auto' });
  const asked: InputSession['asked'] = [];
  const session = createTaskSessionFromClient(client.client, {
    endpointId,
    rawDispatch: httpRawDispatch(url, client.http),
    v2RequestFraming: { ...v2Framing(true), clientCapabilities: ELICITING },
    onError: () => {},
    onInputRequest: (async (request: ApplicationInputRequest, context: ResolvedInputExchangeContext) => {
      asked.push({ inputId: context.inputId, request });
      return answer(request, context);
    }) as never,
  });
  return {
    client,
    session,
    asked,
    async close() {
      await session.close();
      await client.close();
    },
  };
}

/** The params and JSON-RPC result of every recorded request of `method`, in order. */
async function exchangesOf(
  http: HttpRecorder,
  method: string,
): Promise<Array<{ params: Record<string, any>; result?: Record<string, any>; error?: unknown; status: number }>> {
  const found = [];
  for (const exchange of http.exchanges.filter((candidate) => candidate.rpcMethods.includes(method))) {
    const messages = (await exchange.messages) as Array<Record<string, any>>;
    const response = messages.find((message) => 'result' in message || 'error' in message) ?? {};
    found.push({
      params: (exchange.requestBody as { params: Record<string, any> }).params,
      result: response.result,
      error: response.error,
      status: exchange.status,
    });
  }
  return found;
}

/** Create a task with a raw `tools/call` (elicitation declared unless `capabilities` says otherwise). */
async function createRaw(url: string, name: string, args: Record<string, unknown>, capabilities: object = ELICITING): Promise<string> {
  const response = await postModern(url, 'tools/call', { name, arguments: args }, { capabilities });
  const taskId = response.body.result?.taskId;
  if (response.body.result?.resultType !== 'task' || typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(response.body)}`);
  return taskId;
}

async function getTask(url: string, taskId: string): Promise<Record<string, any>> {
  const response = await postModern(url, 'tasks/get', { taskId });
  if (!response.body.result) throw new Error(`tasks/get failed: ${JSON.stringify(response.body)}`);
  return response.body.result;
}

async function update(
  url: string,
  taskId: string,
  inputResponses: Record<string, unknown>,
): Promise<{ status: number; result?: Record<string, unknown>; error?: unknown }> {
  const response = await postModern(url, 'tasks/update', { taskId, inputResponses });
  return { status: response.status, result: response.body.result, error: response.body.error };
}

/** The ack of `tasks/update` without an SDK-added `_meta` (E25: `{"resultType":"complete"}`). */
function ackBody(result: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!result) return result;
  const { _meta: _ignored, ...rest } = result;
  return rest;
}

const waitingFor = (url: string, taskId: string, keys: string[]) =>
  pollUntil(
    () => getTask(url, taskId),
    (task) => task.status === 'input_required' && JSON.stringify(Object.keys(task.inputRequests ?? {}).sort()) === JSON.stringify([...keys].sort()),
    { what: `task ${taskId} input_required with ${keys.join(', ')}` },
  );

const text = (result: unknown) => ((result as { content?: Array<{ text?: string }> }).content ?? [])[0]?.text;

describe('v2 input with the ext-tasks 0.2.2 client (onInputRequest → tasks/update)', () => {
  let running: RunningTasksServer;
  const sessions: InputSession[] = [];

  beforeAll(async () => {
    running = await startTasksServer({ tools: conformanceFixtureTools(), limits: { pollIntervalMs: 50 } });
  });
  afterAll(async () => {
    for (const session of sessions) await session.close();
    await running?.close();
  });

  async function open(endpointId: string, answer: Answerer): Promise<InputSession> {
    const opened = await openInputSession(running.url, endpointId, answer);
    sessions.push(opened);
    return opened;
  }

  it('E19/E21/E25/C-V2-10 one key: confirm_delete lists input-1, ext-tasks answers it with one tasks/update (acked {resultType:"complete"}), the task completes with the answer', async () => {
    const { session, client, asked } = await open('input-one-key', () => YES);
    const execution = await session.callTool('confirm_delete', { filename: 'report.txt' });
    expect(execution.kind).toBe('task');
    const { outcome } = await execution.settle();
    expect(outcome.status).toBe('completed');
    expect(text(resultFromTaskOutcome(outcome))).toBe('Deleted report.txt');

    expect(asked).toEqual([
      { inputId: 'input-1', request: { kind: 'elicitation', params: { mode: 'form', message: 'Delete report.txt?', requestedSchema: CONFIRM_SCHEMA } } },
    ]);
    // The poll that made the client ask listed exactly that request (E19).
    const polls = await exchangesOf(client.http, 'tasks/get');
    const waiting = polls.find((poll) => poll.result?.status === 'input_required');
    expect(waiting?.result).toMatchObject({
      resultType: 'complete',
      inputRequests: { 'input-1': { method: 'elicitation/create', params: { mode: 'form', message: 'Delete report.txt?', requestedSchema: CONFIRM_SCHEMA } } },
    });
    expect(Object.keys(waiting?.result?.inputRequests ?? {})).toEqual(['input-1']);
    const updates = await exchangesOf(client.http, 'tasks/update');
    expect(updates).toHaveLength(1);
    expect(updates[0]?.params.inputResponses).toEqual({ 'input-1': YES });
    expect(updates[0]?.status).toBe(200);
    expect(ackBody(updates[0]?.result)).toEqual({ resultType: 'complete' });
  });

  it('E19/E21/C-V2-09 two keys at once: multi_input lists input-1 and input-2 together and ext-tasks answers both in one tasks/update', async () => {
    const { session, client, asked } = await open('input-two-keys', (_request, context) => (context.inputId === 'input-1' ? YES : { action: 'decline' }));
    const execution = await session.callTool('multi_input', {});
    const { outcome } = await execution.settle();
    expect(outcome.status).toBe('completed');
    expect(text(resultFromTaskOutcome(outcome))).toBe('first: accept, second: decline');

    expect(asked.map((entry) => entry.inputId)).toEqual(['input-1', 'input-2']);
    expect(asked.map((entry) => entry.request.params?.message)).toEqual(['Confirm the first step?', 'Confirm the second step?']);
    const waiting = (await exchangesOf(client.http, 'tasks/get')).find((poll) => poll.result?.status === 'input_required');
    expect(Object.keys(waiting?.result?.inputRequests ?? {}).sort()).toEqual(['input-1', 'input-2']);
    const updates = await exchangesOf(client.http, 'tasks/update');
    expect(updates).toHaveLength(1);
    expect(updates[0]?.params.inputResponses).toEqual({ 'input-1': YES, 'input-2': { action: 'decline' } });
  });

  it('E27/C-V2-13 partial answer: one key of multi_input answered raw, the task stays input_required listing only the other; the ext-tasks client answers the rest', async () => {
    const taskId = await createRaw(running.url, 'multi_input', {});
    const before = await waitingFor(running.url, taskId, ['input-1', 'input-2']);

    const ack = await update(running.url, taskId, { 'input-1': YES });
    expect(ack.status).toBe(200);
    expect(ackBody(ack.result)).toEqual({ resultType: 'complete' });
    const partial = await pollUntil(
      () => getTask(running.url, taskId),
      (task) => !('input-1' in (task.inputRequests ?? {})),
      { what: 'input-1 answered' },
    );
    expect(partial.status).toBe('input_required');
    expect(partial.inputRequests).toEqual({ 'input-2': before.inputRequests['input-2'] });

    const { session, asked } = await open('input-partial', () => NO);
    const resumed = await session.resumeTask({ endpointId: session.endpointId, generation: 'v2', taskId: toTaskId(taskId), originalOperation: 'tools/call' });
    const { outcome } = await resumed.settle();
    expect(outcome.status).toBe('completed');
    // The tool saw both answers: the raw one for input-1, the client's for input-2.
    expect(text(resultFromTaskOutcome(outcome))).toBe('first: accept, second: accept');
    expect(asked.map((entry) => entry.inputId)).toEqual(['input-2']);
    const rows = await running.store.listInputRequests(taskId);
    expect(rows.map((row) => [row.key, row.state, row.response])).toEqual([
      ['input-1', 'answered', YES],
      ['input-2', 'answered', NO],
    ]);
  });

  it('issue 3 §1: declined and cancelled answers reach the tool as such', async () => {
    const decline = await open('input-decline', () => ({ action: 'decline' }));
    const declined = await decline.session.callTool('confirm_delete', { filename: 'a.txt' });
    const declinedOutcome = (await declined.settle()).outcome;
    expect(declinedOutcome.status).toBe('completed');
    expect(text(resultFromTaskOutcome(declinedOutcome))).toBe('Kept a.txt (decline)');

    const cancel = await open('input-cancel', () => ({ action: 'cancel' }));
    const cancelled = await cancel.session.callTool('confirm_delete', { filename: 'b.txt' });
    const cancelledOutcome = (await cancelled.settle()).outcome;
    // A cancelled *answer* is not a cancelled *task*: the tool decides, and this one keeps the file.
    expect(cancelledOutcome.status).toBe('completed');
    expect(text(resultFromTaskOutcome(cancelledOutcome))).toBe('Kept b.txt (cancel)');
  });
});

describe('v2 input with a raw client (what a compliant client never sends)', () => {
  let running: RunningTasksServer;

  beforeAll(async () => {
    running = await startTasksServer({ tools: conformanceFixtureTools(), limits: { pollIntervalMs: 50 } });
  });
  afterAll(async () => {
    await running?.close();
  });

  it('E27/C-V2-11 a second answer to an answered key is acknowledged and has no effect: the tool sees the first', async () => {
    const taskId = await createRaw(running.url, 'multi_input', {});
    await waitingFor(running.url, taskId, ['input-1', 'input-2']);
    const first = await update(running.url, taskId, { 'input-1': YES });
    expect(ackBody(first.result)).toEqual({ resultType: 'complete' });
    const waiting = await waitingFor(running.url, taskId, ['input-2']);

    // input-1 is answered while the task still waits (for input-2): a second answer must change nothing.
    const second = await update(running.url, taskId, { 'input-1': { action: 'decline' } });
    expect(second.status).toBe(200);
    expect(second.error).toBeUndefined();
    expect(ackBody(second.result)).toEqual({ resultType: 'complete' });
    const still = await getTask(running.url, taskId);
    expect(still.status).toBe('input_required');
    expect(still.inputRequests).toEqual(waiting.inputRequests);
    expect(still.statusMessage).toBe(waiting.statusMessage);
    expect((await running.store.listInputRequests(taskId)).find((row) => row.key === 'input-1')).toMatchObject({ state: 'answered', response: YES });

    // Once more in the batch that completes the task.
    expect(ackBody((await update(running.url, taskId, { 'input-1': NO, 'input-2': YES })).result)).toEqual({ resultType: 'complete' });
    const done = await pollModernTask(running.url, taskId);
    expect(done.status).toBe('completed');
    expect(text(done.result)).toBe('first: accept, second: accept');
    const rows = await running.store.listInputRequests(taskId);
    expect(rows.map((row) => [row.key, row.state, row.response])).toEqual([
      ['input-1', 'answered', YES],
      ['input-2', 'answered', YES],
    ]);
    // After the task is terminal, another answer is still just acknowledged.
    expect(ackBody((await update(running.url, taskId, { 'input-1': NO })).result)).toEqual({ resultType: 'complete' });
    expect(text((await getTask(running.url, taskId)).result)).toBe('first: accept, second: accept');
  });

  it('E27/C-V2-12 an answer under a never-issued key is acknowledged and ignored; the outstanding request is unchanged', async () => {
    const taskId = await createRaw(running.url, 'confirm_delete', { filename: 'unknown-key.txt' });
    const before = await waitingFor(running.url, taskId, ['input-1']);
    const ack = await update(running.url, taskId, { 'input-9': YES, 'gather-1': YES, 'not-a-key': YES });
    expect(ack.status).toBe(200);
    expect(ackBody(ack.result)).toEqual({ resultType: 'complete' });

    const after = await getTask(running.url, taskId);
    expect(after.status).toBe('input_required');
    expect(after.inputRequests).toEqual(before.inputRequests);
    expect(after.statusMessage).toBe(before.statusMessage);
    expect((await running.store.listInputRequests(taskId)).map((row) => [row.key, row.state])).toEqual([['input-1', 'pending']]);

    await update(running.url, taskId, { 'input-1': YES });
    expect(text((await pollModernTask(running.url, taskId)).result)).toBe('Deleted unknown-key.txt');
  });

  it('issue 3 §1/E23/E27 an accepted answer failing requestedSchema is acknowledged, its key retired, the question asked again as input-1.2 with a statusMessage saying why; a valid answer then completes', async () => {
    const taskId = await createRaw(running.url, 'confirm_delete', { filename: 'invalid.txt' });
    const before = await waitingFor(running.url, taskId, ['input-1']);
    const ack = await update(running.url, taskId, { 'input-1': { action: 'accept', content: { confirm: 'yes please' } } });
    expect(ack.status).toBe(200);
    expect(ackBody(ack.result)).toEqual({ resultType: 'complete' });

    const again = await waitingFor(running.url, taskId, ['input-1.2']);
    expect(again.inputRequests['input-1.2']).toEqual(before.inputRequests['input-1']);
    expect(again.statusMessage).toEqual(expect.stringContaining('input-1'));
    expect(again.statusMessage).toEqual(expect.stringContaining('input-1.2'));
    expect(again.statusMessage).toMatch(/schema/i);

    // The retired key stays retired: a (valid) late answer to it is ignored.
    await update(running.url, taskId, { 'input-1': NO });
    expect((await getTask(running.url, taskId)).inputRequests).toEqual({ 'input-1.2': before.inputRequests['input-1'] });

    await update(running.url, taskId, { 'input-1.2': YES });
    const done = await pollModernTask(running.url, taskId);
    expect(done.status).toBe('completed');
    expect(text(done.result)).toBe('Deleted invalid.txt');
    expect((await running.store.listInputRequests(taskId)).map((row) => [row.key, row.state])).toEqual([
      ['input-1', 'superseded'],
      ['input-1.2', 'answered'],
    ]);
  });

  it('E19/E23/C-V2-09 keys are stable across polls and never reused: answered and retired keys never reappear, re-asks get fresh keys', async () => {
    const taskId = await createRaw(running.url, 'multi_input', {});
    const seen = new Map<string, string>();
    const everListed: string[][] = [];
    const observe = async (): Promise<Record<string, any>> => {
      const task = await getTask(running.url, taskId);
      const keys = Object.keys(task.inputRequests ?? {});
      everListed.push(keys);
      for (const key of keys) {
        const request = JSON.stringify(task.inputRequests[key]);
        // A key never names two different requests (E23).
        expect(seen.get(key) ?? request).toBe(request);
        seen.set(key, request);
      }
      return task;
    };
    await waitingFor(running.url, taskId, ['input-1', 'input-2']);
    const polls = [await observe(), await observe(), await observe()];
    expect(polls.map((poll) => poll.inputRequests)).toEqual([polls[0]?.inputRequests, polls[0]?.inputRequests, polls[0]?.inputRequests]);

    // input-2 answered, input-1 answered invalidly → input-1.2.
    await update(running.url, taskId, { 'input-1': { action: 'accept', content: {} }, 'input-2': YES });
    await waitingFor(running.url, taskId, ['input-1.2']);
    await observe();
    // input-1.2 invalid again → input-1.3 (never input-1 or input-1.2 again).
    await update(running.url, taskId, { 'input-1.2': { action: 'accept', content: { confirm: 3 } } });
    await waitingFor(running.url, taskId, ['input-1.3']);
    await observe();
    await observe();
    await update(running.url, taskId, { 'input-1.3': { action: 'decline' } });
    const done = await pollModernTask(running.url, taskId);
    expect(text(done.result)).toBe('first: decline, second: accept');

    expect([...seen.keys()].sort()).toEqual(['input-1', 'input-1.2', 'input-1.3', 'input-2']);
    // Once a key has left the list it never comes back.
    const left = new Set<string>();
    let previous: string[] = [];
    for (const keys of everListed) {
      for (const key of previous) if (!keys.includes(key)) left.add(key);
      for (const key of keys) expect(left.has(key)).toBe(false);
      previous = keys;
    }
    const rows = await running.store.listInputRequests(taskId);
    expect(new Set(rows.map((row) => row.key)).size).toBe(rows.length);
  });

  it('E28/C-V2-26 a task created by a request without elicitation in its clientCapabilities fails with -32021 and data.requiredCapabilities instead of waiting', async () => {
    const taskId = await createRaw(running.url, 'confirm_delete', { filename: 'no-elicitation.txt' }, { extensions: { [TASKS_EXTENSION]: {} } });
    const done = await pollModernTask(running.url, taskId);
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: expect.any(Object) } } });
    expect(done).not.toHaveProperty('inputRequests');
    // No question was ever stored, so none could ever be listed.
    expect(await running.store.listInputRequests(taskId)).toEqual([]);
  });
});

describe('v2 input timeout', () => {
  let running: RunningTasksServer;

  beforeAll(async () => {
    running = await startTasksServer({ tools: conformanceFixtureTools(), limits: { pollIntervalMs: 50, inputTimeoutMs: 300, sweepIntervalMs: 50 } });
  });
  afterAll(async () => {
    await running?.close();
  });

  it('issue 3 §1 a task waiting for input longer than limits.inputTimeoutMs fails with data.reason "input_timeout" and a clear statusMessage', async () => {
    const taskId = await createRaw(running.url, 'confirm_delete', { filename: 'timeout.txt' });
    await pollUntil(
      () => getTask(running.url, taskId),
      (task) => task.status !== 'working',
      { what: 'task left working' },
    );
    const done = await pollModernTask(running.url, taskId);
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ data: { reason: 'input_timeout' } });
    expect(typeof (done.error as { code?: unknown }).code).toBe('number');
    expect(String(done.statusMessage)).toMatch(/input/i);
    expect(done).not.toHaveProperty('inputRequests');
    // A late answer is acknowledged and changes nothing.
    expect(ackBody((await update(running.url, taskId, { 'input-1': YES })).result)).toEqual({ resultType: 'complete' });
    expect((await getTask(running.url, taskId)).status).toBe('failed');
  });
});

const NAME_SCHEMA = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
const FILE_SCHEMA = { type: 'object', properties: { file: { type: 'string' } }, required: ['file'] };
const ISSUER = 'https://issuer.e2e.test';
const TOKEN_A = 'mrtr-owner-a-token-0123456789';
const TOKEN_B = 'mrtr-owner-b-token-0123456789';

/** Asks which file before the task exists (MRTR), then, inside the task, whether to delete it. */
const gatherThenConfirm = defineTool({
  name: 'gather_then_confirm',
  description: 'Asks for a file name (MRTR), then for confirmation inside the task.',
  execution: 'task-optional',
  idempotent: true,
  elicits: true,
  inputSchema: z.object({}),
  async gather(_args, ctx) {
    const answer = await ctx.elicit({ message: 'Which file?', requestedSchema: FILE_SCHEMA });
    return answer.action === 'accept' ? String(answer.content?.file ?? '') : '';
  },
  async run(_args, ctx) {
    const file = String(ctx.gathered);
    const answer = await ctx.elicit({ message: `Really delete ${file}?`, requestedSchema: CONFIRM_SCHEMA });
    return textResult(answer.action === 'accept' && answer.content?.confirm === true ? `Deleted ${file}` : `Kept ${file}`);
  },
});

describe('MRTR before a task, composed with task input (raw 2026-07-28 requests, authentication on)', () => {
  let running: RunningTasksServer;

  beforeAll(async () => {
    const auth = new TokenFileAuthenticator({
      tokens: [
        { token: TOKEN_A, issuer: ISSUER, subject: 'alice', tenant: 'acme' },
        { token: TOKEN_B, issuer: ISSUER, subject: 'bob', tenant: 'acme' },
      ],
    });
    running = await startTasksServer({ tools: [...conformanceFixtureTools(), gatherThenConfirm], auth, limits: { pollIntervalMs: 50 } });
  });
  afterAll(async () => {
    await running?.close();
  });

  /** Round 1 of a gathering `tools/call`: must be an InputRequiredResult (no task). */
  async function roundOne(name: string, token = TOKEN_A): Promise<{ inputRequests: Record<string, any>; requestState: string }> {
    const response = await postModern(
      running.url,
      'tools/call',
      { name, arguments: {} },
      { capabilities: ELICITING, token, id: `round-1-${name}-${Math.random()}` },
    );
    expect(response.status).toBe(200);
    const result = response.body.result ?? {};
    expect(result.resultType).toBe('input_required');
    expect(result).not.toHaveProperty('taskId');
    expect(typeof result.requestState).toBe('string');
    return { inputRequests: result.inputRequests as Record<string, any>, requestState: result.requestState as string };
  }

  /** The retry: a new id, `inputResponses` and the echoed `requestState` at params level (B16). */
  function retry(name: string, inputResponses: Record<string, unknown>, requestState: string, token = TOKEN_A) {
    return postModern(
      running.url,
      'tools/call',
      { name, arguments: {}, inputResponses, requestState },
      { capabilities: ELICITING, token, id: `retry-${name}-${Math.random()}` },
    );
  }

  it('E16/B14/B16/C-V2-25 round 1 answers input_required (gather-1, requestState, no task); the retry with a new id creates the task, whose result names the answer', async () => {
    const first = await roundOne('test_tool_with_task');
    expect(first.inputRequests).toEqual({
      'gather-1': { method: 'elicitation/create', params: { mode: 'form', message: 'What is your name?', requestedSchema: NAME_SCHEMA } },
    });

    const created = await retry('test_tool_with_task', { 'gather-1': { action: 'accept', content: { name: 'Ada' } } }, first.requestState);
    expect(created.status).toBe(200);
    expect(created.body.result).toMatchObject({ resultType: 'task', status: 'working', taskId: expect.any(String) });
    const taskId = created.body.result?.taskId as string;
    const done = await pollModernTask(running.url, taskId, { token: TOKEN_A });
    expect(done.status).toBe('completed');
    expect(text(done.result)).toBe('Hello, Ada!');
  });

  it('B15/C-V2-25 a tampered or forged requestState is rejected with -32602 and no task is created', async () => {
    const first = await roundOne('test_tool_with_task');
    const middle = Math.floor(first.requestState.length / 2);
    const flipped = first.requestState[middle] === 'A' ? 'B' : 'A';
    const tampered = first.requestState.slice(0, middle) + flipped + first.requestState.slice(middle + 1);
    const answers = { 'gather-1': { action: 'accept', content: { name: 'Mallory' } } };
    const listed = async () => (await running.store.list({ ownerKey: `${ISSUER}|alice|acme`, generation: 'v2' }, { afterSeq: 0, limit: 1000 })).length;
    const tasksBefore = await listed();

    for (const state of [tampered, `${first.requestState}x`, 'v1.forged-state']) {
      const response = await retry('test_tool_with_task', answers, state);
      expect(response.body.error?.code, `requestState ${state}`).toBe(-32602);
      expect(response.body).not.toHaveProperty('result');
    }
    expect(await listed()).toBe(tasksBefore);
  });

  it('B15/C-SEC-08 a requestState replayed by another principal is rejected with -32602; its owner can still use it', async () => {
    const first = await roundOne('test_tool_with_task', TOKEN_A);
    const answers = { 'gather-1': { action: 'accept', content: { name: 'Bob' } } };
    const replayed = await retry('test_tool_with_task', answers, first.requestState, TOKEN_B);
    expect(replayed.body.error?.code).toBe(-32602);
    expect(replayed.body).not.toHaveProperty('result');

    const own = await retry('test_tool_with_task', { 'gather-1': { action: 'accept', content: { name: 'Alice' } } }, first.requestState, TOKEN_A);
    expect(own.body.result?.resultType).toBe('task');
    const done = await pollModernTask(running.url, own.body.result?.taskId as string, { token: TOKEN_A });
    expect(text(done.result)).toBe('Hello, Alice!');
  });

  it('E16/E23 the two phases keep separate keys: gather-1 on tools/call, input-1 on the task; a gather key sent to tasks/update is ignored', async () => {
    const first = await roundOne('gather_then_confirm');
    expect(Object.keys(first.inputRequests)).toEqual(['gather-1']);
    const created = await retry('gather_then_confirm', { 'gather-1': { action: 'accept', content: { file: 'notes.txt' } } }, first.requestState);
    const taskId = created.body.result?.taskId as string;
    expect(created.body.result?.resultType).toBe('task');

    const waiting = await pollUntil(
      async () => (await postModern(running.url, 'tasks/get', { taskId }, { token: TOKEN_A })).body.result ?? {},
      (task) => task.status === 'input_required',
      { what: 'task input_required' },
    );
    expect(waiting.inputRequests).toEqual({
      'input-1': { method: 'elicitation/create', params: { mode: 'form', message: 'Really delete notes.txt?', requestedSchema: CONFIRM_SCHEMA } },
    });

    const wrongPhase = await postModern(running.url, 'tasks/update', { taskId, inputResponses: { 'gather-1': YES } }, { token: TOKEN_A });
    expect(ackBody(wrongPhase.body.result)).toEqual({ resultType: 'complete' });
    expect((await postModern(running.url, 'tasks/get', { taskId }, { token: TOKEN_A })).body.result).toMatchObject({
      status: 'input_required',
      inputRequests: { 'input-1': expect.any(Object) },
    });

    await postModern(running.url, 'tasks/update', { taskId, inputResponses: { 'input-1': YES } }, { token: TOKEN_A });
    const done = await pollModernTask(running.url, taskId, { token: TOKEN_A });
    expect(done.status).toBe('completed');
    expect(text(done.result)).toBe('Deleted notes.txt');
  });
});

/**
 * Review of issue 28 (failing, not fixed): a tool that asks in place but runs only inline (`execution: 'sync'`, which
 * `upstreamTools` may set for any upstream tool) cannot be asked over 2026-07-28 at all. The refusal is a `-32021`
 * telling a client that declared the Tasks Extension to declare it "so the call becomes a task", with
 * `data.requiredCapabilities` naming what the request already carries: the call never becomes a task, and a host that
 * follows `requiredCapabilities` retries the same request for ever.
 */
describe('v2 in-place asking tool that runs only inline (execution: sync)', () => {
  let running: RunningTasksServer;
  beforeAll(async () => {
    const asksInline = defineTool({
      name: 'asks_inline',
      description: 'asks in place and runs only inline',
      execution: 'sync',
      elicits: 'in-place',
      inputSchema: z.object({}),
      async run(_args, ctx) {
        return textResult(JSON.stringify(await ctx.elicit({ message: 'Go on?', requestedSchema: CONFIRM_SCHEMA })));
      },
    });
    running = await startTasksServer({ tools: [asksInline] });
  });
  afterAll(async () => {
    await running?.close();
  });

  it('a client that declared the Tasks Extension is not told to declare it', async () => {
    const refused = await postModern(running.url, 'tools/call', { name: 'asks_inline', arguments: {} }, { capabilities: ELICITING });
    expect(refused.body.error).toBeDefined();
    expect((refused.body.error?.data as { requiredCapabilities?: unknown } | undefined)?.requiredCapabilities).toBeUndefined();
    expect(refused.body.error?.message).not.toContain('must declare the Tasks Extension');
    expect(refused.body.error).toMatchObject({ code: -32603, data: { reason: 'input_needs_task' } });
    expect(refused.body.error?.message).toContain('Tool asks_inline asks for input while it runs');
  });
});
