/**
 * Issue 27 §5: the 2026-07-28 inline grace. The server decides per request whether a declaring client gets a task
 * (SEP-2663 E2) and that client accepts a `CallToolResult` (E4): a task-optional call whose task completes within
 * `limits.inlineGraceMs` is answered with its result (`resultType: "complete"`), one that runs longer with
 * `resultType: "task"` (E8). The task row is created durably before the run starts either way (E14 still holds for
 * the task answer; the inline one leaves a completed task behind). Real HTTP, a real SQLite file, the official
 * 2.4.0 client and raw requests (the fast path), against in-process servers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, textResult } from '../../src/core/tool.js';
import { connectV2Http } from '../helpers/official-clients.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { postModern } from '../helpers/wire.js';

const GRACE_MS = 1000;

/** What each run saw of its own task row in the store when it started (the durability check). */
const rowsAtStart = new Map<string, string | undefined>();
let servers: RunningTasksServer[] = [];

function tools() {
  const wait = (ms: number, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  const sleeper = (name: string, extra: { execution: 'task-optional' | 'task-required'; inlineGrace?: boolean }) =>
    defineTool({
      name,
      description: `Waits ms, then answers (${name}).`,
      ...extra,
      inputSchema: z.object({ ms: z.number().int().min(0).max(60_000) }),
      async run({ ms }, ctx) {
        if (ctx.taskId !== null) {
          const row = await Promise.any(servers.map(async (server) => (await server.store.getUnscoped(ctx.taskId!)) ?? Promise.reject(new Error('no row'))));
          rowsAtStart.set(ctx.taskId, row?.status);
        }
        await wait(ms, ctx.signal);
        return textResult(`${name} done after ${ms} ms`, { structuredContent: { ms } });
      },
    });
  return [
    sleeper('short_or_long', { execution: 'task-optional' }),
    sleeper('always_a_task', { execution: 'task-optional', inlineGrace: false }),
    sleeper('required_job', { execution: 'task-required' }),
  ];
}

describe('issue 27 §5 E2 E4 E8 inline grace on 2026-07-28', () => {
  let graced: RunningTasksServer;
  let ungraced: RunningTasksServer;
  beforeAll(async () => {
    graced = await startTasksServer({ tools: tools(), limits: { inlineGraceMs: GRACE_MS } });
    ungraced = await startTasksServer({ tools: tools(), limits: { inlineGraceMs: 0 } });
    servers = [graced, ungraced];
  });
  afterAll(async () => {
    await graced?.close();
    await ungraced?.close();
  });

  it('a task-optional call finishing within the grace is answered with its CallToolResult; its task row existed (working) before the run and is completed after', async () => {
    const client = await connectV2Http(graced.url);
    try {
      const result = await client.client.callTool({ name: 'short_or_long', arguments: { ms: 0 } });
      expect(result.content).toEqual([{ type: 'text', text: 'short_or_long done after 0 ms' }]);
      expect(result.structuredContent).toEqual({ ms: 0 });
      const raw = (await client.http.lastResponse('tools/call')).result ?? {};
      expect(raw.resultType).toBe('complete');
      expect(raw).not.toHaveProperty('taskId');
    } finally {
      await client.close();
    }
    const [taskId, status] = [...rowsAtStart.entries()].at(-1)!;
    expect(status).toBe('working');
    expect((await graced.store.getUnscoped(taskId))?.status).toBe('completed');
  });

  it('the same through the fast path (raw request): resultType "complete" and the result', async () => {
    const answer = await postModern(graced.url, 'tools/call', { name: 'short_or_long', arguments: { ms: 5 } });
    expect(answer.status).toBe(200);
    expect(answer.body.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'short_or_long done after 5 ms' }] });
  });

  it('a run longer than the grace, a tool that opts out and a task-required tool are answered with resultType "task"', async () => {
    for (const [name, ms] of [
      ['short_or_long', 2 * GRACE_MS],
      ['always_a_task', 0],
      ['required_job', 0],
    ] as const) {
      const answer = await postModern(graced.url, 'tools/call', { name, arguments: { ms } });
      expect(answer.body.result, name).toMatchObject({ resultType: 'task', taskId: expect.any(String) });
    }
  });

  it('negative control: with inlineGraceMs 0 the short call is a task, as before', async () => {
    const answer = await postModern(ungraced.url, 'tools/call', { name: 'short_or_long', arguments: { ms: 0 } });
    expect(answer.body.result).toMatchObject({ resultType: 'task', taskId: expect.any(String) });
  });

  it('E3 a request without the extension never gets a task: the short call runs inline, grace or not', async () => {
    const answer = await postModern(graced.url, 'tools/call', { name: 'short_or_long', arguments: { ms: 0 } }, { capabilities: {} });
    // Without the extension a task-optional call runs inline (E3), never a task; the grace changes nothing there.
    expect(answer.body.result).toMatchObject({ resultType: 'complete' });
  });
});
