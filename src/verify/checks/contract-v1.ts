/**
 * Contract gate, 2025-11-25 tasks: negotiation, every `taskSupport` value, create / get / list / result, the
 * state machine, TTL, error codes and related-task `_meta` (checklist C-V1-*).
 */
import { RELATED_TASK_META_KEY, V1_PROTOCOL_VERSION } from '../../protocol/constants.js';
import type { CheckDefinition } from '../check.js';
import type { CheckContext } from '../context.js';
import { describe, expectError, expectResult, expectThat, fail, isIsoTime, isNonNegativeInteger, skip } from '../expect.js';
import type { WireAnswer } from '../wire/exchange.js';
import type { V1TaskWire } from '../wire/tasks.js';
import { check, isTerminal, optionalRole, unknownTaskId } from './shared.js';

const TASK_SUPPORT_VALUES = new Set(['forbidden', 'optional', 'required']);
/** A retention no server should grant: about 23 days (ms; the largest a Node timer takes, so no server trips on it). */
const HUGE_TTL_MS = 2_000_000_000;

/** The Task shape of 2025-11-25 (schema: `taskId`, `status`, `createdAt`, `lastUpdatedAt`, `ttl` required). */
function v1TaskShapeProblems(task: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (typeof task.taskId !== 'string' || task.taskId.length === 0) problems.push('taskId is not a non-empty string');
  if (!['working', 'input_required', 'completed', 'failed', 'cancelled'].includes(String(task.status)))
    problems.push(`status ${JSON.stringify(task.status)} is not a task status`);
  if (!isIsoTime(task.createdAt)) problems.push(`createdAt ${JSON.stringify(task.createdAt)} is not an ISO 8601 time (R17)`);
  if (!isIsoTime(task.lastUpdatedAt)) problems.push(`lastUpdatedAt ${JSON.stringify(task.lastUpdatedAt)} is not an ISO 8601 time (R17)`);
  if (!('ttl' in task)) problems.push('ttl is missing (R19: required, null = unlimited)');
  else if (task.ttl !== null && !isNonNegativeInteger(task.ttl)) problems.push(`ttl ${JSON.stringify(task.ttl)} is neither an integer nor null (D3)`);
  if ('pollInterval' in task && !isNonNegativeInteger(task.pollInterval))
    problems.push(`pollInterval ${JSON.stringify(task.pollInterval)} is not a non-negative integer (D3)`);
  return problems;
}

function expectTaskShape(task: Record<string, unknown>, what: string, answer: WireAnswer): void {
  const problems = v1TaskShapeProblems(task);
  if (problems.length > 0) fail(`${what}: ${problems.join('; ')}`, answer);
}

async function v1(ctx: CheckContext): Promise<V1TaskWire> {
  return ctx.v1('a');
}

/** Poll a v1 task to `input_required`, then answer its elicitation through `tasks/result`; resolves with that answer. */
export async function answerV1Input(
  ctx: CheckContext,
  wire: V1TaskWire,
  taskId: string,
  content: Record<string, unknown>,
): Promise<{ answer: WireAnswer; elicitations: Array<Record<string, unknown>> }> {
  const elicitations: Array<Record<string, unknown>> = [];
  const onMessage = async (message: unknown): Promise<void> => {
    const request = message as { id?: unknown; method?: string; params?: Record<string, unknown> };
    if (request.method === 'elicitation/create' && request.id !== undefined) {
      elicitations.push(request.params ?? {});
      await wire.session.respond(request.id, { action: 'accept', content });
    }
  };
  // The server may send its elicitation on the tasks/result stream or on the session's GET stream (R29, R55).
  const stream = wire.session.openStream(onMessage);
  try {
    await stream.ready;
    return { answer: await wire.result(taskId, { timeoutMs: 20_000, onMessage }), elicitations };
  } finally {
    stream.close();
  }
}

export const contractV1Checks: CheckDefinition[] = [
  check('v1', {
    id: 'v1.initialize.capabilities',
    title: 'initialize negotiates 2025-11-25 and declares tasks {list?, cancel?, requests.tools.call} as objects',
    gate: 'contract',
    rules: ['C-V1-01', 'R1', 'R4', 'D2'],
    async run(ctx) {
      const session = await ctx.session('a');
      const answer = session.initialize;
      expectThat(session.protocolVersion === V1_PROTOCOL_VERSION, `initialize negotiated ${session.protocolVersion}, not ${V1_PROTOCOL_VERSION}`, answer);
      const tasks = session.serverCapabilities.tasks as Record<string, unknown> | undefined;
      expectThat(tasks && typeof tasks === 'object', `InitializeResult.capabilities has no tasks object (R1)`, answer);
      const call = ((tasks.requests as Record<string, unknown> | undefined)?.tools as Record<string, unknown> | undefined)?.call;
      expectThat(
        call !== null && typeof call === 'object',
        `capabilities.tasks.requests.tools.call is ${JSON.stringify(call)}, not an object: the server takes no tools/call tasks (R1, R4)`,
        answer,
      );
      for (const member of ['list', 'cancel'] as const) {
        if (member in tasks && (tasks[member] === null || typeof tasks[member] !== 'object'))
          fail(`capabilities.tasks.${member} is ${JSON.stringify(tasks[member])}; the schema wants an object {} (D2)`, answer);
      }
      if (!('cancel' in tasks)) ctx.warn('capabilities.tasks.cancel is absent: requestors cannot cancel tasks (R4)');
    },
  }),
  check('v1', {
    id: 'v1.tools.task-support',
    title: 'tools/list gives every tool a valid execution.taskSupport (absent = forbidden)',
    gate: 'contract',
    rules: ['C-V1-02', 'R8'],
    async run(ctx) {
      const session = await ctx.session('a');
      const answer = await session.request('tools/list', {});
      const result = expectResult(answer, 'tools/list');
      const tools = Array.isArray(result.tools) ? (result.tools as Array<Record<string, unknown>>) : fail('tools/list result has no tools array', answer);
      for (const tool of tools) {
        const support = (tool.execution as { taskSupport?: unknown } | undefined)?.taskSupport;
        if (support !== undefined && !TASK_SUPPORT_VALUES.has(String(support)))
          fail(`tool ${String(tool.name)} has execution.taskSupport ${JSON.stringify(support)} (R8: forbidden | optional | required)`, answer);
      }
      ctx.measure('tools', tools.length);
      ctx.measure(
        'taskTools',
        tools.filter((tool) => ['optional', 'required'].includes(String((tool.execution as { taskSupport?: unknown } | undefined)?.taskSupport))).length,
      );
    },
  }),
  check('v1', {
    id: 'v1.create.task',
    title: 'a task-augmented tools/call answers a nested CreateTaskResult: working, timestamps, ttl, no tool output',
    gate: 'contract',
    rules: ['C-V1-03', 'R12', 'R13', 'R14', 'R17', 'R19'],
    needs: ['task'],
    async run(ctx) {
      const wire = await v1(ctx);
      const answer = await wire.call(ctx.taskTool().tool, ctx.args(ctx.taskTool(), { ms: 3000 }), { task: { ttl: 60_000 } });
      const result = expectResult(answer, 'tools/call with task');
      const task = result.task as Record<string, unknown> | undefined;
      expectThat(task && typeof task === 'object', `the result has no task object (R12: CreateTaskResult is {task: Task}): ${describe(answer)}`, answer);
      ctx.track(wire, String(task.taskId));
      expectTaskShape(task, 'CreateTaskResult.task', answer);
      expectThat(task.status === 'working', `a new task is "${String(task.status)}", not "working" (R14)`, answer);
      expectThat(!('content' in result) && !('structuredContent' in result), 'the CreateTaskResult carries tool output (R12: task data only)', answer);
    },
  }),
  check('v1', {
    id: 'v1.ttl.types',
    title: 'the granted ttl and pollInterval are integers (ttl may be null) and tasks/get reports the same ttl',
    gate: 'contract',
    rules: ['C-V1-08', 'R18', 'R19', 'R21', 'D3'],
    needs: ['task'],
    async run(ctx) {
      const wire = await v1(ctx);
      const created = await ctx.createTask(wire, ctx.taskTool(), { ms: 3000 }, { task: { ttl: 60_000 } });
      const { task, answer } = await ctx.getTask(wire, created.taskId);
      expectTaskShape(task.raw, 'tasks/get', answer);
      expectThat(
        JSON.stringify(task.raw.ttl) === JSON.stringify(created.raw.ttl),
        `tasks/get reports ttl ${JSON.stringify(task.raw.ttl)}, the CreateTaskResult ${JSON.stringify(created.raw.ttl)} (R19: the actual ttl)`,
        answer,
      );
      ctx.measure('grantedTtlMs', String(created.raw.ttl));
    },
  }),
  check('v1', {
    id: 'v1.ttl.bounded',
    title: 'retention is bounded: a task created without a ttl, or with 23 days, does not get unlimited retention',
    gate: 'contract',
    severity: 'warning',
    rules: ['R52', 'R19', 'R18'],
    needs: ['task'],
    async run(ctx) {
      const wire = await v1(ctx);
      const plain = await ctx.createTask(wire, ctx.taskTool(), { ms: 2000 }, { task: {} });
      const huge = await ctx.createTask(wire, ctx.taskTool(), { ms: 2000 }, { task: { ttl: HUGE_TTL_MS } });
      ctx.measure('ttlWhenNoneRequested', String(plain.raw.ttl));
      ctx.measure('ttlWhenTenYearsRequested', String(huge.raw.ttl));
      const problems: string[] = [];
      if (plain.raw.ttl === null)
        problems.push('a task created with task: {} has ttl: null (unlimited retention; R19 allows it, R52 asks receivers to cap retention)');
      if (huge.raw.ttl === null || huge.raw.ttl === HUGE_TTL_MS)
        problems.push(`a request for 23 days of retention was granted (ttl ${JSON.stringify(huge.raw.ttl)}; R52: cap the maximum ttl)`);
      if (problems.length > 0) fail(problems.join('; '));
    },
  }),
  check('v1', {
    id: 'v1.task-support.required',
    title: 'a task-required tool called without task is refused with -32601',
    gate: 'contract',
    rules: ['C-V1-04', 'R10', 'D1'],
    needs: ['required'],
    async run(ctx) {
      const wire = await v1(ctx);
      const required = ctx.role('required');
      const answer = await wire.call(required.tool, ctx.args(required, { ms: 500 }), { task: false });
      const created = wire.createdTask(answer);
      if (created) ctx.track(wire, created.taskId);
      const error = expectError(answer, [-32601, -32600], `tools/call ${required.tool} (taskSupport required) without task`);
      if (error.code === -32600) ctx.warn('answered -32600 (the error-handling text allows it, D1); the tool-level rule R10 says -32601');
    },
  }),
  check('v1', {
    id: 'v1.task-support.optional',
    title: 'a task-optional tool runs inline without task and as a task with it',
    gate: 'contract',
    rules: ['C-V1-05', 'R9'],
    needs: ['slow'],
    async run(ctx) {
      const slow = optionalRole(ctx, 'slow');
      const wire = await v1(ctx);
      const inline = await wire.call(slow.tool, ctx.args(slow, { ms: 100 }), { task: false });
      const result = expectResult(inline, `tools/call ${slow.tool} without task`);
      expectThat(Array.isArray(result.content) && !('task' in result), `without task the answer is not a CallToolResult: ${describe(inline)}`, inline);
      await ctx.createTask(wire, slow, { ms: 100 });
    },
  }),
  check('v1', {
    id: 'v1.task-support.forbidden',
    title: 'a task-forbidden tool called with task is refused with -32601',
    gate: 'contract',
    severity: 'warning',
    rules: ['C-V1-06', 'R8'],
    needs: ['sync'],
    async run(ctx) {
      const wire = await v1(ctx);
      const sync = ctx.role('sync');
      const answer = await wire.call(sync.tool, ctx.args(sync), { task: {} });
      const created = wire.createdTask(answer);
      if (created) {
        ctx.track(wire, created.taskId);
        fail(`tools/call ${sync.tool} (taskSupport forbidden) with task created task ${created.taskId} (R8)`, answer);
      }
      expectError(answer, -32601, `tools/call ${sync.tool} (taskSupport forbidden) with task`);
    },
  }),
  check('v1', {
    id: 'v1.get.shape',
    title: 'tasks/get answers a flat Task without related-task _meta; createdAt fixed, lastUpdatedAt not before it',
    gate: 'contract',
    rules: ['C-V1-09', 'R17', 'R33'],
    needs: ['slow'],
    async run(ctx) {
      const wire = await v1(ctx);
      const created = await ctx.createTask(wire, ctx.role('slow'), { ms: 600 });
      for (let poll = 0; poll < 2; poll += 1) {
        const { task, answer } = await ctx.getTask(wire, created.taskId);
        const result = answer.response?.result as Record<string, unknown>;
        expectThat(!('task' in result), 'tasks/get wraps the task under "task"; GetTaskResult is flat (Result & Task)', answer);
        expectTaskShape(result, 'tasks/get', answer);
        expectThat(
          !(result._meta as Record<string, unknown> | undefined)?.[RELATED_TASK_META_KEY],
          'tasks/get carries related-task _meta (R33: omit it)',
          answer,
        );
        expectThat(
          result.createdAt === created.raw.createdAt,
          `createdAt changed from ${String(created.raw.createdAt)} to ${String(result.createdAt)}`,
          answer,
        );
        expectThat(Date.parse(String(result.lastUpdatedAt)) >= Date.parse(String(result.createdAt)), 'lastUpdatedAt is before createdAt', answer);
        if (poll === 0) await ctx.waitTerminal(wire, task.taskId);
      }
    },
  }),
  check('v1', {
    id: 'v1.result.completed',
    title: 'tasks/result of a completed task returns its CallToolResult with related-task _meta',
    gate: 'contract',
    rules: ['C-V1-11', 'R23', 'R25', 'R26'],
    needs: ['slow'],
    async run(ctx) {
      const wire = await v1(ctx);
      const created = await ctx.createTask(wire, ctx.role('slow'), { ms: 300 });
      const final = await ctx.waitTerminal(wire, created.taskId);
      expectThat(final.status === 'completed', `the slow task ended "${final.status}", not "completed"`);
      const answer = await wire.result(created.taskId);
      const result = expectResult(answer, 'tasks/result of a completed task');
      expectThat(Array.isArray(result.content), 'tasks/result is not a CallToolResult (no content array; R25)', answer);
      const related = (result._meta as Record<string, { taskId?: unknown }> | undefined)?.[RELATED_TASK_META_KEY];
      expectThat(related?.taskId === created.taskId, `tasks/result lacks _meta["${RELATED_TASK_META_KEY}"] = {taskId: "${created.taskId}"} (R26)`, answer);
    },
  }),
  check('v1', {
    id: 'v1.result.blocks',
    title: 'tasks/result on a working task is held until it completes, while tasks/get answers at once',
    gate: 'contract',
    rules: ['C-V1-12', 'R24', 'R22'],
    needs: ['slow'],
    async run(ctx) {
      const wire = await v1(ctx);
      const created = await ctx.createTask(wire, ctx.role('slow'), { ms: 1500 });
      const pending = wire.result(created.taskId, { timeoutMs: 20_000 });
      let resolvedAt = Number.POSITIVE_INFINITY;
      void pending.then(() => (resolvedAt = Date.now())).catch(() => undefined);
      await ctx.sleep(200);
      const sent = Date.now();
      const { task, answer } = await ctx.getTask(wire, created.taskId);
      ctx.measure('getWhileResultPendingMs', Date.now() - sent);
      // Only an answer that arrived before this poll was even sent proves tasks/result did not wait.
      if (task.status === 'working')
        expectThat(resolvedAt >= sent, 'tasks/result answered while the task was still working (R24: hold it until terminal)', answer);
      const final = await pending;
      expectResult(final, 'tasks/result after completion');
      const after = await ctx.getTask(wire, created.taskId);
      expectThat(isTerminal(after.task.status), `tasks/result answered but the task is still "${after.task.status}" (R24)`, after.answer);
    },
  }),
  check('v1', {
    id: 'v1.tool-error.failed',
    title: 'a tool result with isError ends the task failed with a statusMessage; tasks/result returns that result',
    gate: 'contract',
    rules: ['C-V1-13', 'R47', 'R25'],
    needs: ['toolError'],
    async run(ctx) {
      const wire = await v1(ctx);
      const created = await ctx.createTask(wire, ctx.role('toolError'), { ms: 200 });
      const final = await ctx.waitTerminal(wire, created.taskId);
      expectThat(final.status === 'failed', `a tool result with isError ended the task "${final.status}" (R47: failed)`);
      if (!final.statusMessage) ctx.warn('the failed task has no statusMessage (R47: SHOULD give a diagnostic)');
      const answer = await wire.result(created.taskId);
      const result = expectResult(answer, 'tasks/result of an isError task');
      expectThat(result.isError === true && Array.isArray(result.content), "tasks/result does not return the tool's isError CallToolResult (R25)", answer);
    },
  }),
  check('v1', {
    id: 'v1.protocol-error.failed',
    title: 'a tool that throws ends the task failed; tasks/result answers the JSON-RPC error',
    gate: 'contract',
    rules: ['C-V1-14', 'R25', 'R47'],
    needs: ['throws'],
    async run(ctx) {
      const wire = await v1(ctx);
      const created = await ctx.createTask(wire, ctx.role('throws'), { ms: 200 });
      const final = await ctx.waitTerminal(wire, created.taskId);
      expectThat(final.status === 'failed', `a tool that throws ended the task "${final.status}", not "failed"`);
      const answer = await wire.result(created.taskId);
      const error = answer.response?.error;
      expectThat(
        error && Number.isInteger(error.code) && typeof error.message === 'string',
        `tasks/result of a failed task is not the JSON-RPC error it failed with (R25): ${describe(answer)}`,
        answer,
      );
    },
  }),
  check('v1', {
    id: 'v1.input.elicitation',
    title: 'input_required: tasks/result carries elicitation/create with related-task _meta; the answer completes the task',
    gate: 'contract',
    rules: ['C-V1-15', 'R27', 'R28', 'R29', 'R30', 'R31'],
    needs: ['asksInput'],
    timeoutMs: 45_000,
    async run(ctx) {
      const wire = await v1(ctx);
      const asks = ctx.role('asksInput');
      const created = await ctx.createTask(wire, asks);
      await ctx.poll(wire, created.taskId, (task) => task.status === 'input_required' || isTerminal(task.status), {
        timeoutMs: 10_000,
        what: 'task to ask for input',
      });
      const { answer, elicitations } = await answerV1Input(ctx, wire, created.taskId, asks.answer);
      expectThat(elicitations.length > 0, `tasks/result of an input_required task carried no elicitation/create (R29): ${describe(answer)}`, answer);
      for (const params of elicitations) {
        const related = (params._meta as Record<string, { taskId?: unknown }> | undefined)?.[RELATED_TASK_META_KEY];
        expectThat(related?.taskId === created.taskId, `elicitation/create lacks related-task _meta naming ${created.taskId} (R28)`, answer);
      }
      expectResult(answer, 'tasks/result after answering');
      const final = await ctx.waitTerminal(wire, created.taskId);
      expectThat(final.status === 'completed', `after the answer the task ended "${final.status}", not "completed"`);
    },
  }),
  check('v1', {
    id: 'v1.list.paging',
    title: 'tasks/list pages with cursors: every task once, own tasks all listed, also with tasks created during the walk',
    gate: 'contract',
    rules: ['C-V1-18', 'C-V1-20', 'R37', 'R38'],
    needs: ['slow', 'list'],
    timeoutMs: 90_000,
    async run(ctx) {
      const wire = await v1(ctx);
      const mine = new Set<string>();
      for (let index = 0; index < 5; index += 1) mine.add((await ctx.createTask(wire, ctx.role('slow'), { ms: 200 })).taskId);
      const seen = new Map<string, number>();
      let cursor: string | undefined;
      let pages = 0;
      for (;;) {
        const answer = await wire.list(cursor);
        const result = expectResult(answer, `tasks/list page ${pages + 1}`);
        expectThat(Array.isArray(result.tasks), 'tasks/list result has no tasks array', answer);
        for (const task of result.tasks as Array<{ taskId?: unknown }>) {
          const id = String(task.taskId);
          if (seen.has(id)) fail(`task ${id} appeared on page ${seen.get(id)} and again on page ${pages + 1} (R37)`, answer);
          seen.set(id, pages + 1);
        }
        pages += 1;
        if (pages === 1) for (let index = 0; index < 2; index += 1) await ctx.createTask(wire, ctx.role('slow'), { ms: 200 });
        cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
        if (!cursor) break;
        if (pages >= 500) fail('tasks/list still returns a nextCursor after 500 pages', answer);
      }
      const missing = [...mine].filter((id) => !seen.has(id));
      if (missing.length > 0) fail(`tasks the caller can tasks/get are missing from its tasks/list: ${missing.join(', ')} (R38)`);
      ctx.measure('pages', pages);
      ctx.measure('listed', seen.size);
    },
  }),
  check('v1', {
    id: 'v1.list.forged-cursor',
    title: 'a forged tasks/list cursor is rejected with -32602',
    gate: 'contract',
    rules: ['C-V1-19', 'R39'],
    needs: ['list'],
    async run(ctx) {
      const wire = await v1(ctx);
      expectError(await wire.list(`forged-${ctx.key}`), -32602, 'tasks/list with a forged cursor');
    },
  }),
  check('v1', {
    id: 'v1.list.matches-capability',
    title: 'tasks/list is answered as advertised: a list with tasks.list, -32601 without it',
    gate: 'contract',
    rules: ['R4', 'C-V1-27', 'D6'],
    async run(ctx) {
      const advertised = Boolean((ctx.served.capabilities.tasks as Record<string, unknown>).list);
      const wire = await v1(ctx);
      const answer = await wire.list();
      if (advertised) {
        const result = expectResult(answer, 'tasks/list with tasks.list advertised (R4)');
        expectThat(Array.isArray(result.tasks), 'tasks/list result has no tasks array', answer);
        return;
      }
      expectThat(!answer.response?.result, `tasks/list answered a list although tasks.list is not advertised (R4): ${describe(answer)}`, answer);
      if (answer.response?.error?.code !== -32601) ctx.warn(`without tasks.list, tasks/list answered ${describe(answer)} (D6 suggests -32601)`);
    },
  }),
  check('v1', {
    id: 'v1.errors.unknown-task-id',
    title: 'an unknown task id gets -32602 on tasks/get, tasks/result and tasks/cancel',
    gate: 'contract',
    rules: ['C-V1-23', 'R45'],
    async run(ctx) {
      const wire = await v1(ctx);
      const id = unknownTaskId();
      expectError(await wire.get(id), -32602, 'tasks/get of an unknown id');
      expectError(await wire.result(id, { timeoutMs: 5000 }), -32602, 'tasks/result of an unknown id');
      expectError(await wire.cancel(id), -32602, 'tasks/cancel of an unknown id');
    },
  }),
  check('v1', {
    id: 'v1.related-task.ignored',
    title: 'tasks/get uses params.taskId and ignores related-task _meta naming another task',
    gate: 'contract',
    rules: ['C-V1-24', 'R32'],
    needs: ['task'],
    async run(ctx) {
      const wire = await v1(ctx);
      const first = await ctx.createTask(wire, ctx.taskTool(), { ms: 2000 });
      const second = await ctx.createTask(wire, ctx.taskTool(), { ms: 2000 });
      const answer = await wire.get(first.taskId, { meta: { [RELATED_TASK_META_KEY]: { taskId: second.taskId } } });
      expectThat(
        wire.taskOf(answer)?.taskId === first.taskId,
        `tasks/get ${first.taskId} with related-task _meta naming ${second.taskId} answered ${describe(answer)} (R32)`,
        answer,
      );
      const unknown = unknownTaskId();
      expectError(
        await wire.get(unknown, { meta: { [RELATED_TASK_META_KEY]: { taskId: first.taskId } } }),
        -32602,
        `tasks/get of an unknown id with related-task _meta naming a real task`,
      );
    },
  }),
  check('v1', {
    id: 'v1.ttl.expiry',
    title: 'after createdAt + ttl a task is gone (-32602) or at least still answered correctly',
    gate: 'contract',
    rules: ['C-V1-25', 'R20', 'R45'],
    needs: ['slow'],
    timeoutMs: 60_000,
    async run(ctx) {
      const wire = await v1(ctx);
      const created = await ctx.createTask(wire, ctx.role('slow'), { ms: 100 }, { task: { ttl: 1000 } });
      const ttl = created.raw.ttl;
      if (typeof ttl !== 'number' || ttl > ctx.thresholds.maxTtlWaitMs)
        skip(`asked for ttl 1000 ms, the server granted ${JSON.stringify(ttl)}; longer than maxTtlWaitMs (${ctx.thresholds.maxTtlWaitMs} ms) to wait for`);
      const expiresAt = Date.parse(String(created.raw.createdAt)) + ttl;
      await ctx.sleep(Math.max(0, expiresAt - Date.now()) + Math.max(1000, ttl / 2));
      const answer = await wire.get(created.taskId);
      ctx.track(wire, created.taskId, 'completed');
      if (answer.response?.error) {
        expectError(answer, -32602, 'tasks/get after the ttl passed');
        return;
      }
      expectResult(answer, 'tasks/get after the ttl passed');
      ctx.warn(`the task is still readable ${Date.now() - expiresAt} ms after createdAt + ttl (R20 allows deletion, does not require it)`);
    },
  }),
];
