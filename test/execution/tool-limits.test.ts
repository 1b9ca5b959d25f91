import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import type { TasksServerLimits } from '../../src/core/limits.js';
import { type AnyToolDefinition, defineTool, textResult } from '../../src/core/tool.js';
import { ToolRegistry } from '../../src/core/tool-registry.js';
import { createTasksServer } from '../../src/server/create-tasks-server.js';
import type { Caller, TaskCaller } from '../../src/service/caller.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { anonymousV2Caller } from '../helpers/callers.js';
import { QUIET_LIMITS } from '../helpers/quiet-limits.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * A tool's own runtime limit and default retention (`ToolDefinition.runtimeLimitMs` / `defaultTtlMs`, issue 28's
 * per-tool policy of upstream tools): they stand in for the server's limits, for that tool only.
 */

const LIMITS: Partial<TasksServerLimits> = { ...QUIET_LIMITS, maxTtlMs: 3_600_000, defaultTtlMs: 120_000, minTtlMs: 1_000 };
const V2: TaskCaller = anonymousV2Caller();
const V1: TaskCaller = { ...V2, negotiation: 'per-session', generation: 'v1', protocolVersion: '2025-11-25', clientCapabilities: { tasks: {} } };
/** A 2026-07-28 caller without the Tasks Extension: its calls run inline. */
const INLINE: Caller = { ...V2, generation: null };

/** Runs until aborted. */
const waits = (name: string, extra: Partial<AnyToolDefinition> = {}): AnyToolDefinition =>
  defineTool({
    name,
    description: name,
    execution: 'task-optional',
    inputSchema: z.object({}),
    async run(_args, ctx) {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      return textResult('stopped');
    },
    ...extra,
  } as AnyToolDefinition);

describe('per-tool runtime limit and default retention', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function serve(tools: AnyToolDefinition[]) {
    const temp = makeTempDir();
    cleanups.push(() => temp.remove());
    const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db') });
    cleanups.push(() => store.close());
    const server = await createTasksServer({ tools, store, secret: randomBytes(32), limits: LIMITS, instanceId: 'w1' });
    cleanups.push(() => server.close());
    const { service } = server;
    // An inline run needs a request that can answer input; these tools ask none.
    const interaction = {
      signal: new AbortController().signal,
      withInput: async <T>(_prefix: 'gather' | 'input', phase: (ask: () => Promise<{ parked: true }>) => Promise<T>) => ({
        done: await phase(async () => ({ parked: true })),
      }),
    };
    const call = async (caller: Caller, name: string, task?: unknown) =>
      service.calls.callTool(caller, await service.calls.planCall(caller, { name, progressToken: null, ...(task === undefined ? {} : { task }) }), {
        interaction,
      });
    return { store, service, call };
  }

  it("a task of a tool with runtimeLimitMs fails runtime_limit at the tool's limit; the control under the server's 60 s limit still runs", async () => {
    const { store, call } = await serve([waits('short', { runtimeLimitMs: 200 }), waits('control')]);
    const short = await call(V2, 'short');
    const control = await call(V2, 'control');
    if (short.kind !== 'task' || control.kind !== 'task') throw new Error('no tasks');
    await expect.poll(async () => (await store.getUnscoped(short.task.taskId))?.status, { timeout: 5000 }).toBe('failed');
    expect(await store.getOutcome(short.task.taskId)).toMatchObject({ kind: 'error', error: { code: -32603, data: { reason: 'runtime_limit' } } });
    expect((await store.getUnscoped(short.task.taskId))?.statusMessage).toContain('200 ms');
    expect(await store.getUnscoped(control.task.taskId)).toMatchObject({ status: 'working' });
  }, 20_000);

  it('an inline call of such a tool is stopped at its limit too', async () => {
    const { call } = await serve([waits('short', { runtimeLimitMs: 200 })]);
    const started = Date.now();
    await expect(call(INLINE, 'short')).rejects.toMatchObject({ code: -32603, data: { reason: 'runtime_limit' } });
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 20_000);

  it("defaultTtlMs is the retention of the tool's tasks when none is asked for, within the server's bounds; a v1 ttl asked for still wins", async () => {
    const { call } = await serve([waits('kept', { defaultTtlMs: 600_000 }), waits('huge', { defaultTtlMs: 10 ** 12 }), waits('plain')]);
    const ttl = async (caller: Caller, name: string, task?: unknown) => {
      const outcome = await call(caller, name, task);
      if (outcome.kind !== 'task') throw new Error('no task');
      return outcome.task.ttlMs;
    };
    expect(await ttl(V2, 'kept')).toBe(600_000);
    expect(await ttl(V1, 'kept', {})).toBe(600_000);
    expect(await ttl(V1, 'kept', { ttl: 5_000 })).toBe(5_000);
    expect(await ttl(V2, 'huge')).toBe(3_600_000);
    expect(await ttl(V2, 'plain')).toBe(120_000);
  }, 20_000);

  it('the registry refuses a runtimeLimitMs or defaultTtlMs that is not a positive integer, or a runtime limit past 2^31 − 1 ms', () => {
    for (const extra of [{ runtimeLimitMs: 0 }, { runtimeLimitMs: 1.5 }, { runtimeLimitMs: 2_147_483_648 }, { defaultTtlMs: -1 }])
      expect(() => new ToolRegistry([waits('t', extra)]), JSON.stringify(extra)).toThrow(/must be a positive integer of milliseconds/);
    expect(() => new ToolRegistry([waits('t', { runtimeLimitMs: 2_147_483_647, defaultTtlMs: 10 ** 12 })])).not.toThrow();
  });
});
