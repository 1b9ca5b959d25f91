/**
 * Issue 10 §1: the scope re-checks of the service door (`ScopeCheck`), called in process — the path of an embedder
 * or of stdio, where no HTTP front checks the method first. Each operation is judged on the scopes of the caller of
 * that call: `tasks:read` for get / list / result / subscribe, `tasks:cancel`, `tasks:answer`, the tool's scope at
 * `tools/call` and again when the task is answered or read (not when it is cancelled). A refused task operation
 * answers like an unknown task; every case has its allowed twin (negative control).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { isTaskNotFound, TasksError } from '../../src/core/errors.js';
import { ScopePolicy } from '../../src/core/scopes.js';
import type { TaskRecord } from '../../src/core/task.js';
import type { ScopeGrant, TaskCaller } from '../../src/service/caller.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';

const OWNER = 'https://issuer.example|alice|acme';
const ALL_TASK_SCOPES = ['tasks:read', 'tasks:cancel', 'tasks:answer', 'logs:read'];

function caller(scopes: ScopeGrant, ownerKey = OWNER): TaskCaller {
  return {
    ownerKey,
    scopes,
    negotiation: 'per-request',
    generation: 'v2',
    protocolVersion: '2026-07-28',
    clientCapabilities: { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } },
  };
}
const without = (scope: string) => caller(ALL_TASK_SCOPES.filter((candidate) => candidate !== scope));

async function refusal(promise: Promise<unknown>): Promise<TasksError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TasksError) return error;
    throw error;
  }
  throw new Error('expected a refusal, the operation succeeded');
}

describe('ScopeCheck in the task service door', () => {
  let running: RunningTasksServer;
  const service = () => running.server.service;

  async function waitingTask(as: TaskCaller): Promise<TaskRecord> {
    const plan = await service().calls.planCall(as, { name: 'confirm_delete', arguments: { filename: 'x' }, progressToken: null });
    const outcome = await service().calls.callTool(as, plan);
    if (outcome.kind !== 'task') throw new Error(`no task: ${outcome.kind}`);
    for (let i = 0; i < 400; i += 1) {
      const record = await service().tasks.get(as, outcome.task.taskId);
      if (record.status === 'input_required') return record;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('the task never asked for input');
  }

  beforeAll(async () => {
    running = await startTasksServer({
      tools: conformanceFixtureTools(),
      scopes: new ScopePolicy(new Map([['confirm_delete', ['logs:read']]])),
      limits: { pollIntervalMs: 50 },
    });
  });
  afterAll(async () => {
    await running?.close();
  });

  it('tools/call needs the tool scope: refused with -32602 naming it (reason insufficient_scope), nothing created; allowed with it', async () => {
    const plan = await service().calls.planCall(without('logs:read'), { name: 'confirm_delete', arguments: {}, progressToken: null });
    const before = (await running.store.list({ ownerKey: OWNER, generation: 'v2' }, { afterSeq: 0, limit: 1000 })).length;
    const refused = await refusal(service().calls.callTool(without('logs:read'), plan));
    expect(refused.toJsonRpc()).toEqual({
      code: -32602,
      message: 'Insufficient scope: tool confirm_delete needs logs:read',
      data: { reason: 'insufficient_scope', requiredScopes: ['logs:read'] },
    });
    expect((await running.store.list({ ownerKey: OWNER, generation: 'v2' }, { afterSeq: 0, limit: 1000 })).length).toBe(before);
    expect((await service().calls.callTool(caller(ALL_TASK_SCOPES), plan)).kind).toBe('task');
  });

  it('get / list / result / subscribe need tasks:read; the answer needs tasks:answer; cancel needs tasks:cancel — each refused task operation is the unknown-task answer', async () => {
    const task = await waitingTask(caller(ALL_TASK_SCOPES));
    const { taskId } = task;
    const noRead = without('tasks:read');
    expect(isTaskNotFound(await refusal(service().tasks.get(noRead, taskId)))).toBe(true);
    expect(isTaskNotFound(await refusal(service().tasks.waitForTerminal(noRead, taskId, AbortSignal.timeout(5000))))).toBe(true);
    expect((await refusal(service().tasks.list(noRead, undefined))).toJsonRpc()).toMatchObject({
      code: -32602,
      message: 'Insufficient scope: list needs tasks:read',
    });
    expect((await refusal(service().tasks.subscribe(noRead, [taskId], () => {}))).data).toMatchObject({ reason: 'insufficient_scope' });
    expect(
      isTaskNotFound(
        await refusal(service().tasks.answerInput(without('tasks:answer'), taskId, { 'input-1': { action: 'accept', content: { confirm: true } } })),
      ),
    ).toBe(true);
    expect(isTaskNotFound(await refusal(service().tasks.cancel(without('tasks:cancel'), taskId)))).toBe(true);
    expect((await service().tasks.get(caller(ALL_TASK_SCOPES), taskId)).status).toBe('input_required');
    expect((await running.store.listInputRequests(taskId)).map((request) => request.state)).toEqual(['pending']);

    // Negative control: with the scopes every one of them goes through.
    const ok = caller(ALL_TASK_SCOPES);
    expect((await service().tasks.list(ok, undefined)).tasks.map((record) => record.taskId)).toContain(taskId);
    const subscription = await service().tasks.subscribe(ok, [taskId], () => {});
    expect(subscription.taskIds).toEqual([taskId]);
    subscription.close();
    expect(await service().tasks.answerInput(ok, taskId, { 'input-1': { action: 'accept', content: { confirm: true } } })).toEqual(['input-1']);
    expect((await service().tasks.waitForTerminal(ok, taskId, AbortSignal.timeout(10_000))).status).toBe('completed');
  });

  it('the tool scope is re-checked when the task is answered and read, not when it is cancelled (stopping needs no authority to run)', async () => {
    const { taskId } = await waitingTask(caller(ALL_TASK_SCOPES));
    const lost = without('logs:read');
    expect(isTaskNotFound(await refusal(service().tasks.answerInput(lost, taskId, { 'input-1': { action: 'accept', content: { confirm: true } } })))).toBe(
      true,
    );
    expect(isTaskNotFound(await refusal(service().tasks.get(lost, taskId)))).toBe(true);
    expect(isTaskNotFound(await refusal(service().tasks.waitForTerminal(lost, taskId, AbortSignal.timeout(5000))))).toBe(true);
    expect((await service().tasks.subscribe(lost, [taskId], () => {})).taskIds).toEqual([]);
    expect(await service().tasks.resultPath(lost, taskId)).toBe('asks');
    expect((await service().tasks.cancel(lost, taskId)).cancelled).toBe(true);
  });

  it("the anonymous caller (scopes 'all': stdio, HTTP without --auth) passes every check; another owner never sees the task", async () => {
    const anonymous = caller('all', 'anonymous');
    const { taskId } = await waitingTask(anonymous);
    expect(await service().tasks.answerInput(anonymous, taskId, { 'input-1': { action: 'accept', content: { confirm: true } } })).toEqual(['input-1']);
    expect((await service().tasks.waitForTerminal(anonymous, taskId, AbortSignal.timeout(10_000))).status).toBe('completed');
    expect(isTaskNotFound(await refusal(service().tasks.get(caller('all'), taskId)))).toBe(true);
  });
});
