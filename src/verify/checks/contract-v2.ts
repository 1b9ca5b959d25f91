/**
 * Contract gate, 2026-07-28 with the Tasks Extension: `server/discover`, the per-request envelope and HTTP header
 * rules (`-32020`, `-32022`), create / get / update, removed methods, `-32021` gates (listen and TTL expiry: contract-v2-streams.ts)
 * (checklist C-BASE-*, C-V2-*).
 */
import { CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, TASKS_EXTENSION_ID, V2_PROTOCOL_VERSION } from '../../protocol/constants.js';
import type { CheckDefinition } from '../check.js';
import type { CheckContext } from '../context.js';
import { describe, expectError, expectHttpStatus, expectResult, expectThat, fail, isNonNegativeInteger } from '../expect.js';
import { EXTENSION_ONLY_CAPABILITIES } from '../wire/requests.js';
import type { TaskState, V2TaskWire } from '../wire/tasks.js';
import { check, isTerminal, unknownTaskId } from './shared.js';
import { accept, expectAck, expectMissingCapability, expectTaskShape, pollToInput } from './v2-wire.js';

const v2 = (ctx: CheckContext): V2TaskWire => ctx.v2('a');

export const contractV2Checks: CheckDefinition[] = [
  check('v2', {
    id: 'v2.discover.capabilities',
    title: 'server/discover: resultType, supportedVersions, the extension as {}, ttlMs, cacheScope, no legacy tasks capability',
    gate: 'contract',
    rules: ['C-BASE-06', 'C-BASE-07', 'B8', 'E1', 'B6'],
    async run(ctx) {
      const answer = await v2(ctx).request('server/discover');
      const result = expectResult(answer, 'server/discover');
      expectThat(result.resultType === 'complete', `server/discover has resultType ${JSON.stringify(result.resultType)} (B5: "complete")`, answer);
      expectThat(
        Array.isArray(result.supportedVersions) && result.supportedVersions.includes(V2_PROTOCOL_VERSION),
        'supportedVersions does not list 2026-07-28',
        answer,
      );
      const capabilities = (result.capabilities ?? {}) as Record<string, unknown>;
      const extension = (capabilities.extensions as Record<string, unknown> | undefined)?.[TASKS_EXTENSION_ID];
      expectThat(
        extension !== null && typeof extension === 'object' && Object.keys(extension).length === 0,
        `capabilities.extensions["${TASKS_EXTENSION_ID}"] is ${JSON.stringify(extension)}, not {} (E1)`,
        answer,
      );
      expectThat(!('tasks' in capabilities), 'server/discover advertises the legacy tasks capability (C-BASE-07, §3 of the extension: MUST NOT)', answer);
      expectThat(isNonNegativeInteger(result.ttlMs), `ttlMs ${JSON.stringify(result.ttlMs)} is not a non-negative integer (B8)`, answer);
      expectThat(
        result.cacheScope === 'public' || result.cacheScope === 'private',
        `cacheScope ${JSON.stringify(result.cacheScope)} is not "public" or "private" (B8)`,
        answer,
      );
      if (!(result._meta as Record<string, unknown> | undefined)?.['io.modelcontextprotocol/serverInfo'])
        ctx.warn('no _meta["io.modelcontextprotocol/serverInfo"] (B6 SHOULD)');
    },
  }),
  check('v2', {
    id: 'v2.envelope.required-meta',
    title: 'a request lacking _meta protocolVersion or clientCapabilities gets -32602 (HTTP 400)',
    gate: 'contract',
    rules: ['C-BASE-01', 'B3'],
    async run(ctx) {
      for (const missing of [PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY]) {
        const answer = await v2(ctx).request('server/discover', {}, { meta: { [missing]: null } });
        expectError(answer, -32602, `server/discover without _meta["${missing}"]`);
        expectHttpStatus(answer, 400, `server/discover without _meta["${missing}"]`);
      }
    },
  }),
  check('v2', {
    id: 'v2.envelope.unsupported-version',
    title: 'an unserved protocolVersion gets -32022 with data.requested and data.supported (HTTP 400)',
    gate: 'contract',
    rules: ['C-BASE-02', 'B9'],
    async run(ctx) {
      const answer = await v2(ctx).request(
        'server/discover',
        {},
        { meta: { [PROTOCOL_VERSION_META_KEY]: '2027-01-01' }, headers: { 'mcp-protocol-version': '2027-01-01' } },
      );
      const error = expectError(answer, -32022, 'server/discover with protocolVersion 2027-01-01');
      const data = (error.data ?? {}) as { requested?: unknown; supported?: unknown };
      expectThat(data.requested === '2027-01-01', `-32022 data.requested is ${JSON.stringify(data.requested)}, not the requested version (B9)`, answer);
      expectThat(
        Array.isArray(data.supported) && data.supported.includes(V2_PROTOCOL_VERSION),
        `-32022 data.supported ${JSON.stringify(data.supported)} does not list 2026-07-28 (B9)`,
        answer,
      );
      expectHttpStatus(answer, 400, '-32022');
    },
  }),
  check('v2', {
    id: 'v2.headers.protocol-version',
    title: 'an MCP-Protocol-Version header that differs from the _meta version gets -32020 (HTTP 400)',
    gate: 'contract',
    rules: ['C-BASE-03', 'B26', 'B25'],
    async run(ctx) {
      const answer = await v2(ctx).request('server/discover', {}, { headers: { 'mcp-protocol-version': '2025-11-25' } });
      expectError(answer, -32020, 'MCP-Protocol-Version 2025-11-25 on a 2026-07-28 request');
      expectHttpStatus(answer, 400, '-32020');
    },
  }),
  check('v2', {
    id: 'v2.headers.mcp-method',
    title: 'a missing Mcp-Method header, or one that differs from the body, gets -32020 (HTTP 400)',
    gate: 'contract',
    rules: ['C-BASE-04', 'B25', 'B26'],
    async run(ctx) {
      const missing = await v2(ctx).request('server/discover', {}, { headers: { 'mcp-method': null } });
      expectError(missing, -32020, 'server/discover without Mcp-Method');
      expectHttpStatus(missing, 400, '-32020 (missing Mcp-Method)');
      const other = await v2(ctx).request('server/discover', {}, { headers: { 'mcp-method': 'tasks/get' } });
      expectError(other, -32020, 'server/discover with Mcp-Method: tasks/get');
      expectHttpStatus(other, 400, '-32020 (mismatching Mcp-Method)');
    },
  }),
  check('v2', {
    id: 'v2.headers.mcp-name',
    title: 'tasks/get with Mcp-Name missing or naming another task gets -32020 (HTTP 400); a base64-encoded Mcp-Name is decoded',
    gate: 'contract',
    rules: ['C-V2-22', 'E38', 'C-BASE-10', 'B25'],
    needs: ['task'],
    async run(ctx) {
      const wire = v2(ctx);
      const task = await ctx.createTask(wire, ctx.taskTool(), { ms: 2000 });
      const missing = await wire.request('tasks/get', { taskId: task.taskId }, { headers: { 'mcp-name': null } });
      expectError(missing, -32020, 'tasks/get without Mcp-Name');
      expectHttpStatus(missing, 400, '-32020 (missing Mcp-Name)');
      const other = await wire.request('tasks/get', { taskId: task.taskId }, { headers: { 'mcp-name': unknownTaskId() } });
      expectError(other, -32020, 'tasks/get with an Mcp-Name naming another task');
      expectHttpStatus(other, 400, '-32020 (mismatching Mcp-Name)');
      const encoded = await wire.request(
        'tasks/get',
        { taskId: task.taskId },
        { headers: { 'mcp-name': `=?base64?${Buffer.from(task.taskId, 'utf8').toString('base64')}?=` } },
      );
      expectThat(
        wire.taskOf(encoded)?.taskId === task.taskId,
        `tasks/get with a base64-encoded Mcp-Name was not decoded before the comparison (C-BASE-10): ${describe(encoded)}`,
        encoded,
      );
    },
  }),
  check('v2', {
    id: 'v2.method.unknown',
    title: 'an unknown method gets -32601 with HTTP 404',
    gate: 'contract',
    rules: ['C-BASE-05', 'B26'],
    async run(ctx) {
      const answer = await v2(ctx).request('verify/no-such-method');
      expectError(answer, -32601, 'an unknown method');
      expectHttpStatus(answer, 404, 'an unknown method');
    },
  }),
  check('v2', {
    id: 'v2.create.task',
    title: 'a declaring tools/call of a long tool answers a flat CreateTaskResult (resultType "task", ttlMs, no wrapper)',
    gate: 'contract',
    rules: ['C-V2-01', 'E2', 'E8', 'X3', 'X10'],
    needs: ['task'],
    async run(ctx) {
      const wire = v2(ctx);
      const slow = ctx.taskTool();
      const answer = await wire.call(slow.tool, ctx.args(slow, { ms: 3000 }));
      const result = expectResult(answer, `tools/call ${slow.tool} (declaring)`);
      expectThat(
        result.resultType === 'task',
        `a 3 s call answered resultType ${JSON.stringify(result.resultType)}, not "task" (the slow tool must become a task): ${describe(answer)}`,
        answer,
      );
      ctx.track(wire, String(result.taskId));
      expectTaskShape(result, 'CreateTaskResult', answer);
      for (const field of ['result', 'error', 'inputRequests', 'requestState']) expectThat(!(field in result), `CreateTaskResult carries "${field}"`, answer);
    },
  }),
  check('v2', {
    id: 'v2.ttl.bounded',
    title: 'tasks get a bounded retention (ttlMs not null)',
    gate: 'contract',
    severity: 'warning',
    rules: ['E11', 'R52'],
    needs: ['task'],
    async run(ctx) {
      const task = await ctx.createTask(v2(ctx), ctx.taskTool(), { ms: 1000 });
      ctx.measure('ttlMs', String(task.raw.ttlMs));
      if (task.raw.ttlMs === null) fail('tasks are kept without limit (ttlMs: null; allowed by E11, but nothing is ever cleaned up)');
    },
  }),
  check('v2', {
    id: 'v2.task-param.ignored',
    title: 'params.task on tools/call is ignored: a synchronous tool answers inline, no error',
    gate: 'contract',
    rules: ['C-V2-05', 'E17'],
    needs: ['sync'],
    async run(ctx) {
      const sync = ctx.role('sync');
      const answer = await v2(ctx).request('tools/call', { name: sync.tool, arguments: ctx.args(sync), task: { ttl: 60_000 } });
      const result = expectResult(answer, `tools/call ${sync.tool} with params.task`);
      expectThat(result.resultType !== 'task' && Array.isArray(result.content), `params.task changed the answer: ${describe(answer)} (E17: ignore it)`, answer);
    },
  }),
  check('v2', {
    id: 'v2.get.after-create',
    title: 'tasks/get right after CreateTaskResult finds the task',
    gate: 'contract',
    rules: ['C-V2-06', 'E14'],
    needs: ['task'],
    async run(ctx) {
      const wire = v2(ctx);
      const task = await ctx.createTask(wire, ctx.taskTool(), { ms: 2000 });
      const answer = await wire.get(task.taskId);
      expectThat(
        wire.taskOf(answer)?.taskId === task.taskId,
        `tasks/get right after creation: ${describe(answer)} (E14: no CreateTaskResult before tasks/get succeeds)`,
        answer,
      );
    },
  }),
  check('v2', {
    id: 'v2.get.shape',
    title: 'tasks/get has resultType "complete"; working carries no result, completed carries result inline',
    gate: 'contract',
    rules: ['C-V2-07', 'E9', 'E19', 'X12'],
    needs: ['slow'],
    async run(ctx) {
      const wire = v2(ctx);
      const task = await ctx.createTask(wire, ctx.role('slow'), { ms: 800 });
      const working = await ctx.getTask(wire, task.taskId);
      expectTaskShape(working.task.raw, 'tasks/get', working.answer);
      expectThat(
        working.task.raw.resultType === 'complete',
        `tasks/get has resultType ${JSON.stringify(working.task.raw.resultType)} (E9: "complete")`,
        working.answer,
      );
      if (working.task.status === 'working')
        for (const field of ['result', 'error', 'inputRequests'])
          expectThat(!(field in working.task.raw), `a working task carries "${field}" (E19)`, working.answer);
      const final = await ctx.waitTerminal(wire, task.taskId);
      expectThat(final.status === 'completed', `the slow task ended "${final.status}"`);
      const done = await ctx.getTask(wire, task.taskId);
      expectThat(done.task.raw.resultType === 'complete', 'tasks/get of a completed task lacks resultType "complete" (E9)', done.answer);
      const result = done.task.raw.result as Record<string, unknown> | undefined;
      expectThat(result && Array.isArray(result.content), 'a completed task has no result with content inline (E19)', done.answer);
      expectThat(!('error' in done.task.raw), 'a completed task carries "error"', done.answer);
      if (result.resultType === undefined) ctx.warn('the inline CallToolResult has no resultType (X12: emit "complete")');
    },
  }),
  check('v2', {
    id: 'v2.tool-error.completed',
    title: 'a tool result with isError ends the task completed (never failed), with the result inline',
    gate: 'contract',
    rules: ['C-V2-08', 'E13'],
    needs: ['toolError'],
    async run(ctx) {
      const wire = v2(ctx);
      const task = await ctx.createTask(wire, ctx.role('toolError'), { ms: 200 });
      const final = await ctx.waitTerminal(wire, task.taskId);
      expectThat(final.status === 'completed', `a tool result with isError ended the task "${final.status}" (E13: completed)`);
      expectThat(
        (final.raw.result as { isError?: unknown } | undefined)?.isError === true,
        'the completed task does not carry the isError result inline (E13)',
      );
    },
  }),
  check('v2', {
    id: 'v2.protocol-error.failed',
    title: 'a tool that throws ends the task failed with error {code, message} and no result',
    gate: 'contract',
    rules: ['C-V2-07', 'E13', 'E19'],
    needs: ['throws'],
    async run(ctx) {
      const wire = v2(ctx);
      const task = await ctx.createTask(wire, ctx.role('throws'), { ms: 200 });
      const final = await ctx.waitTerminal(wire, task.taskId);
      expectThat(final.status === 'failed', `a tool that throws ended the task "${final.status}", not "failed" (E13)`);
      const error = final.raw.error as { code?: unknown; message?: unknown } | undefined;
      expectThat(
        error && Number.isInteger(error.code) && typeof error.message === 'string',
        `the failed task has no error {code, message} (E13, E19): ${JSON.stringify(final.raw).slice(0, 300)}`,
      );
      expectThat(!('result' in final.raw), 'the failed task carries a result');
      if (!final.statusMessage) ctx.warn('the failed task has no statusMessage (E13 SHOULD)');
    },
  }),
  check('v2', {
    id: 'v2.input.update',
    title:
      'input_required lists inputRequests (same keys on repeat polls); tasks/update acks, ignores unknown keys, completes the task; answered keys never return',
    gate: 'contract',
    rules: ['C-V2-09', 'C-V2-10', 'C-V2-11', 'C-V2-12', 'E19', 'E23', 'E25', 'E27'],
    needs: ['asksInput'],
    async run(ctx) {
      const wire = v2(ctx);
      const asks = ctx.role('asksInput');
      const task = await ctx.createTask(wire, asks);
      const first = await pollToInput(ctx, wire, task.taskId);
      const keys = Object.keys(first.inputRequests).sort();
      for (const [key, request] of Object.entries(first.inputRequests))
        expectThat(typeof request?.method === 'string', `inputRequests["${key}"] has no method (E19)`);
      await ctx.sleep(ctx.pollWait(first));
      const again = await pollToInput(ctx, wire, task.taskId);
      expectThat(
        JSON.stringify(Object.keys(again.inputRequests).sort()) === JSON.stringify(keys),
        `inputRequests keys changed between polls: ${keys.join(',')} → ${Object.keys(again.inputRequests).join(',')} (E23)`,
      );
      expectAck(
        await wire.update(task.taskId, { [`verify-never-issued-${ctx.key}`]: accept(asks.answer) }),
        'tasks/update with a never-issued key (E27: ignored)',
      );
      const stillWaiting = await ctx.getTask(wire, task.taskId);
      expectThat(
        stillWaiting.task.status === 'input_required',
        `a never-issued key changed the task to "${stillWaiting.task.status}" (E27)`,
        stillWaiting.answer,
      );
      const responses = Object.fromEntries(keys.map((key) => [key, accept(asks.answer)]));
      expectAck(await wire.update(task.taskId, responses), 'tasks/update answering every key');
      const seen: TaskState[] = [];
      const final = await ctx.waitTerminal(wire, task.taskId, 15_000, seen);
      expectThat(final.status === 'completed', `after the answer the task ended "${final.status}", not "completed"`);
      for (const state of seen) {
        const listed = Object.keys((state.raw.inputRequests as Record<string, unknown> | undefined) ?? {});
        const back = listed.filter((key) => keys.includes(key));
        if (back.length > 0) fail(`answered key(s) ${back.join(', ')} were listed again (E23)`);
      }
      expectAck(await wire.update(task.taskId, responses), 'a repeated tasks/update for answered keys (E27: ack, no second effect)');
    },
  }),
  check('v2', {
    id: 'v2.input.partial',
    title: 'with two questions pending, answering one keeps input_required and lists only the other',
    gate: 'contract',
    rules: ['C-V2-13', 'E27', 'E19'],
    needs: ['asksTwoInputs'],
    async run(ctx) {
      const wire = v2(ctx);
      const asks = ctx.role('asksTwoInputs');
      const task = await ctx.createTask(wire, asks);
      const first = await pollToInput(ctx, wire, task.taskId);
      const keys = Object.keys(first.inputRequests);
      if (keys.length < 2) fail(`the two-question tool lists ${keys.length} inputRequests at once, not 2`);
      const [answered, other] = keys as [string, string];
      expectAck(await wire.update(task.taskId, { [answered]: accept(asks.answer) }), `tasks/update answering "${answered}" only`);
      await ctx.sleep(ctx.pollWait(first));
      const partial = await ctx.getTask(wire, task.taskId);
      expectThat(
        partial.task.status === 'input_required',
        `after one of two answers the task is "${partial.task.status}" (E27: stays input_required)`,
        partial.answer,
      );
      const listed = Object.keys((partial.task.raw.inputRequests as Record<string, unknown> | undefined) ?? {});
      expectThat(
        !listed.includes(answered) && listed.includes(other),
        `after answering "${answered}", inputRequests lists ${JSON.stringify(listed)} (expected only "${other}")`,
        partial.answer,
      );
      expectAck(await wire.update(task.taskId, { [other]: accept(asks.answer) }), `tasks/update answering "${other}"`);
      const final = await ctx.waitTerminal(wire, task.taskId);
      expectThat(final.status === 'completed', `after both answers the task ended "${final.status}"`);
    },
  }),
  check('v2', {
    id: 'v2.input.undeclared-kind',
    title: 'a task created by a request that did not declare elicitation never asks with elicitation/create',
    gate: 'contract',
    rules: ['C-V2-26', 'E28', 'B14'],
    needs: ['asksInput'],
    async run(ctx) {
      const wire = v2(ctx);
      const asks = ctx.role('asksInput');
      const answer = await wire.call(asks.tool, ctx.args(asks), { capabilities: EXTENSION_ONLY_CAPABILITIES });
      const task = wire.createdTask(answer);
      if (!task) {
        expectThat(
          answer.response?.error || answer.response?.result?.resultType !== 'input_required',
          `a call that did not declare elicitation got an MRTR elicitation round (B14): ${describe(answer)}`,
          answer,
        );
        return;
      }
      ctx.track(wire, task.taskId, task.status);
      const seen = await ctx.poll(wire, task.taskId, (state) => state.status === 'input_required' || isTerminal(state.status), {
        timeoutMs: 10_000,
        what: 'task to end or ask',
      });
      const kinds = Object.values((seen.raw.inputRequests as Record<string, { method?: unknown }> | undefined) ?? {}).map((request) => String(request?.method));
      expectThat(!kinds.includes('elicitation/create'), `a task whose call declared no elicitation lists an elicitation/create inputRequest (E28)`);
    },
  }),
  check('v2', {
    id: 'v2.update.invalid',
    title: 'tasks/update of an unknown id, or without inputResponses, gets -32602',
    gate: 'contract',
    rules: ['C-V2-14', 'E26'],
    needs: ['task'],
    async run(ctx) {
      const wire = v2(ctx);
      expectError(await wire.update(unknownTaskId(), { key: accept({}) }), -32602, 'tasks/update of an unknown id');
      const task = await ctx.createTask(wire, ctx.taskTool(), { ms: 2000 });
      expectError(await wire.update(task.taskId, undefined), -32602, 'tasks/update without inputResponses');
    },
  }),
  check('v2', {
    id: 'v2.errors.unknown-task-id',
    title: 'an unknown task id gets -32602 on tasks/get',
    gate: 'contract',
    rules: ['C-V2-17', 'E39'],
    async run(ctx) {
      expectError(await v2(ctx).get(unknownTaskId()), -32602, 'tasks/get of an unknown id');
    },
  }),
  check('v2', {
    id: 'v2.errors.unknown-task-id-cancel',
    title: 'an unknown task id gets -32602 on tasks/cancel',
    gate: 'contract',
    severity: 'warning',
    rules: ['C-V2-17', 'E39', 'E30'],
    async run(ctx) {
      expectError(await v2(ctx).cancel(unknownTaskId()), -32602, 'tasks/cancel of an unknown id');
    },
  }),
  check('v2', {
    id: 'v2.methods.removed',
    title: 'tasks/result and tasks/list do not exist on 2026-07-28: -32601 (HTTP 404)',
    gate: 'contract',
    rules: ['C-V2-18', 'E42'],
    async run(ctx) {
      const wire = v2(ctx);
      const result = await wire.request('tasks/result', { taskId: unknownTaskId() });
      expectError(result, -32601, 'tasks/result on 2026-07-28');
      expectHttpStatus(result, 404, 'tasks/result on 2026-07-28');
      expectError(await wire.request('tasks/list', {}), -32601, 'tasks/list on 2026-07-28');
    },
  }),
  check('v2', {
    id: 'v2.methods.non-declaring',
    title: 'tasks/get, tasks/update and tasks/cancel from a request without the extension get -32021 (HTTP 400)',
    gate: 'contract',
    rules: ['C-V2-19', 'E41'],
    needs: ['task'],
    async run(ctx) {
      const wire = v2(ctx);
      const task = await ctx.createTask(wire, ctx.taskTool(), { ms: 2000 });
      for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
        const params = method === 'tasks/update' ? { taskId: task.taskId, inputResponses: {} } : { taskId: task.taskId };
        expectMissingCapability(await wire.request(method, params, { capabilities: {} }), `${method} without the extension`);
      }
    },
  }),
];
