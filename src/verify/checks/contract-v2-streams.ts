/**
 * Contract gate, 2026-07-28, the streams and time: `subscriptions/listen` (gated by the extension, and its stream of
 * task notifications) and TTL expiry (checklist C-V2-*). The rest of the contract is in contract-v2.ts.
 */
import { SUBSCRIPTION_ID_META_KEY } from '../../protocol/constants.js';
import type { CheckDefinition } from '../check.js';
import type { CheckContext } from '../context.js';
import { describe, expectError, expectThat, skip } from '../expect.js';
import type { V2TaskWire } from '../wire/tasks.js';
import { check, isTerminal, unknownTaskId } from './shared.js';
import { listen } from './v2-wire.js';

const v2 = (ctx: CheckContext): V2TaskWire => ctx.v2('a');

export const contractV2StreamChecks: CheckDefinition[] = [
  check('v2', {
    id: 'v2.listen.non-declaring',
    title: 'subscriptions/listen with taskIds from a request without the extension gets -32021',
    gate: 'contract',
    rules: ['C-V2-20', 'E35'],
    async run(ctx) {
      const answer = await listen(ctx, v2(ctx), [unknownTaskId()], { capabilities: {}, ms: 3000, until: () => true });
      if (answer.response?.error?.code === -32601) skip('the server does not implement subscriptions/listen (-32601)');
      expectError(answer, -32021, 'subscriptions/listen with taskIds, no extension');
    },
  }),
  check('v2', {
    id: 'v2.listen.stream',
    title: 'subscriptions/listen with taskIds: acknowledged first with the agreed ids, every message tagged, notifications equal tasks/get',
    gate: 'contract',
    rules: ['C-V2-21', 'E33', 'E34', 'E37', 'B18', 'B19'],
    needs: ['slow'],
    async run(ctx) {
      const wire = v2(ctx);
      const task = await ctx.createTask(wire, ctx.role('slow'), { ms: 600 });
      const unknown = unknownTaskId();
      const isFinal = (message: unknown): boolean =>
        (message as { method?: string; params?: { status?: string } }).method === 'notifications/tasks' &&
        isTerminal(String((message as { params?: { status?: string } }).params?.status));
      const answer = await listen(ctx, wire, [task.taskId, unknown], { ms: 5000, until: isFinal });
      if (answer.response?.error?.code === -32601) skip('the server does not implement subscriptions/listen (-32601)');
      expectThat(!answer.response?.error, `subscriptions/listen failed: ${describe(answer)}`, answer);
      const messages = answer.messages as Array<{ method?: string; params?: Record<string, unknown> }>;
      const ack = messages[0];
      expectThat(
        ack?.method === 'notifications/subscriptions/acknowledged',
        `the first listen message is ${JSON.stringify(ack?.method)}, not the acknowledgement (B18)`,
        answer,
      );
      const agreed = ((ack.params?.notifications as { taskIds?: unknown } | undefined)?.taskIds ?? []) as unknown[];
      expectThat(
        Array.isArray(agreed) && agreed.includes(task.taskId),
        `the acknowledgement does not list the caller's own task (E34): ${JSON.stringify(ack.params)}`,
        answer,
      );
      if (agreed.includes(unknown)) ctx.warn('the acknowledgement lists an id no task has (E45: filter it like a foreign one)');
      for (const message of messages) {
        const tag = (message.params?._meta as Record<string, unknown> | undefined)?.[SUBSCRIPTION_ID_META_KEY];
        expectThat(tag === answer.listenId, `listen message ${message.method} is not tagged with subscriptionId ${answer.listenId} (B19)`, answer);
        expectThat(
          message.method !== 'notifications/progress' && message.method !== 'notifications/message',
          `the listen stream carries ${message.method} (E37)`,
          answer,
        );
      }
      const notifications = messages.filter((message) => message.method === 'notifications/tasks');
      if (notifications.length === 0) {
        ctx.warn('no notifications/tasks arrived while the task ran (E33: MAY)');
        return;
      }
      const final = await ctx.getTask(wire, task.taskId);
      const last = notifications.at(-1)?.params ?? {};
      expectThat(
        last.taskId === task.taskId && !('resultType' in last),
        `notifications/tasks params are not a DetailedTask of ${task.taskId} (E33): ${JSON.stringify(last).slice(0, 300)}`,
        answer,
      );
      if (isTerminal(String(last.status)))
        expectThat(
          last.status === final.task.status,
          `the last notification says "${String(last.status)}", tasks/get "${final.task.status}" (E33: identical)`,
          final.answer,
        );
    },
  }),
  check('v2', {
    id: 'v2.ttl.expiry',
    title: 'after createdAt + ttlMs a task is failed or gone, never working forever',
    gate: 'contract',
    rules: ['C-V2-23', 'E20'],
    needs: ['slow'],
    timeoutMs: 90_000,
    async run(ctx) {
      const wire = v2(ctx);
      const probe = await ctx.createTask(wire, ctx.role('slow'), { ms: 100 });
      const ttl = ctx.map.server.ttlMs ?? probe.raw.ttlMs;
      if (typeof ttl !== 'number' || ttl > ctx.thresholds.maxTtlWaitMs) {
        skip(
          `the server grants ttlMs ${JSON.stringify(probe.raw.ttlMs)}, longer than maxTtlWaitMs (${ctx.thresholds.maxTtlWaitMs} ms); 2026-07-28 cannot ask for a shorter one: run a test instance with a short retention and set server.ttlMs in the tool map (or raise --threshold maxTtlWaitMs)`,
        );
      }
      if (ctx.map.server.ttlMs !== undefined && probe.raw.ttlMs !== ctx.map.server.ttlMs)
        ctx.warn(`the tool map says server.ttlMs ${ctx.map.server.ttlMs}, the server grants ${JSON.stringify(probe.raw.ttlMs)}`);
      const task = await ctx.createTask(wire, ctx.role('slow'), { ms: ttl + 5000 });
      const expiresAt = Date.parse(String(task.raw.createdAt)) + ttl;
      await ctx.sleep(Math.max(0, expiresAt - Date.now()) + Math.max(1000, ttl / 2));
      const answer = await wire.get(task.taskId);
      if (answer.response?.error) {
        expectError(answer, -32602, 'tasks/get after createdAt + ttlMs');
        ctx.track(wire, task.taskId, 'completed');
        return;
      }
      const seen = wire.taskOf(answer);
      expectThat(
        seen && isTerminal(seen.status),
        `${Date.now() - expiresAt} ms after createdAt + ttlMs the task is still "${seen?.status}" (E20: failed or gone, never working forever)`,
        answer,
      );
    },
  }),
];
