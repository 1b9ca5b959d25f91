import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { systemClock } from '../../src/core/clock.js';
import type { TasksServerLimits } from '../../src/core/limits.js';
import { silentLogger } from '../../src/core/logger.js';
import type { TaskStore } from '../../src/core/store.js';
import { type AnyToolDefinition, defineTool, textResult, type ToolContext } from '../../src/core/tool.js';
import { ToolRegistry } from '../../src/core/tool-registry.js';
import { Sweeper } from '../../src/execution/sweeper.js';
import { createTasksServer } from '../../src/server/create-tasks-server.js';
import type { TaskCaller } from '../../src/service/caller.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { answerPending } from '../helpers/answer-pending.js';
import { anonymousV2Caller, CONFIRM_SCHEMA } from '../helpers/callers.js';
import { QUIET_LIMITS } from '../helpers/quiet-limits.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * Issue 28 (elicitation through `serve --upstream`): a tool with `elicits: 'in-place'` asks in a task without ending
 * its run — the task is `input_required` while the run holds its slot and lease, and the answer, from this process
 * or another, reaches the same run. The controls are the same tool with `elicits: true`, which is run again.
 */

const LIMITS: Partial<TasksServerLimits> = { ...QUIET_LIMITS, tailIntervalMs: 50 };
const CALLER: TaskCaller = anonymousV2Caller({ elicitation: { form: {} } });

describe("a tool that asks in place (elicits: 'in-place')", () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** What the tool does between its start and its result (by default: asks one question). */
  type Asking = (ctx: ToolContext) => Promise<string>;
  const askOnce: Asking = async (ctx) => {
    const answer = await ctx.elicit({ message: 'Go on?', requestedSchema: CONFIRM_SCHEMA });
    return `${answer.action} ${JSON.stringify(answer.content)}`;
  };

  async function serve(elicits: true | 'in-place', ask: Asking = askOnce, limits: Partial<TasksServerLimits> = LIMITS) {
    const temp = makeTempDir();
    cleanups.push(() => temp.remove());
    const path = join(temp.dir, 'tasks.db');
    const store = openSqliteTaskStore({ path });
    cleanups.push(() => store.close());
    const counts = { runs: 0, aborted: 0 };
    const tool = defineTool({
      name: 'confirm_job',
      description: 'asks once, then completes',
      execution: 'task-optional',
      // Only the re-run kind must be safe to run again; the in-place one is registered without it.
      ...(elicits === true ? { idempotent: true } : {}),
      elicits,
      inputSchema: z.object({}),
      async run(_args, ctx) {
        counts.runs += 1;
        ctx.signal.addEventListener('abort', () => (counts.aborted += 1));
        return textResult(await ask(ctx));
      },
    });
    const server = await createTasksServer({ tools: [tool], store, secret: randomBytes(32), limits, instanceId: 'w1' });
    cleanups.push(() => server.close());
    const { service } = server;
    const outcome = await service.calls.callTool(CALLER, await service.calls.planCall(CALLER, { name: 'confirm_job', progressToken: null }));
    if (outcome.kind !== 'task') throw new Error('no task');
    const { taskId } = outcome.task;
    await expect.poll(async () => (await store.getUnscoped(taskId))?.status, { timeout: 5000 }).toBe('input_required');
    const answer = (via: TaskStore = store) => answerPending(via, taskId);
    const done = () => service.tasks.waitForTerminal(CALLER, taskId, AbortSignal.timeout(10_000));
    return { store, path, server, service, taskId, counts, answer, done };
  }

  it('waits input_required holding its lease and slot, and the answer reaches the same run (one run, no re-run)', async () => {
    const { store, taskId, counts, answer, done } = await serve('in-place');
    expect(await store.getUnscoped(taskId)).toMatchObject({
      status: 'input_required',
      leaseOwner: 'w1',
      attempt: 1,
      statusMessage: 'Waiting for input: Go on?',
    });
    await answer();
    expect(await done()).toMatchObject({ status: 'completed', attempt: 1 });
    expect(await store.getOutcome(taskId)).toMatchObject({ kind: 'result', result: { content: [{ type: 'text', text: 'accept {"confirm":true}' }] } });
    expect(counts).toEqual({ runs: 1, aborted: 0 });
  }, 20_000);

  it('control: the same tool with elicits: true ends its run at the question and is run again after the answer', async () => {
    const { store, taskId, counts, answer, done } = await serve(true);
    expect(await store.getUnscoped(taskId)).toMatchObject({ status: 'input_required', leaseOwner: null, attempt: 0 });
    await answer();
    expect(await done()).toMatchObject({ status: 'completed' });
    expect(counts.runs).toBe(2);
  }, 20_000);

  it('an answer written by another process (a second store on the same file) reaches the waiting run', async () => {
    const { path, counts, answer, done } = await serve('in-place');
    const peer = openSqliteTaskStore({ path });
    cleanups.push(() => peer.close());
    await answer(peer);
    expect(await done()).toMatchObject({ status: 'completed', attempt: 1 });
    expect(counts.runs).toBe(1);
  }, 20_000);

  it('cancelling the task while it waits in place aborts the run; nothing runs again', async () => {
    const { service, taskId, counts } = await serve('in-place');
    await service.tasks.cancel(CALLER, taskId);
    await expect.poll(() => counts.aborted, { timeout: 5000 }).toBe(1);
    expect(await service.tasks.waitForTerminal(CALLER, taskId, AbortSignal.timeout(5000))).toMatchObject({ status: 'cancelled' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(counts.runs).toBe(1);
  }, 20_000);

  // Review of issue 28: the task fails in another component while its run waits in place — the input-timeout sweep
  // (any process) or an answer that fails its schema a third time (the API). The lease heartbeat (every leaseMs / 3:
  // 20 s here, 5 s by default) was what stopped such a run, and meanwhile it held its slot and kept its upstream call open.
  it('a task failed by the input-timeout sweep while its run waits in place: the run is aborted at once and its slot freed', async () => {
    const { store, server, taskId, counts } = await serve('in-place');
    await new Promise((resolve) => setTimeout(resolve, 5));
    await new Sweeper(store, { sweepIntervalMs: 60_000, inputTimeoutMs: 1 }, systemClock, silentLogger).sweep();
    expect(await store.getUnscoped(taskId)).toMatchObject({ status: 'failed' });
    await expect.poll(() => counts.aborted, { timeout: 1000 }).toBe(1);
    await expect.poll(() => server.worker?.activeRuns, { timeout: 1000 }).toBe(0);
    expect(await store.getOutcome(taskId)).toMatchObject({ kind: 'error', error: { data: { reason: 'input_timeout' } } });
    expect(counts.runs).toBe(1);
  }, 20_000);

  it('a task failed by its third invalid answer (input_invalid) while its run waits in place: the run is aborted at once', async () => {
    const { service, server, taskId, counts } = await serve('in-place');
    for (const key of ['input-1', 'input-1.2', 'input-1.3'])
      await service.tasks.answerInput(CALLER, taskId, { [key]: { action: 'accept', content: { confirm: 'not a boolean' } } });
    expect(await service.tasks.get(CALLER, taskId)).toMatchObject({ status: 'failed' });
    await expect.poll(() => counts.aborted, { timeout: 1000 }).toBe(1);
    await expect.poll(() => server.worker?.activeRuns, { timeout: 1000 }).toBe(0);
    expect(counts.runs).toBe(1);
  }, 20_000);

  // Review of issue 28: two questions of one run at once (an upstream may send a second elicitation/create before the
  // first is answered). The second found the task input_required already, its park was refused, and the run ended
  // "parked" — leaving the task input_required with the lease of a run that no longer existed.
  it('two questions asked at once by a run that waits in place are asked one after the other, and the same run gets both answers', async () => {
    const both: Asking = async (ctx) => {
      const answers = await Promise.all([
        ctx.elicit({ message: 'First?', requestedSchema: CONFIRM_SCHEMA }),
        ctx.elicit({ message: 'Second?', requestedSchema: CONFIRM_SCHEMA }),
      ]);
      return answers.map((answer) => JSON.stringify(answer.content)).join(' ');
    };
    const { store, service, taskId, counts, done } = await serve('in-place', both);
    expect((await store.listInputRequests(taskId)).map((request) => request.key)).toEqual(['input-1']);
    await service.tasks.answerInput(CALLER, taskId, { 'input-1': { action: 'accept', content: { confirm: true } } });
    await expect
      .poll(async () => (await store.listInputRequests(taskId)).find((request) => request.key === 'input-2')?.state, { timeout: 5000 })
      .toBe('pending');
    expect(await store.getUnscoped(taskId)).toMatchObject({ status: 'input_required', statusMessage: 'Waiting for input: Second?', leaseOwner: 'w1' });
    await service.tasks.answerInput(CALLER, taskId, { 'input-2': { action: 'accept', content: { confirm: false } } });
    expect(await done()).toMatchObject({ status: 'completed', attempt: 1 });
    expect(await store.getOutcome(taskId)).toMatchObject({ result: { content: [{ text: '{"confirm":true} {"confirm":false}' }] } });
    expect(counts).toEqual({ runs: 1, aborted: 0 });
  }, 20_000);

  it('what the tool reports while it waits (an upstream progress) changes neither the question in statusMessage nor the start of the input timeout', async () => {
    let ticks = 0;
    const { store, taskId, answer, done } = await serve(
      'in-place',
      async (ctx) => {
        ctx.progress(0, 10, 'before the question');
        const timer = setInterval(() => ctx.progress((ticks += 1), 10, `upstream step ${ticks}`), 20);
        try {
          return await askOnce(ctx);
        } finally {
          clearInterval(timer);
        }
      },
      { ...LIMITS, statusFlushIntervalMs: 10 },
    );
    const asked = (await store.getUnscoped(taskId))!;
    expect(asked.statusMessage).toBe('Waiting for input: Go on?');
    await expect.poll(() => ticks).toBeGreaterThan(10);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await store.getUnscoped(taskId)).toMatchObject({ statusMessage: 'Waiting for input: Go on?', lastUpdatedAt: asked.lastUpdatedAt });
    await answer();
    expect(await done()).toMatchObject({ status: 'completed' });
  }, 20_000);

  it('registers without idempotent or journaled, which elicits: true requires', () => {
    const tool = (elicits: true | 'in-place'): AnyToolDefinition =>
      defineTool({ name: 't', description: 't', execution: 'task-optional', elicits, inputSchema: z.object({}), run: async () => textResult('') });
    expect(() => new ToolRegistry([tool('in-place')])).not.toThrow();
    expect(() => new ToolRegistry([tool(true)])).toThrow(/neither idempotent nor journaled/);
  });
});
