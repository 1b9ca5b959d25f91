/**
 * Compatibility gate: a client that declares no task capability gets inline results for task-optional tools and
 * the documented answer for task-only ones (v1 `-32601`, v2 `-32021`); declaring the extension on an earlier
 * request, only the legacy capability, or only the extension on 2025-11-25 changes nothing; an older protocol
 * version gets no tasks.
 */
import { TASKS_EXTENSION_ID } from '../../protocol/constants.js';
import type { CheckDefinition } from '../check.js';
import type { CheckContext } from '../context.js';
import { describe, expectError, expectResult, expectThat, fail, skip } from '../expect.js';
import type { ToolRef } from '../tool-map.js';
import type { WireAnswer } from '../wire/exchange.js';
import { SessionOpenError } from '../wire/requests.js';
import { type TaskWire, V1TaskWire } from '../wire/tasks.js';
import { check, optionalRole } from './shared.js';
import { expectMissingCapability } from './v2-wire.js';

/**
 * Call `ref` as a client with these capabilities (v1: in `wire`'s session, without `task`); a task created anyway
 * is tracked for clean-up.
 */
async function callUndeclared(ctx: CheckContext, wire: TaskWire, ref: ToolRef, capabilities: Record<string, unknown> = {}): Promise<WireAnswer> {
  const answer = await wire.call(ref.tool, ctx.args(ref, { ms: 200 }), wire.generation === 'v1' ? { task: false } : { capabilities });
  const created = wire.createdTask(answer) ?? (answer.response?.result?.resultType === 'task' ? { taskId: String(answer.response.result.taskId) } : undefined);
  if (created) ctx.track(wire, created.taskId);
  return answer;
}

/** Fails unless an answer is an inline `CallToolResult` (content array, no task). */
function expectInline(answer: WireAnswer, what: string): void {
  const result = expectResult(answer, what);
  expectThat(
    result.resultType !== 'task' && !('task' in result) && !('taskId' in result) && Array.isArray(result.content),
    `${what}: expected an inline CallToolResult, got ${describe(answer)}`,
    answer,
  );
}

/** {@link callUndeclared}, then {@link expectInline}. */
async function expectInlineCall(ctx: CheckContext, wire: TaskWire, ref: ToolRef, what: string, capabilities: Record<string, unknown> = {}): Promise<void> {
  expectInline(await callUndeclared(ctx, wire, ref, capabilities), what);
}

const LEGACY_ONLY = { tasks: { requests: { tools: { call: {} } }, list: {}, cancel: {} } };

export const compatibilityChecks: CheckDefinition[] = [
  check('v2', {
    id: 'v2.compat.non-declaring-optional',
    title: 'a client without the extension calling a task-optional tool gets an inline CallToolResult, never a task',
    gate: 'compatibility',
    rules: ['C-V2-03', 'E3'],
    needs: ['slow'],
    async run(ctx) {
      const slow = optionalRole(ctx, 'slow');
      const answer = await callUndeclared(ctx, ctx.v2('a'), slow);
      if (answer.response?.error?.code === -32021) skip(`${slow.tool} is task-only on 2026-07-28 (-32021); map a task-optional slow tool`);
      expectInline(answer, `tools/call ${slow.tool} without the extension`);
    },
  }),
  check('v2', {
    id: 'v2.compat.non-declaring-required',
    title: 'a client without the extension calling a task-only tool gets -32021 with data.requiredCapabilities (HTTP 400)',
    gate: 'compatibility',
    rules: ['C-V2-02', 'E6', 'B4'],
    needs: ['required'],
    async run(ctx) {
      const required = ctx.role('required');
      const answer = await ctx.v2('a').call(required.tool, ctx.args(required, { ms: 200 }), { capabilities: {} });
      if (answer.response?.result?.resultType === 'task') {
        ctx.track(ctx.v2('a'), String(answer.response.result.taskId));
        fail(`a non-declaring client got a CreateTaskResult (E3: MUST NOT): ${describe(answer)}`, answer);
      }
      expectMissingCapability(answer, `tools/call ${required.tool} (task-only) without the extension`);
    },
  }),
  check('v2', {
    id: 'v2.compat.declared-earlier',
    title: 'a request without the extension is non-declaring even after earlier declaring requests',
    gate: 'compatibility',
    rules: ['C-V2-04', 'E3', 'B1'],
    needs: ['slow'],
    async run(ctx) {
      const slow = optionalRole(ctx, 'slow');
      const wire = ctx.v2('a');
      await wire.request('server/discover');
      await ctx.createTask(wire, slow, { ms: 200 });
      await expectInlineCall(ctx, wire, slow, `tools/call ${slow.tool} without the extension, after declaring requests`);
    },
  }),
  check('v2', {
    id: 'v2.compat.legacy-capability-only',
    title: 'a 2026-07-28 request declaring only the legacy tasks capability is non-declaring: inline for optional, -32021 for task-only tools',
    gate: 'compatibility',
    rules: ['C-V2-28', 'E3', 'E6'],
    needs: ['slow'],
    async run(ctx) {
      const slow = optionalRole(ctx, 'slow');
      const wire = ctx.v2('a');
      await expectInlineCall(ctx, wire, slow, `tools/call ${slow.tool} declaring only the legacy tasks capability`, LEGACY_ONLY);
      const required = ctx.map.roles.required;
      if (required && ctx.served.tools.has(required.tool))
        expectMissingCapability(
          await wire.call(required.tool, ctx.args(required, { ms: 200 }), { capabilities: LEGACY_ONLY }),
          `tools/call ${required.tool} declaring only the legacy capability`,
        );
    },
  }),
  check('v1', {
    id: 'v1.compat.client-without-tasks',
    title: 'a 2025-11-25 client declaring no tasks capability gets inline results for optional tools and -32601 for task-required ones',
    gate: 'compatibility',
    rules: ['R9', 'R10', 'R5', 'D1'],
    needs: ['slow'],
    async run(ctx) {
      const slow = optionalRole(ctx, 'slow');
      const wire = new V1TaskWire(await ctx.session('a', { capabilities: {} }));
      await expectInlineCall(ctx, wire, slow, `tools/call ${slow.tool} from a client without tasks`);
      const required = ctx.map.roles.required;
      if (required && ctx.served.tools.get(required.tool)?.taskSupport === 'required') {
        const answer = await wire.call(required.tool, ctx.args(required, { ms: 200 }), { task: false });
        if (answer.response?.result && Array.isArray(answer.response.result.content)) {
          ctx.warn(`${required.tool} (task-required) answered a client without tasks inline (a fallback; R10 says -32601)`);
          return;
        }
        expectError(answer, [-32601, -32600], `tools/call ${required.tool} (task-required) from a client without tasks`);
      }
    },
  }),
  check('v1', {
    id: 'v1.compat.extension-only',
    title: 'a 2025-11-25 session declaring only the Tasks Extension is treated as declaring no tasks: plain CallToolResult',
    gate: 'compatibility',
    rules: ['C-V2-29'],
    needs: ['slow'],
    async run(ctx) {
      const slow = optionalRole(ctx, 'slow');
      const wire = new V1TaskWire(await ctx.session('a', { capabilities: { extensions: { [TASKS_EXTENSION_ID]: {} } } }));
      await expectInlineCall(ctx, wire, slow, `tools/call ${slow.tool} in a session declaring only the extension`);
    },
  }),
  check('v1', {
    id: 'v1.compat.older-version',
    title: 'a client of protocol 2025-06-18 gets no tasks: no tasks capability, a task param creates nothing',
    gate: 'compatibility',
    rules: ['R1', 'R5', 'B11'],
    needs: ['slow'],
    async run(ctx) {
      let session;
      try {
        session = await ctx.session('a', { protocolVersion: '2025-06-18', capabilities: {} });
      } catch (error) {
        if (error instanceof SessionOpenError) skip(`the server does not serve 2025-06-18: ${error.message}`);
        throw error;
      }
      if (session.protocolVersion !== '2025-06-18') skip(`offered 2025-06-18, the server chose ${session.protocolVersion}`);
      expectThat(
        !session.serverCapabilities.tasks,
        `a 2025-06-18 session is offered capabilities.tasks: ${JSON.stringify(session.serverCapabilities.tasks)}`,
        session.initialize,
      );
      const slow = ctx.role('slow');
      const wire = new V1TaskWire(session);
      const answer = await wire.call(slow.tool, ctx.args(slow, { ms: 200 }), { task: {} });
      const created = wire.createdTask(answer);
      if (created) {
        ctx.track(wire, created.taskId);
        fail(`a 2025-06-18 session got a CreateTaskResult: ${describe(answer)}`, answer);
      }
    },
  }),
];
