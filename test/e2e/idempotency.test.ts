import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, textResult } from '../../src/core/tool.js';
import { IDEMPOTENCY_KEY_META_KEY } from '../../src/protocol/constants.js';
import { RawLegacySession } from '../helpers/sse.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern, readJsonRpc } from '../helpers/wire.js';

const ELICITING = { extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: { form: {} } };

describe('issue 12: idempotency keys on tools/call (both generations)', () => {
  let running: RunningTasksServer;
  const runs: string[] = [];
  beforeAll(async () => {
    const counted = defineTool({
      name: 'counted_job',
      description: 'counts its runs',
      execution: 'task-optional',
      inputSchema: z.object({ n: z.number(), tag: z.string().optional() }),
      async run({ n }) {
        runs.push(`counted:${n}`);
        return textResult(`ran ${n}`);
      },
    });
    const inline = defineTool({
      name: 'inline_job',
      description: 'sync',
      execution: 'sync',
      inputSchema: z.object({ n: z.number() }),
      async run({ n }) {
        runs.push(`inline:${n}`);
        return textResult(`inline ${n}`);
      },
    });
    const asking = defineTool({
      name: 'asking_job',
      description: 'asks before the task exists (MRTR gather)',
      execution: 'task-optional',
      inputSchema: z.object({ what: z.string() }),
      async gather(_args, ctx) {
        const answer = await ctx.elicit({
          message: 'Proceed?',
          requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
        });
        return answer.action;
      },
      async run({ what }) {
        runs.push(`asking:${what}`);
        return textResult(what);
      },
    });
    running = await startTasksServer({
      tools: [counted, inline, asking],
      limits: { minTtlMs: 1000, defaultTtlMs: 5000, runtimeLimitMs: 4000, minResultRetentionMs: 0 },
    });
  });
  afterAll(async () => {
    await running.close();
  });

  const call = (args: Record<string, unknown>, key?: string, name = 'counted_job', capabilities?: object) =>
    postModern(
      running.url,
      'tools/call',
      { name, arguments: args, ...(key === undefined ? {} : { _meta: { [IDEMPOTENCY_KEY_META_KEY]: key } }) },
      capabilities ? { capabilities } : {},
    );

  it('advertises the capability on both generations', async () => {
    const discover = await postModern(running.url, 'server/discover');
    expect((discover.body.result as any).capabilities.extensions['dev.mcp-tasks/idempotency']).toEqual({});
    const init = await fetch(running.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } },
      }),
    });
    const answer = await readJsonRpc(init);
    expect((answer.body.result as any).capabilities.experimental['dev.mcp-tasks/idempotency']).toEqual({});
  });

  it('v2: the same key, tool and arguments (any key order) return the existing task; no second run', async () => {
    const first = await call({ n: 1, tag: 'a' }, 'k-v2-same');
    const taskId = (first.body.result as any).taskId as string;
    await pollModernTask(running.url, taskId);
    const again = await call({ tag: 'a', n: 1 }, 'k-v2-same');
    expect(again.body.result).toMatchObject({ resultType: 'task', taskId, status: 'completed' });
    expect(runs.filter((r) => r === 'counted:1')).toHaveLength(1);
  });

  it('v2: the same key with other arguments or another tool is -32602 naming the conflict', async () => {
    await call({ n: 2 }, 'k-v2-conflict');
    const other = await call({ n: 3 }, 'k-v2-conflict');
    // The reason clients branch on is data.reason, not the message.
    expect(other.body.error).toMatchObject({ code: -32602, data: { reason: 'idempotency_key_used' } });
    expect(other.body.error?.message).toMatch(/Idempotency key "k-v2-conflict" was already used .* different arguments/);
    const tool = await call({ n: 2 }, 'k-v2-conflict', 'inline_job');
    expect(tool.body.error).toMatchObject({ code: -32602, data: { reason: 'idempotency_key_used' } });
    expect(tool.body.error?.message).toMatch(/already used for a call of tool counted_job, not inline_job/);
    expect(runs).not.toContain('counted:3');
  });

  it('keys are per owner-generation: the same key on v1 is another key; v1 replays answer {task}', async () => {
    await call({ n: 4 }, 'k-shared');
    const session = await RawLegacySession.open(running.url);
    const v1 = () => session.request('tools/call', { name: 'counted_job', arguments: { n: 5 }, task: {}, _meta: { [IDEMPOTENCY_KEY_META_KEY]: 'k-shared' } });
    const first = await v1();
    const task = (first.body.result as any).task;
    expect(task.taskId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const again = await v1();
    expect((again.body.result as any).task.taskId).toBe(task.taskId);
    expect(runs.filter((r) => r === 'counted:5')).toHaveLength(1);
  });

  it('a key of a call answered inline, and of a purged task, is -32602 "already used", never a second run', async () => {
    const first = await call({ n: 6 }, 'k-inline', 'inline_job');
    expect(first.body.result).toMatchObject({ content: [{ type: 'text', text: 'inline 6' }] });
    const again = await call({ n: 6 }, 'k-inline', 'inline_job');
    expect(again.body.error).toMatchObject({ code: -32602, data: { reason: 'idempotency_key_used' } });
    expect(again.body.error?.message).toMatch(/already used by a call that was answered without a task/);
    expect(runs.filter((r) => r === 'inline:6')).toHaveLength(1);

    const created = await call({ n: 7 }, 'k-purged');
    const taskId = (created.body.result as any).taskId as string;
    await pollModernTask(running.url, taskId);
    await new Promise((resolve) => setTimeout(resolve, 5300)); // past the 5 s TTL (long enough for polls on a loaded machine)
    await running.store.expireDue(100);
    expect(await running.store.getUnscoped(taskId)).toBeUndefined();
    const replay = await call({ n: 7 }, 'k-purged');
    expect(replay.body.error).toMatchObject({ code: -32602, data: { reason: 'idempotency_key_used' } });
    expect(replay.body.error?.message).toMatch(/already used by a task that no longer exists/);
    expect(runs.filter((r) => r === 'counted:7')).toHaveLength(1);
  });

  it('refuses a malformed key with -32602', async () => {
    const bad = await call({ n: 8 }, 'tab\tkey');
    expect(bad.body.error).toMatchObject({ code: -32602 });
    expect(bad.body.error?.message).toMatch(/dev\.mcp-tasks\/idempotency-key/);
    const long = await call({ n: 8 }, 'x'.repeat(256));
    expect(long.body.error?.code).toBe(-32602);
  });

  it('concurrent calls with one key in one process create one task', async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, () => call({ n: 9 }, 'k-concurrent')));
    const ids = new Set(answers.map((a) => (a.body.result as any)?.taskId));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^[A-Za-z0-9_-]{22}$/);
    await pollModernTask(running.url, [...ids][0] as string);
    expect(runs.filter((r) => r === 'counted:9')).toHaveLength(1);
  });

  describe('MRTR: a replayed final round returns the task it created the first time', () => {
    const finalRound = async (key?: string) => {
      const first = await postModern(
        running.url,
        'tools/call',
        { name: 'asking_job', arguments: { what: key ?? 'derived' }, ...(key ? { _meta: { [IDEMPOTENCY_KEY_META_KEY]: key } } : {}) },
        { capabilities: ELICITING },
      );
      const round = first.body.result as any;
      expect(round.resultType).toBe('input_required');
      const [questionKey] = Object.keys(round.inputRequests);
      return {
        questionKey,
        send: () =>
          postModern(
            running.url,
            'tools/call',
            {
              name: 'asking_job',
              arguments: { what: key ?? 'derived' },
              requestState: round.requestState,
              inputResponses: { [questionKey as string]: { action: 'accept', content: { ok: true } } },
              ...(key ? { _meta: { [IDEMPOTENCY_KEY_META_KEY]: key } } : {}),
            },
            { capabilities: ELICITING },
          ),
      };
    };

    it('with the key derived from the signed request state (no client key)', async () => {
      const { send } = await finalRound();
      const first = await send();
      const taskId = (first.body.result as any).taskId as string;
      expect(taskId).toMatch(/^[A-Za-z0-9_-]{22}$/);
      const replay = await send();
      expect((replay.body.result as any).taskId).toBe(taskId);
      await pollModernTask(running.url, taskId);
      expect(runs.filter((r) => r === 'asking:derived')).toHaveLength(1);
      // Negative control: a new call (a new first round) is a new task.
      const other = await (await finalRound()).send();
      expect((other.body.result as any).taskId).not.toBe(taskId);
    });

    it('with a client-sent key', async () => {
      const { send } = await finalRound('k-mrtr');
      const first = await send();
      const taskId = (first.body.result as any).taskId as string;
      const replay = await send();
      expect((replay.body.result as any).taskId).toBe(taskId);
    });
  });
});
