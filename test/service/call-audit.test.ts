/**
 * Issue 25: the `call` audit entry of a `tools/call` that creates a task is written with the task (one write per
 * create, not a second one after it), through a real server on both protocol generations and both HTTP paths. The
 * proof is a fault: with the audit log's own append failing, the entry of a created task is still there — and the
 * entries the door writes after an operation (a replayed key, an inline-grace answer) are not, the negative control.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import type { TaskStore } from '../../src/core/store.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { IDEMPOTENCY_KEY_META_KEY } from '../../src/protocol/constants.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { RawLegacySession } from '../helpers/sse.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

/** A task-optional tool that the inline grace answers with its result. */
const quick = defineTool({
  name: 'quick',
  description: 'Answers at once.',
  execution: 'task-optional',
  inputSchema: z.object({}),
  run: async () => textResult('done'),
});

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A server whose store refuses every separate audit append (a write the door makes after an operation). */
async function start(options: { fastPath: boolean; inlineGraceMs: number; failAppends: boolean }): Promise<RunningTasksServer> {
  const running = await startTasksServer({
    tools: [...conformanceFixtureTools(), quick],
    fastPath: options.fastPath,
    limits: { inlineGraceMs: options.inlineGraceMs },
    wrapStore: (store) =>
      options.failAppends
        ? (new Proxy(store, {
            get(target, property, receiver) {
              if (property === 'appendAudit') return () => Promise.reject(new Error('audit append refused (test fault)'));
              const value = Reflect.get(target, property, receiver) as unknown;
              return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
            },
          }) as TaskStore)
        : store,
  });
  cleanups.push(() => running.close());
  return running;
}

async function callEntries(running: RunningTasksServer, taskId?: string) {
  return (await running.store.listAudit({ limit: 10_000 })).filter((entry) => entry.kind === 'call' && (taskId === undefined || entry.taskId === taskId));
}

describe('the call entry of a created task is written with it (issue 25)', () => {
  for (const fastPath of [true, false]) {
    it(`v1 and v2 creates (fast path ${fastPath ? 'on' : 'off'}): one entry each, there even when a separate audit append fails`, async () => {
      const running = await start({ fastPath, inlineGraceMs: 0, failAppends: true });
      const session = await RawLegacySession.open(running.url, { capabilities: { tasks: {} } });
      const v1 = await session.request('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: { ttl: 60_000 } });
      const v1Task = (v1.body.result?.task as { taskId: string }).taskId;
      const v2 = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } });
      const v2Task = String(v2.body.result?.taskId);
      await pollModernTask(running.url, v2Task);
      for (const taskId of [v1Task, v2Task]) {
        expect(await callEntries(running, taskId)).toEqual([
          expect.objectContaining({ kind: 'call', taskId, tool: 'slow_compute', outcome: 'task working', argumentsDigest: expect.any(String) }),
        ]);
      }
    });
  }

  it('with appends working, a created task still has exactly one entry (the door does not write it again), a replay its own', async () => {
    const running = await start({ fastPath: true, inlineGraceMs: 0, failAppends: false });
    const keyed = { name: 'slow_compute', arguments: { seconds: 0 }, _meta: { [IDEMPOTENCY_KEY_META_KEY]: 'k-1' } };
    const first = await postModern(running.url, 'tools/call', keyed);
    const taskId = String(first.body.result?.taskId);
    await pollModernTask(running.url, taskId);
    const again = await postModern(running.url, 'tools/call', keyed);
    expect(again.body.result?.taskId).toBe(taskId);
    expect((await callEntries(running, taskId)).map((entry) => entry.outcome)).toEqual(['task working', 'task completed']);
  });

  it('an answer of the inline grace is audited after it, as "answered inline", and its task gets no entry written with it', async () => {
    const running = await start({ fastPath: true, inlineGraceMs: 5_000, failAppends: false });
    const graced = await postModern(running.url, 'tools/call', { name: 'quick', arguments: {} });
    expect(graced.body.result?.resultType).not.toBe('task');
    expect((await callEntries(running)).map((entry) => [entry.tool, entry.outcome, entry.taskId])).toEqual([['quick', 'answered inline', null]]);
  });

  it('negative control: the entries the door writes after the operation (a replay, an inline-grace answer) are lost when the append fails', async () => {
    const running = await start({ fastPath: true, inlineGraceMs: 5_000, failAppends: true });
    const graced = await postModern(running.url, 'tools/call', { name: 'quick', arguments: {} });
    expect(graced.body.result?.resultType).not.toBe('task');
    const keyed = { name: 'slow_compute', arguments: { seconds: 0 }, _meta: { [IDEMPOTENCY_KEY_META_KEY]: 'k-2' } };
    const taskId = String((await postModern(running.url, 'tools/call', keyed)).body.result?.taskId);
    await pollModernTask(running.url, taskId);
    expect((await postModern(running.url, 'tools/call', keyed)).body.result?.taskId).toBe(taskId);
    expect((await callEntries(running)).map((entry) => [entry.tool, entry.outcome])).toEqual([['slow_compute', 'task working']]);
  });
});
