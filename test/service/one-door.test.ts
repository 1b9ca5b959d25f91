import { afterEach, describe, expect, it } from 'vitest';

import { TasksError } from '../../src/core/errors.js';
import type { TaskOperationContext, TaskServiceHook } from '../../src/service/hooks.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { openListen, RawLegacySession } from '../helpers/sse.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

/**
 * Issue 11: the task service is the ONE door. Every entry path — the SDK handlers of both generations, the HTTP fast
 * path, listen streams and v1 elicitation replies — reaches tasks only through its operations, so a hook (the seam of
 * authorization, quotas, audit, metrics of later issues) sees each request once and can refuse it on every path.
 */

interface Seen {
  operation: string;
  taskId?: string;
  tool?: string;
}

function recorder(): { hook: TaskServiceHook; seen: Seen[] } {
  const seen: Seen[] = [];
  const hook: TaskServiceHook = {
    around(context: TaskOperationContext, next) {
      seen.push({ operation: context.operation, ...(context.taskId ? { taskId: context.taskId } : {}), ...(context.tool ? { tool: context.tool } : {}) });
      return next();
    },
  };
  return { hook, seen };
}

/** Refuses `operation` on every path, as an authorization hook would. */
function refusing(operation: string): TaskServiceHook {
  return {
    around(context, next) {
      if (context.operation === operation) throw new TasksError(-32001, `refused by policy: ${operation}`);
      return next();
    },
  };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(hooks: TaskServiceHook[], fastPath: boolean): Promise<RunningTasksServer> {
  const running = await startTasksServer({ tools: conformanceFixtureTools(), hooks, fastPath });
  cleanups.push(() => running.close());
  return running;
}

describe('one door: every entry path goes through the task service', () => {
  for (const fastPath of [true, false]) {
    it(`v2 requests (fast path ${fastPath ? 'on' : 'off'}): tools/call, tasks/get, tasks/update, tasks/cancel and listen each reach one operation`, async () => {
      const { hook, seen } = recorder();
      const running = await start([hook], fastPath);
      const created = await postModern(
        running.url,
        'tools/call',
        { name: 'confirm_delete', arguments: {} },
        { capabilities: { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } } },
      );
      const taskId = created.body.result?.taskId as string;
      expect(seen).toEqual([{ operation: 'callTool', tool: 'confirm_delete' }]);
      await pollModernTask(running.url, taskId, { until: (status) => status === 'input_required' });
      const gets = seen.filter((entry) => entry.operation === 'get');
      expect(gets.length).toBeGreaterThan(0);
      expect(gets.every((entry) => entry.taskId === taskId)).toBe(true);
      seen.length = 0;

      const listen = await openListen(running.url, { taskIds: [taskId] }, { id: 'sub-1' });
      await listen.sse!.waitFor((message) => message.method === 'notifications/tasks');
      expect(seen).toEqual([{ operation: 'subscribe' }]);
      await postModern(running.url, 'tasks/update', { taskId, inputResponses: { 'input-1': { action: 'accept', content: { confirm: true } } } });
      expect(seen.slice(1)).toEqual([{ operation: 'answerInput', taskId }]);
      listen.close();
      await pollModernTask(running.url, taskId);
      seen.length = 0;
      await postModern(running.url, 'tasks/cancel', { taskId });
      expect(seen).toEqual([{ operation: 'cancel', taskId }]);
    });

    it(`v1 session (fast path ${fastPath ? 'on' : 'off'}): tools/list, tools/call, tasks/get, tasks/result, tasks/cancel and an elicitation reply each reach one operation`, async () => {
      const { hook, seen } = recorder();
      const running = await start([hook], fastPath);
      const session = await RawLegacySession.open(running.url, { capabilities: { elicitation: { form: {} }, tasks: {} } });
      await session.request('tools/list');
      expect(seen).toEqual([{ operation: 'listTools' }]);
      seen.length = 0;
      const created = await session.request('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: { ttl: 60_000 } });
      const taskId = (created.body.result?.task as { taskId: string }).taskId;
      expect(seen).toEqual([{ operation: 'callTool', tool: 'slow_compute' }]);
      seen.length = 0;
      await session.request('tasks/get', { taskId });
      expect(seen).toEqual([{ operation: 'get', taskId }]);
      seen.length = 0;
      const result = await session.request('tasks/result', { taskId });
      expect((result.messages.at(-1) as { result?: unknown }).result).toBeDefined();
      expect(seen).toEqual([{ operation: 'waitForTerminal', taskId }]);
      seen.length = 0;
      await session.request('tasks/cancel', { taskId });
      expect(seen).toEqual([{ operation: 'cancel', taskId }]);

      // An elicitation reply is routed before any session lookup, and still through the door.
      const asking = await session.request('tools/call', { name: 'confirm_delete', arguments: {}, task: {} });
      const waitingId = (asking.body.result?.task as { taskId: string }).taskId;
      const stream = await session.stream('tasks/result', { taskId: waitingId });
      const question = await stream.sse!.waitFor((message) => message.method === 'elicitation/create');
      seen.length = 0;
      const reply = await session.post({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { confirm: true } } });
      expect(reply.status).toBe(202);
      expect(seen).toEqual([{ operation: 'answerInput', taskId: waitingId }]);
      stream.close();
    });

    it(`a hook refuses an operation on every path alike (fast path ${fastPath ? 'on' : 'off'}); without it the same requests succeed`, async () => {
      const open = await start([], fastPath);
      const created = await postModern(open.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } });
      expect(created.body.result?.taskId).toEqual(expect.any(String));
      const taskId = created.body.result?.taskId as string;
      expect((await postModern(open.url, 'tasks/get', { taskId })).body.result).toBeDefined();

      const guarded = await start([refusing('get'), refusing('callTool')], fastPath);
      const refusedCall = await postModern(guarded.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } });
      expect(refusedCall.body.error).toEqual({ code: -32001, message: 'refused by policy: callTool' });
      const refusedGet = await postModern(guarded.url, 'tasks/get', { taskId: 'AAAAAAAAAAAAAAAAAAAAAA' });
      expect(refusedGet.body.error).toEqual({ code: -32001, message: 'refused by policy: get' });
      const session = await RawLegacySession.open(guarded.url, { capabilities: { tasks: {} } });
      const refusedV1 = await session.request('tasks/get', { taskId: 'AAAAAAAAAAAAAAAAAAAAAA' });
      expect((refusedV1.messages.at(-1) as { error?: unknown }).error).toEqual({ code: -32001, message: 'refused by policy: get' });
    });
  }
});
