import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, textResult } from '../../src/core/tool.js';
import { OPERATIONS_META_KEY } from '../../src/protocol/constants.js';
import { RawLegacySession } from '../helpers/sse.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const run = promisify(execFile);

describe('issue 12: the domain outcome next to the task state (tasks/get _meta on both generations, mcp-tasks get)', () => {
  let running: RunningTasksServer;
  beforeAll(async () => {
    const operations = { 'demo.effect': { reconcile: async () => ({ status: 'not_applied' as const }) } };
    const effectThenWait = defineTool({
      name: 'effect_then_wait',
      description: 'performs one effect, then waits until cancelled',
      execution: 'task-required',
      journaled: true,
      operations,
      inputSchema: z.object({ fail: z.boolean().default(false) }),
      async run({ fail }, ctx) {
        await ctx.operation({ key: 'effect', effect: 'demo.effect', target: 'demo-target' }, async (operationId) => ({ ref: `R-${operationId.slice(0, 6)}` }));
        if (fail) throw new Error('failed after the effect');
        ctx.setStatus('effect done; waiting');
        await new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }));
        return textResult('unreachable');
      },
    });
    running = await startTasksServer({ tools: [effectThenWait] });
  });
  afterAll(async () => {
    await running.close();
  });

  const operationsOf = (result: Record<string, any> | undefined) => result?._meta?.[OPERATIONS_META_KEY] as Array<Record<string, unknown>> | undefined;

  it('v2: cancelled after the effect shows status cancelled and the operation confirmed; mcp-tasks get prints both', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'effect_then_wait', arguments: {} });
    const taskId = (created.body.result as any).taskId as string;
    await pollModernTask(running.url, taskId, { until: () => true });
    for (let i = 0; i < 200; i++) {
      const got = await postModern(running.url, 'tasks/get', { taskId });
      if (operationsOf(got.body.result)?.[0]?.status === 'confirmed') break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const cancel = await postModern(running.url, 'tasks/cancel', { taskId });
    expect(cancel.body.error).toBeUndefined();
    const got = await postModern(running.url, 'tasks/get', { taskId });
    expect(got.body.result).toMatchObject({ status: 'cancelled' });
    const [operation] = operationsOf(got.body.result) ?? [];
    expect(operation).toMatchObject({ effect: 'demo.effect', status: 'confirmed', receipt: { ref: expect.stringMatching(/^R-/) } });
    expect(Object.keys(operation ?? {}).sort()).toEqual(['effect', 'operationId', 'receipt', 'status']);

    const { stdout } = await run(process.execPath, [MAIN, 'get', taskId, '--url', running.url, '--protocol', '2026-07-28'], {
      env: { ...process.env, MCP_TASKS_CLIENT_STATE: resolve(running.dbPath, '..', 'journal.json') },
    });
    expect(stdout).toMatch(/status\s+cancelled\s+domain outcome: confirmed \(1 operation\)/);
    expect(stdout).toContain(`${String(operation?.operationId)}  demo.effect  confirmed`);
  });

  it('v2: a failed task carries its operations too', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'effect_then_wait', arguments: { fail: true } });
    const done = await pollModernTask(running.url, (created.body.result as any).taskId);
    expect(done.status).toBe('failed');
    expect(operationsOf(done)?.[0]).toMatchObject({ status: 'confirmed' });
  });

  it('v1: tasks/get carries the same _meta; a task without operations has none', async () => {
    const session = await RawLegacySession.open(running.url);
    const created = await session.request('tools/call', { name: 'effect_then_wait', arguments: { fail: true }, task: {} });
    const taskId = (created.body.result as any).task.taskId as string;
    let result: Record<string, any> | undefined;
    for (let i = 0; i < 200; i++) {
      result = (await session.request('tasks/get', { taskId })).body.result;
      if (result?.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(result?.status).toBe('failed');
    expect(operationsOf(result)?.[0]).toMatchObject({ effect: 'demo.effect', status: 'confirmed' });
  });
});
