/**
 * Cancellation gate, both generations: cancel of a working, an input_required and a terminal task with each
 * generation's semantics (v1: `cancelled` in the reply, `-32602` for terminal; v2: an empty ack, cooperative),
 * `tasks/result` of a cancelled v1 task, and a cancel racing completion — whatever wins, the terminal state never
 * changes afterwards.
 */
import type { CheckDefinition } from '../check.js';
import type { CheckContext } from '../context.js';
import { describe, expectError, expectResult, expectThat, fail } from '../expect.js';
import type { TaskState, TaskWire, V1TaskWire } from '../wire/tasks.js';
import { both, check, illegalTransition, isTerminal } from './shared.js';
import { expectAck } from './v2-wire.js';

/** Polls after the terminal state that must all repeat it. */
const STABLE_POLLS = 3;

/** Send tasks/cancel and judge the reply by the generation's rule; returns the reply's status (v1) or undefined. */
async function cancelAndJudge(ctx: CheckContext, wire: TaskWire, taskId: string, what: string): Promise<void> {
  const answer = await wire.cancel(taskId);
  if (wire.generation === 'v1') {
    const result = expectResult(answer, `tasks/cancel of a ${what} task`);
    expectThat(
      result.status === 'cancelled',
      `tasks/cancel of a ${what} task replied status "${String(result.status)}" (R41: set cancelled before replying, reply with it)`,
      answer,
    );
  } else {
    expectAck(answer, `tasks/cancel of a ${what} task`);
  }
}

/** Poll until terminal, then a few more times: the status must not change. Returns the terminal task. */
async function settleAndHold(ctx: CheckContext, wire: TaskWire, taskId: string, timeoutMs: number): Promise<TaskState> {
  const seen: TaskState[] = [];
  const final = await ctx.waitTerminal(wire, taskId, timeoutMs, seen);
  for (let poll = 0; poll < STABLE_POLLS; poll += 1) {
    await ctx.sleep(ctx.pollWait(final));
    const answer = await wire.get(taskId);
    const later = wire.taskOf(answer);
    if (!later) {
      // v1 R43 / v2 E32: a cancelled task may be deleted; an unknown-id answer is fine, anything else is not.
      expectError(answer, -32602, `tasks/get of the ended task ${taskId}`);
      return final;
    }
    seen.push(later);
    const illegal = illegalTransition(seen.map((entry) => entry.status));
    if (illegal) fail(`after it ended, the task changed: ${illegal} (observed ${seen.map((entry) => entry.status).join(' → ')})`, answer);
  }
  return final;
}

export const cancellationChecks: CheckDefinition[] = [
  ...both({
    id: 'cancel.working',
    title: 'cancel of a working task: v1 replies cancelled and it stays cancelled; v2 acks and the task ends and stays ended',
    gate: 'cancellation',
    rules: { v1: ['C-V1-21', 'R41', 'R42'], v2: ['C-V2-15', 'E30', 'E31'] },
    needs: ['slow', 'cancel'],
    async run(ctx) {
      const wire = await ctx.wire('a');
      const task = await ctx.createTask(wire, ctx.role('slow'), { ms: 1200 });
      await cancelAndJudge(ctx, wire, task.taskId, 'working');
      if (wire.generation === 'v1') {
        // After the work would have ended the task must still be cancelled (R42), or deleted (R43).
        await ctx.sleep(1500);
      }
      const final = await settleAndHold(ctx, wire, task.taskId, 10_000);
      if (wire.generation === 'v1')
        expectThat(final.status === 'cancelled', `a cancelled task later shows "${final.status}" (R42: cancelled sticks even if the work ends)`);
      ctx.measure('finalStatus', final.status);
    },
  }),
  ...both({
    id: 'cancel.input-required',
    title: 'cancel of a task waiting in input_required ends it (v1: cancelled in the reply)',
    gate: 'cancellation',
    rules: { v1: ['R41', 'R16', 'C-V1-21'], v2: ['E30', 'E31', 'E12'] },
    needs: ['asksInput', 'cancel'],
    async run(ctx) {
      const wire = await ctx.wire('a');
      const task = await ctx.createTask(wire, ctx.role('asksInput'));
      const waiting = await ctx.poll(wire, task.taskId, (seen) => seen.status === 'input_required' || isTerminal(seen.status), {
        timeoutMs: 10_000,
        what: 'task to ask for input',
      });
      expectThat(waiting.status === 'input_required', `the input tool ended "${waiting.status}" without asking`);
      await cancelAndJudge(ctx, wire, task.taskId, 'input_required');
      const final = await settleAndHold(ctx, wire, task.taskId, 10_000);
      if (wire.generation === 'v1') expectThat(final.status === 'cancelled', `the cancelled input_required task later shows "${final.status}"`);
    },
  }),
  ...both({
    id: 'cancel.terminal',
    title: 'cancel of a completed, failed or cancelled task: v1 -32602, v2 an ack; the status is unchanged',
    gate: 'cancellation',
    rules: { v1: ['C-V1-22', 'R40', 'R16'], v2: ['C-V2-16', 'E30', 'E12'] },
    needs: ['slow', 'cancel'],
    async run(ctx) {
      const wire = await ctx.wire('a');
      const ended: TaskState[] = [];
      const completed = await ctx.createTask(wire, ctx.role('slow'), { ms: 100 });
      ended.push(await ctx.waitTerminal(wire, completed.taskId));
      const errorRole = ctx.generation === 'v1' ? 'toolError' : 'throws';
      const failing = ctx.map.roles[errorRole];
      if (failing && ctx.served.tools.has(failing.tool)) {
        const failed = await ctx.createTask(wire, ctx.role(errorRole), { ms: 100 });
        ended.push(await ctx.waitTerminal(wire, failed.taskId));
      }
      const cancelled = await ctx.createTask(wire, ctx.role('slow'), { ms: 30_000 });
      await wire.cancel(cancelled.taskId);
      ended.push(await ctx.waitTerminal(wire, cancelled.taskId, 10_000));
      for (const task of ended) {
        const answer = await wire.cancel(task.taskId);
        if (wire.generation === 'v1') {
          if (answer.response?.result) fail(`tasks/cancel of a ${task.status} task was accepted: ${describe(answer)} (R40: -32602)`, answer);
          expectError(answer, -32602, `tasks/cancel of a ${task.status} task`);
        } else {
          expectAck(answer, `tasks/cancel of a ${task.status} task (E30: ack, unchanged)`);
        }
        const { task: after, answer: read } = await ctx.getTask(wire, task.taskId);
        expectThat(after.status === task.status, `tasks/cancel changed a ${task.status} task to "${after.status}"`, read);
      }
      ctx.measure('terminalKinds', ended.map((task) => task.status).join(', '));
    },
  }),
  check('v1', {
    id: 'v1.cancel.result-of-cancelled',
    title: 'tasks/result of a cancelled task answers at once (an error or a result), never blocks',
    gate: 'cancellation',
    rules: ['C-V1-26', 'D4', 'R23'],
    needs: ['slow', 'cancel'],
    async run(ctx) {
      const wire = (await ctx.wire('a')) as V1TaskWire;
      const task = await ctx.createTask(wire, ctx.role('slow'), { ms: 30_000 });
      await wire.cancel(task.taskId);
      await ctx.waitTerminal(wire, task.taskId, 10_000);
      const started = Date.now();
      const answer = await wire.result(task.taskId, { timeoutMs: 5000 });
      ctx.measure('resultMs', Date.now() - started);
      expectThat(answer.response?.error || answer.response?.result, `tasks/result of a cancelled task: ${describe(answer)}`, answer);
    },
  }),
  ...both({
    id: 'cancel.race-completion',
    title: 'cancels racing completion: whichever wins, the terminal state never changes afterwards (v1: a "cancelled" reply sticks)',
    gate: 'cancellation',
    rules: { v1: ['R42', 'R16', 'R40'], v2: ['E31', 'E12', 'E30'] },
    needs: ['slow', 'cancel'],
    timeoutMs: 60_000,
    async run(ctx) {
      const wire = await ctx.wire('a');
      const workMs = 600;
      const offsets = [-80, -30, 0, 30, 80];
      const outcomes: string[] = [];
      await Promise.all(
        offsets.map(async (offset) => {
          const task = await ctx.createTask(wire, ctx.role('slow'), { ms: workMs });
          await ctx.sleep(Math.max(0, workMs + offset));
          const reply = await wire.cancel(task.taskId);
          const replied =
            wire.generation === 'v1'
              ? ((reply.response?.result?.status as string | undefined) ?? `error ${reply.response?.error?.code}`)
              : reply.response?.result
                ? 'ack'
                : `error ${reply.response?.error?.code}`;
          if (wire.generation === 'v1' && !reply.response?.result) expectError(reply, -32602, 'a cancel that lost the race (R40)');
          const final = await settleAndHold(ctx, wire, task.taskId, 10_000);
          if (wire.generation === 'v1' && replied === 'cancelled')
            expectThat(final.status === 'cancelled', `tasks/cancel replied "cancelled" but the task ended "${final.status}" (R42)`);
          outcomes.push(`${offset}ms: ${replied} → ${final.status}`);
        }),
      );
      ctx.measure('outcomes', outcomes.sort().join('; '));
    },
  }),
];
