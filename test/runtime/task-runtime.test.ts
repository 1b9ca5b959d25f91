import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { systemClock, type Clock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import type { TaskEvent } from '../../src/core/store.js';
import { defineTool, textResult, type AnyToolDefinition } from '../../src/core/tool.js';
import { TaskRuntime, type RuntimeSettings } from '../../src/runtime/task-runtime.js';
import { TaskReads } from '../../src/service/task-reads.js';
import { openSqliteTaskStore, type SqliteTaskStore } from '../../src/store/sqlite/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const SETTINGS: RuntimeSettings = {
  instanceId: 'test-instance',
  concurrency: 4,
  leaseMs: 60_000,
  recoveryIntervalMs: 60_000,
  sweepIntervalMs: 60_000,
  tailIntervalMs: 60_000,
  statusFlushIntervalMs: 60_000,
  runtimeLimitMs: 60_000,
  maxAttempts: 3,
  roots: [],
  deniedPaths: [],
  inputTimeoutMs: 60_000,
};

/** A tool that waits until aborted, recording why. */
function waitingTool(name: string, seen: { reasons: unknown[] }): AnyToolDefinition {
  return defineTool({
    name,
    description: 'waits for abort',
    execution: 'task-optional',
    inputSchema: z.object({}),
    async run(_args, ctx) {
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      seen.reasons.push(ctx.signal.reason);
      return textResult('late outcome that must be discarded');
    },
  });
}

describe('TaskRuntime', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setup(tools: AnyToolDefinition[], settings: Partial<RuntimeSettings> = {}, clock: Clock = systemClock) {
    const temp = makeTempDir();
    const store: SqliteTaskStore = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db'), clock });
    const runtime = new TaskRuntime(store, tools, { ...SETTINGS, ...settings }, clock, silentLogger);
    await runtime.start();
    const events: TaskEvent[] = [];
    store.onEvent((event) => events.push(event));
    cleanups.push(() => temp.remove(), () => store.close(), () => runtime.close());
    const create = (tool: AnyToolDefinition, ttlMs: number | null = 60_000) =>
      runtime.createTask({ tool, ownerKey: 'anonymous', generation: 'v2', protocolVersion: '2026-07-28', arguments: {}, clientCapabilities: {}, progressToken: null, ttlMs, pollIntervalMs: 1000 });
    return { store, runtime, events, create };
  }

  it('C-V2-23/R20 an expired task is invisible to reads before the sweeper runs; the sweep records `expired` and aborts the tool (fake clock)', async () => {
    const clock = new FakeClock(1_000_000);
    const seen = { reasons: [] as unknown[] };
    const tool = waitingTool('wait', seen);
    const { store, runtime, events, create } = await setup([tool], {}, clock);
    const task = await create(tool, 5_000);
    await expect.poll(() => events.some((event) => event.kind === 'attempt')).toBe(true);
    const waiting = runtime.waitForTerminal(task.taskId, { ownerKey: 'anonymous', generation: 'v2' }, new AbortController().signal);

    const reads = new TaskReads(store, clock);
    clock.advance(4_999);
    expect(await reads.get(task.taskId, { ownerKey: 'anonymous' })).toBeDefined();
    clock.advance(1);
    expect(await reads.get(task.taskId, { ownerKey: 'anonymous' })).toBeUndefined();

    await runtime.sweep();
    await expect(waiting).rejects.toMatchObject({ code: -32602 });
    expect(events.map((event) => event.kind)).toContain('expired');
    await expect.poll(() => seen.reasons).toEqual(['expired']);
    expect(await store.getUnscoped(task.taskId)).toBeUndefined();
  });

  it('R41/R42 cancellation aborts the running tool and discards its later outcome', async () => {
    const seen = { reasons: [] as unknown[] };
    const tool = waitingTool('wait', seen);
    const { store, runtime, events, create } = await setup([tool]);
    const task = await create(tool);
    await expect.poll(() => events.some((event) => event.kind === 'attempt')).toBe(true);
    const cancelled = await runtime.cancel(task.taskId, 'Cancelled by requestor');
    expect(cancelled?.status).toBe('cancelled');
    await expect.poll(() => seen.reasons).toEqual(['cancelled']);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const after = await store.getUnscoped(task.taskId);
    expect(after?.status).toBe('cancelled');
    expect(await store.getOutcome(task.taskId)).toBeUndefined();
  });

  it('statusMessage writes are coalesced: 500 updates become one write with the last value', async () => {
    let release: () => void = () => {};
    const tool = defineTool({
      name: 'chatty',
      description: 'many status updates',
      execution: 'task-optional',
      inputSchema: z.object({}),
      async run(_args, ctx) {
        for (let i = 1; i <= 500; i += 1) ctx.progress(i, 500, 'scanned');
        await new Promise<void>((resolve) => (release = resolve));
        ctx.setStatus('finishing\u0007 up');
        return textResult('ok');
      },
    });
    const { store, runtime, events, create } = await setup([tool], { statusFlushIntervalMs: 25 });
    const task = await create(tool);
    await expect.poll(() => events.filter((event) => event.kind === 'message').length).toBe(1);
    expect((await store.getUnscoped(task.taskId))?.statusMessage).toBe('scanned (500/500)');
    release();
    const done = await runtime.waitForTerminal(task.taskId, { ownerKey: 'anonymous' }, new AbortController().signal);
    // The last message travels with the transition instead of being written separately; control characters are gone.
    expect(done.statusMessage).toBe('finishing up');
    expect(events.filter((event) => event.kind === 'message')).toHaveLength(1);
  });

  it('a run longer than runtimeLimitMs fails with data.reason "runtime_limit"', async () => {
    const seen = { reasons: [] as unknown[] };
    const tool = waitingTool('wait', seen);
    const { store, runtime, create } = await setup([tool], { runtimeLimitMs: 100 });
    const task = await create(tool);
    const done = await runtime.waitForTerminal(task.taskId, { ownerKey: 'anonymous' }, new AbortController().signal);
    expect(done.status).toBe('failed');
    expect(await store.getOutcome(task.taskId)).toMatchObject({ kind: 'error', error: { code: -32603, data: { reason: 'runtime_limit' } } });
    expect(seen.reasons).toEqual(['runtime_limit']);
  });

  it('200 tasks at once all reach a terminal state and never more than `concurrency` run at once', async () => {
    let inFlight = 0;
    let maxSeen = 0;
    const probe = defineTool({
      name: 'probe',
      description: 'counts concurrent runs',
      execution: 'task-optional',
      inputSchema: z.object({}),
      async run() {
        inFlight += 1;
        maxSeen = Math.max(maxSeen, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight -= 1;
        return textResult('ok');
      },
    });
    const { runtime, create } = await setup([probe], { concurrency: 16 });
    const tasks = await Promise.all(Array.from({ length: 200 }, () => create(probe)));
    expect(tasks.filter((task) => task.statusMessage === 'queued').length).toBeGreaterThan(0);
    const done = await Promise.all(tasks.map((task) => runtime.waitForTerminal(task.taskId, { ownerKey: 'anonymous' }, new AbortController().signal)));
    expect(done.every((task) => task.status === 'completed')).toBe(true);
    expect(maxSeen).toBe(16);
    expect(runtime.maxInFlight).toBe(16);
  });

  it('recovery: a re-runnable task that already used maxAttempts fails with "attempts_exhausted"; a never-started one runs', async () => {
    const clock = new FakeClock(5_000_000);
    const ran: string[] = [];
    const idempotent = defineTool({ name: 'again', description: 'safe', execution: 'task-optional', idempotent: true, inputSchema: z.object({}), async run() { ran.push('again'); return textResult('ok'); } });
    const fragile = defineTool({ name: 'fragile', description: 'unsafe', execution: 'task-optional', inputSchema: z.object({}), async run() { ran.push('fragile'); return textResult('ok'); } });
    const { store, runtime } = await setup([idempotent, fragile], { maxAttempts: 2 }, clock);
    const base = { ownerKey: 'anonymous', generation: 'v2' as const, protocolVersion: '2026-07-28', arguments: {}, clientCapabilities: {}, progressToken: null, statusMessage: null, createdAt: clock.now(), ttlMs: 600_000, pollIntervalMs: 1000 };
    // Written by a "dead" process: leases already lapsed (0 ms long).
    const exhausted = await store.create({ ...base, taskId: 'AAAAAAAAAAAAAAAAAAAAAA', toolName: 'again', leaseOwner: 'dead', leaseMs: 0 });
    for (let attempt = 0; attempt < 2; attempt += 1) await store.startAttempt(exhausted.taskId, 'dead', 0);
    const queued = await store.create({ ...base, taskId: 'BBBBBBBBBBBBBBBBBBBBBB', toolName: 'fragile', leaseOwner: 'dead', leaseMs: 0 });

    await runtime.recover();
    const scope = { ownerKey: 'anonymous' };
    const failed = await runtime.waitForTerminal(exhausted.taskId, scope, new AbortController().signal);
    expect(failed.status).toBe('failed');
    expect(await store.getOutcome(exhausted.taskId)).toMatchObject({ kind: 'error', error: { data: { reason: 'attempts_exhausted' } } });
    const completed = await runtime.waitForTerminal(queued.taskId, scope, new AbortController().signal);
    expect(completed.status).toBe('completed');
    expect(ran).toEqual(['fragile']);
  });
});
