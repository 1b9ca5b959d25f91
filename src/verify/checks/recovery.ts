/**
 * Recovery gate, both generations, through the built-in loopback fault proxy: the transport is cut before and
 * after the `CreateTaskResult`, between `completed` and the result retrieval, while the task waits for input, and
 * after `tasks/cancel`. After every cut the task must stay observable by id from a new connection (a new session
 * on 2025-11-25) and the work must not run twice (counted with the side-effect counter, when mapped).
 */
import type { CheckDefinition } from '../check.js';
import type { CheckContext } from '../context.js';
import { describe, expectResult, expectThat, fail } from '../expect.js';
import { type Fault, FaultProxy } from '../fault-proxy.js';
import type { ToolRef } from '../tool-map.js';
import { TransportError } from '../wire/exchange.js';
import type { Endpoint } from '../wire/requests.js';
import type { TaskWire, V1TaskWire, V2TaskWire } from '../wire/tasks.js';
import { answerV1Input } from './contract-v1.js';
import { both, isTerminal } from './shared.js';
import { accept, pollToInput } from './v2-wire.js';

/** How long the proxy stays down after a cut (ms): long enough for retries to fail, short enough to keep runs quick. */
const DOWN_MS = 400;

interface Proxied {
  proxy: FaultProxy;
  via: Endpoint;
}

async function proxied(ctx: CheckContext): Promise<Proxied> {
  const proxy = await FaultProxy.start(ctx.target.url);
  ctx.onCleanup(() => proxy.close());
  return { proxy, via: ctx.endpointAt(proxy.url) };
}

/** The tool whose runs are counted (role `sideEffect`) when mapped and offered, else the slow tool. */
function work(ctx: CheckContext): { ref: ToolRef; counted: boolean } {
  const mapped = ctx.map.roles.sideEffect;
  if (mapped && ctx.served.tools.has(mapped.tool.tool) && ctx.served.tools.has(mapped.readTool.tool)) {
    const { tool } = ctx.role('sideEffect');
    return { ref: tool, counted: true };
  }
  return { ref: ctx.role('slow'), counted: false };
}

/** Expect the proxy's cut to reach the client as a transport failure. */
async function expectCut(promise: Promise<unknown>, what: string): Promise<void> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TransportError) return;
    throw error;
  }
  fail(`${what}: the fault proxy's cut did not reach the client (the answer arrived)`);
}

/** Wait until the proxy is up again, then a little. */
async function healed(ctx: CheckContext, proxy: FaultProxy): Promise<void> {
  while (proxy.isDown) await ctx.sleep(50);
  await ctx.sleep(50);
}

async function expectRanOnce(ctx: CheckContext, counted: boolean, wire: TaskWire): Promise<void> {
  if (!counted) {
    ctx.warn('no side-effect counter mapped (role sideEffect): whether the work ran twice was not verified');
    return;
  }
  const count = await ctx.readSideEffects(wire);
  ctx.measure('sideEffects', count);
  expectThat(count === 1, `the work ran ${count} times for one tools/call (must be exactly once)`);
}

/** The task through a new connection: found, else a failure naming the cut. */
async function refind(ctx: CheckContext, via: Endpoint, taskId: string, after: string): Promise<TaskWire> {
  const wire = await ctx.wire('a', via);
  const answer = await wire.get(taskId);
  const task = wire.taskOf(answer);
  expectThat(
    task?.taskId === taskId,
    `after ${after}, a new ${ctx.generation === 'v1' ? 'session' : 'connection'} of the same principal cannot find task ${taskId}: ${describe(answer)}`,
    answer,
  );
  ctx.track(wire, taskId, task.status);
  return wire;
}

function arm(proxy: FaultProxy, fault: Fault): Promise<void> {
  return proxy.arm({ downMs: DOWN_MS, ...fault });
}

export const recoveryChecks: CheckDefinition[] = [
  ...both({
    id: 'recovery.cut-before-create-result',
    title: 'the transport is cut before the CreateTaskResult reaches the client: the work still runs at most once',
    gate: 'recovery',
    rules: { v1: ['R12', 'R13', 'R52'], v2: ['E14', 'E18', 'B22'] },
    needs: ['http', 'sideEffect'],
    async run(ctx) {
      const { proxy, via } = await proxied(ctx);
      const { ref } = work(ctx);
      const wire = await ctx.wire('a', via);
      void arm(proxy, { method: 'tools/call', cut: 'drop-answer' });
      await expectCut(wire.call(ref.tool, ctx.args(ref, { ms: 600 })), 'tools/call');
      await healed(ctx, proxy);
      await ctx.sleep(600 + 1500);
      const count = await ctx.readSideEffects(await ctx.wire('a'));
      ctx.measure('sideEffects', count);
      expectThat(count <= 1, `one tools/call whose answer was lost ran the work ${count} times`);
    },
  }),
  ...both({
    id: 'recovery.cut-after-create-result',
    title: 'the transport is cut right after the CreateTaskResult: a new connection finds the task by id; it completes once',
    gate: 'recovery',
    rules: { v1: ['R22', 'R48', 'R16'], v2: ['E18', 'E14', 'B1'] },
    needs: ['http', 'slow'],
    async run(ctx) {
      const { proxy, via } = await proxied(ctx);
      const { ref, counted } = work(ctx);
      const wire = await ctx.wire('a', via);
      const fired = arm(proxy, { method: 'tools/call', cut: 'after-answer' });
      const task = await ctx.createTask(wire, ref, { ms: 800 });
      await fired;
      await healed(ctx, proxy);
      if (ctx.generation === 'v1') {
        const same = await wire.get(task.taskId);
        expectThat(wire.taskOf(same)?.taskId === task.taskId, `after the cut, the same session cannot find task ${task.taskId}: ${describe(same)}`, same);
      }
      const again = await refind(ctx, via, task.taskId, 'a cut right after the CreateTaskResult');
      const final = await ctx.waitTerminal(again, task.taskId);
      expectThat(final.status === 'completed', `the task ended "${final.status}" after the cut, not "completed"`);
      await expectRanOnce(ctx, counted, again);
    },
  }),
  ...both({
    id: 'recovery.cut-before-result',
    title: 'the transport is cut between "completed" and the result retrieval: the result is still retrievable, work ran once',
    gate: 'recovery',
    rules: { v1: ['R23', 'R25', 'R43'], v2: ['E19', 'E18'] },
    needs: ['http', 'slow'],
    async run(ctx) {
      const { proxy, via } = await proxied(ctx);
      const { ref, counted } = work(ctx);
      const wire = await ctx.wire('a', via);
      const task = await ctx.createTask(wire, ref, { ms: 400 });
      void arm(proxy, { method: 'tasks/get', cut: 'drop-answer', when: (result) => result.status === 'completed' });
      const deadline = Date.now() + 15_000;
      for (;;) {
        try {
          const answer = await wire.get(task.taskId);
          const seen = wire.taskOf(answer);
          if (!seen) fail(`tasks/get through the proxy failed before completion: ${describe(answer)}`, answer);
          if (isTerminal(seen.status)) fail(`the task ended "${seen.status}" instead of completing`, answer);
        } catch (error) {
          if (error instanceof TransportError) break;
          throw error;
        }
        if (Date.now() > deadline) fail('the task did not complete within 15 s');
        await ctx.sleep(100);
      }
      await healed(ctx, proxy);
      const again = await refind(ctx, via, task.taskId, 'a cut that lost the "completed" answer');
      if (ctx.generation === 'v1') {
        const answer = await (again as V1TaskWire).result(task.taskId);
        const result = expectResult(answer, 'tasks/result after the cut');
        expectThat(Array.isArray(result.content), 'tasks/result after the cut is not the CallToolResult', answer);
      } else {
        const final = await ctx.waitTerminal(again, task.taskId);
        expectThat(final.status === 'completed' && typeof final.raw.result === 'object', `after the cut tasks/get shows "${final.status}" without the result`);
      }
      await expectRanOnce(ctx, counted, again);
    },
  }),
  ...both({
    id: 'recovery.cut-during-input',
    title: 'the transport is cut while the task waits in input_required: a new connection still sees the question and its answer completes the task',
    gate: 'recovery',
    rules: { v1: ['R27', 'R29', 'R30'], v2: ['E19', 'E21', 'E23'] },
    needs: ['http', 'asksInput'],
    async run(ctx) {
      const { proxy, via } = await proxied(ctx);
      const asks = ctx.role('asksInput');
      const wire = await ctx.wire('a', via);
      const task = await ctx.createTask(wire, asks);
      const fired = arm(proxy, { method: 'tasks/get', cut: 'after-answer', when: (result) => result.status === 'input_required' });
      const waiting = await ctx.poll(wire, task.taskId, (seen) => seen.status === 'input_required' || isTerminal(seen.status), {
        timeoutMs: 10_000,
        what: 'task to ask for input',
      });
      expectThat(waiting.status === 'input_required', `the input tool ended "${waiting.status}" without asking for input`);
      await fired;
      await healed(ctx, proxy);
      const again = await refind(ctx, via, task.taskId, 'a cut during input_required');
      if (ctx.generation === 'v1') {
        const { answer } = await answerV1Input(ctx, again as V1TaskWire, task.taskId, asks.answer);
        expectResult(answer, 'tasks/result in the new session');
      } else {
        const waiting = await pollToInput(ctx, again as V2TaskWire, task.taskId);
        const answer = await (again as V2TaskWire).update(
          task.taskId,
          Object.fromEntries(Object.keys(waiting.inputRequests).map((key) => [key, accept(asks.answer)])),
        );
        expectResult(answer, 'tasks/update in the new connection');
      }
      const final = await ctx.waitTerminal(again, task.taskId);
      expectThat(final.status === 'completed', `after the cut and the answer, the task ended "${final.status}"`);
    },
  }),
  ...both({
    id: 'recovery.cut-after-cancel',
    title: 'the transport is cut right after tasks/cancel is sent: a new connection sees the task end and stay ended',
    gate: 'recovery',
    rules: { v1: ['R41', 'R42', 'R16'], v2: ['E31', 'E30', 'E12'] },
    needs: ['http', 'slow', 'cancel'],
    async run(ctx) {
      const { proxy, via } = await proxied(ctx);
      const wire = await ctx.wire('a', via);
      const task = await ctx.createTask(wire, ctx.role('slow'), { ms: 30_000 });
      void arm(proxy, { method: 'tasks/cancel', cut: 'drop-answer' });
      await expectCut(wire.cancel(task.taskId), 'tasks/cancel');
      await healed(ctx, proxy);
      const again = await refind(ctx, via, task.taskId, 'a cut that lost the tasks/cancel answer');
      const final = ctx.generation === 'v1' ? (await ctx.getTask(again, task.taskId)).task : await ctx.waitTerminal(again, task.taskId, 10_000);
      if (ctx.generation === 'v1')
        expectThat(final.status === 'cancelled', `the cancel reached the server but the task is "${final.status}" (R41: cancelled before the reply)`);
      for (let poll = 0; poll < 3; poll += 1) {
        await ctx.sleep(ctx.pollWait(final));
        const { task: later, answer } = await ctx.getTask(again, task.taskId);
        expectThat(later.status === final.status, `the ended task changed from "${final.status}" to "${later.status}"`, answer);
      }
    },
  }),
];
