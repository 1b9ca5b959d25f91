/**
 * A run that lost its task keeps no say over the step journal (stop 46). A run whose lease lapsed (a stalled worker)
 * may still be running when another process takes the task over: its step write used to win the journal ("first
 * write wins") while the run that held the task went on with its own value; a resumed run then replayed the stale
 * value. Real server over real HTTP, real SQLite file; the takeover is an UPDATE on that file by a second connection
 * at a chosen point of the tool (the only seam). The store's own fence is in the contract (`store-contract/steps.ts`,
 * both backends); this proves the run host uses it (the in-process executor; the thread's crossing of `ctx.step` is
 * in thread-channels.test.ts and the chaos run). Two runs of one task in one process share the lease owner, so the
 * host also fences by run: a run that parked, or was aborted, starts no step.
 * Negative control: the same tool with its task held journals both steps and completes.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, textResult } from '../../src/core/tool.js';
import { answerPending } from '../helpers/answer-pending.js';
import { type CapturedLine, captureLogger } from '../helpers/capture-logger.js';
import { eventually } from '../helpers/run-notes.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { postModern, TASKS_EXTENSION } from '../helpers/wire.js';

type Moment = 'inside-step-a' | 'between-steps' | 'another-write-first' | 'never';

const servers: RunningTasksServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

/** A server whose journaled tool hands its task to `other-process` at `moment`; `executed` lists the steps run. */
async function start(moment: Moment): Promise<{ server: RunningTasksServer; executed: string[]; lines: CapturedLine[] }> {
  const executed: string[] = [];
  let dbPath = '';
  const onFile = (sql: string, taskId: string): void => {
    const db = new Database(dbPath);
    try {
      db.prepare(sql).run(taskId);
    } finally {
      db.close();
    }
  };
  const takeOver = (taskId: string): void => onFile("UPDATE tasks SET lease_owner = 'other-process' WHERE task_id = ?", taskId);
  const tool = defineTool({
    name: 'two_steps',
    description: 'Two journaled steps.',
    execution: 'task-optional',
    journaled: true,
    inputSchema: z.object({}),
    async run(_args, ctx) {
      const a = await ctx.step('a', () => {
        executed.push('a');
        if (moment === 'inside-step-a') takeOver(ctx.taskId!);
        // A run that still held the task journaled step a first (the store's answer is what counts).
        if (moment === 'another-write-first')
          onFile(`INSERT INTO task_steps (task_id, name, value, created_at) VALUES (?, 'a', '"value of the first write"', 0)`, ctx.taskId!);
        return 'value of a';
      });
      if (moment === 'between-steps') takeOver(ctx.taskId!);
      const b = await ctx.step('b', () => {
        executed.push('b');
        return 'value of b';
      });
      return textResult(JSON.stringify({ a, b }));
    },
  });
  const logs = captureLogger();
  const server = await startTasksServer({ tools: [tool], logger: logs.logger, instanceId: 'instance-of-this-run' });
  dbPath = server.dbPath;
  servers.push(server);
  return { server, executed, lines: logs.lines };
}

function read(dbPath: string, taskId: string): { status: unknown; steps: unknown } {
  const db = new Database(dbPath, { readonly: true });
  try {
    const { status } = db.prepare('SELECT status FROM tasks WHERE task_id = ?').get(taskId) as { status: string };
    const steps = db.prepare('SELECT name FROM task_steps WHERE task_id = ? ORDER BY name').all(taskId);
    return { status, steps: steps.map((row) => (row as { name: string }).name) };
  } finally {
    db.close();
  }
}

async function call(server: RunningTasksServer): Promise<string> {
  const created = await postModern(server.url, 'tools/call', { name: 'two_steps', arguments: {} });
  const taskId = created.body.result?.taskId;
  if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
  return taskId;
}

// The run is aborted as soon as the store says its task is another's (as the heartbeat would find), its outcome dropped.
const discarded = (lines: CapturedLine[]) => () => lines.some((line) => line.message === 'tool run aborted; its outcome is discarded');

describe('the step journal of a run that lost its task (stop 46)', () => {
  it('a step the run finished after the takeover is not journaled, and the run goes no further', async () => {
    const { server, executed, lines } = await start('inside-step-a');
    const taskId = await call(server);
    await eventually('the discarded outcome', discarded(lines));
    expect(executed).toEqual(['a']);
    expect(read(server.dbPath, taskId)).toEqual({ status: 'working', steps: [] });
    expect(lines.some((line) => line.message?.includes('its step is neither run nor journaled') === true)).toBe(true);
    // Not logged as a tool that crashed, and no task id in what the tool was told (it may hand that on).
    expect(lines.filter((line) => line.message === 'tool threw')).toEqual([]);
  });

  it('a step not yet begun when the task was taken over is not run', async () => {
    const { server, executed, lines } = await start('between-steps');
    const taskId = await call(server);
    await eventually('the discarded outcome', discarded(lines));
    expect(executed).toEqual(['a']);
    expect(read(server.dbPath, taskId)).toEqual({ status: 'working', steps: ['a'] });
  });

  it('a run goes on with the value the journal holds when an earlier write of the step won', async () => {
    const { server, executed } = await start('another-write-first');
    const taskId = await call(server);
    await eventually('the completion', () => read(server.dbPath, taskId).status === 'completed');
    expect(executed).toEqual(['a', 'b']);
    const done = await postModern(server.url, 'tasks/get', { taskId });
    expect(JSON.stringify(done.body)).toContain(JSON.stringify(JSON.stringify({ a: 'value of the first write', b: 'value of b' })).slice(1, -1));
  });

  it('negative control: with its task held, the run journals both steps and completes', async () => {
    const { server, executed } = await start('never');
    const taskId = await call(server);
    await eventually('the completion', () => read(server.dbPath, taskId).status === 'completed');
    expect(executed).toEqual(['a', 'b']);
    expect(read(server.dbPath, taskId)).toEqual({ status: 'completed', steps: ['a', 'b'] });
  });
});

const ELICITING = { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {} } };
const QUESTION = { message: 'ok?', requestedSchema: { type: 'object' as const, properties: { ok: { type: 'boolean' as const } } } };

async function answer(server: RunningTasksServer, taskId: string): Promise<void> {
  await answerPending(server.store, taskId, { ok: true });
}

const status = async (server: RunningTasksServer, taskId: string) => (await server.store.getUnscoped(taskId))?.status;

describe('two runs of one task in one process (review of the fence: the lease owner is the process, not the run)', () => {
  it('a run that parked for input but carried on starts no step, while the next run of the same task in the same process does', async () => {
    const executed: number[] = [];
    const reached: number[] = [];
    const errors: string[] = [];
    const gates: Array<() => void> = [];
    let runs = 0;
    const tool = defineTool({
      name: 'ask_then_step',
      description: 'Asks, then runs one step; its first run swallows the park.',
      execution: 'task-optional',
      journaled: true,
      elicits: true,
      inputSchema: z.object({}),
      async run(_args, ctx) {
        const me = ++runs;
        try {
          await ctx.elicit(QUESTION);
        } catch (error) {
          if (me !== 1) throw error;
        }
        reached.push(me);
        await new Promise<void>((resolve) => (gates[me] = resolve));
        try {
          return textResult(await ctx.step('s', () => (executed.push(me), `run ${me}`)));
        } catch (error) {
          errors.push((error as Error).message);
          throw error;
        }
      },
    });
    const server = await startTasksServer({ tools: [tool] });
    servers.push(server);
    const created = await postModern(server.url, 'tools/call', { name: 'ask_then_step', arguments: {} }, { capabilities: ELICITING });
    const taskId = created.body.result?.taskId as string;
    await eventually('run 1 parked and carried on', () => reached.includes(1));
    await answer(server, taskId);
    await eventually('run 2 at its step', () => reached.includes(2));
    // The stale run goes first: the store alone cannot tell it apart (same lease owner: this process).
    gates[1]!();
    await eventually('run 1 refused', () => errors.length > 0);
    expect(errors).toEqual(['This run is over (it was stopped, or it is waiting for input); step "s" was not run']);
    gates[2]!();
    await eventually('the completion', async () => (await status(server, taskId)) === 'completed');
    expect(executed).toEqual([2]);
    expect(await server.store.getStep(taskId, 's')).toEqual({ value: 'run 2' });
  });

  it('a step under way when its run parked is journaled and replayed by the next run, not run again', async () => {
    const executed: number[] = [];
    let runs = 0;
    let firstStepDone = false;
    const tool = defineTool({
      name: 'fetch_and_ask',
      description: 'Runs a step while it asks.',
      execution: 'task-optional',
      journaled: true,
      elicits: true,
      inputSchema: z.object({}),
      async run(_args, ctx) {
        const me = ++runs;
        const step = ctx.step('fetch', async () => {
          executed.push(me);
          await new Promise((resolve) => setTimeout(resolve, 150));
          return `fetched by run ${me}`;
        });
        void step.finally(() => (firstStepDone ||= me === 1)).catch(() => undefined);
        const [fetched] = await Promise.all([step, ctx.elicit(QUESTION)]);
        return textResult(fetched);
      },
    });
    const server = await startTasksServer({ tools: [tool] });
    servers.push(server);
    const created = await postModern(server.url, 'tools/call', { name: 'fetch_and_ask', arguments: {} }, { capabilities: ELICITING });
    const taskId = created.body.result?.taskId as string;
    await eventually('the park', async () => (await status(server, taskId)) === 'input_required');
    await eventually("run 1's step", () => firstStepDone);
    expect(await server.store.getStep(taskId, 'fetch')).toEqual({ value: 'fetched by run 1' });
    await answer(server, taskId);
    await eventually('the completion', async () => (await status(server, taskId)) === 'completed');
    expect(executed).toEqual([1]);
  });
});
