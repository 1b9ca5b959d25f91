import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { type Clock, systemClock } from '../../src/core/clock.js';
import type { TasksServerLimits } from '../../src/core/limits.js';
import { silentLogger } from '../../src/core/logger.js';
import type { TaskEvent } from '../../src/core/store.js';
import { StoreError } from '../../src/core/store-error.js';
import { type AnyToolDefinition, defineTool, textResult } from '../../src/core/tool.js';
import { Sweeper } from '../../src/execution/sweeper.js';
import { createTasksServer } from '../../src/server/create-tasks-server.js';
import type { TaskCaller } from '../../src/service/caller.js';
import { TaskReads } from '../../src/service/task-reads.js';
import { openSqliteTaskStore, type SqliteTaskStore } from '../../src/store/sqlite/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { apiOnlyOnSqlite } from '../helpers/api-only.js';
import { anonymousV2Caller } from '../helpers/callers.js';
import { QUIET_LIMITS } from '../helpers/quiet-limits.js';
import { overrideStore } from '../helpers/store-wrapper.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { serverOnWrappedStore, terminal } from '../helpers/wrapped-store-server.js';

const LIMITS: Partial<TasksServerLimits> = { ...QUIET_LIMITS, claimIntervalMs: 60_000 };

const CALLER: TaskCaller = anonymousV2Caller();

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

/** The task worker behind the task service: created through the service, run by the embedded worker of one server. */
describe('TaskWorker', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setup(tools: AnyToolDefinition[], limits: Partial<TasksServerLimits> = {}, clock: Clock = systemClock) {
    const temp = makeTempDir();
    const store: SqliteTaskStore = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db'), clock });
    const server = await createTasksServer({ tools, store, secret: randomBytes(32), limits: { ...LIMITS, ...limits }, clock, instanceId: 'test-instance' });
    const events: TaskEvent[] = [];
    store.onEvent((event) => events.push(event));
    cleanups.push(
      () => temp.remove(),
      () => store.close(),
      () => server.close(),
    );
    const { service } = server;
    const create = async (tool: AnyToolDefinition) => {
      const outcome = await service.calls.callTool(CALLER, await service.calls.planCall(CALLER, { name: tool.name, progressToken: null }));
      if (outcome.kind !== 'task') throw new Error(`no task: ${JSON.stringify(outcome)}`);
      return outcome.task;
    };
    const wait = (taskId: string) => service.tasks.waitForTerminal(CALLER, taskId, new AbortController().signal);
    return { store, server, service, worker: server.worker!, events, create, wait };
  }

  it('C-V2-23/R20 an expired task is invisible to reads before the sweeper runs; the sweep records `expired` and aborts the tool (fake clock)', async () => {
    const clock = new FakeClock(1_000_000);
    const seen = { reasons: [] as unknown[] };
    const tool = waitingTool('wait', seen);
    const { store, service, events, create, wait } = await setup([tool], { defaultTtlMs: 5_000, runtimeLimitMs: 5_000, minResultRetentionMs: 0 }, clock);
    const task = await create(tool);
    await expect.poll(() => events.some((event) => event.kind === 'attempt')).toBe(true);
    const waiting = wait(task.taskId);
    // Any event of the task may wake the wait once the task is expired; it then rejects before the assertion below
    // awaits it (asserted there, not lost).
    waiting.catch(() => undefined);

    const reads = new TaskReads(store, clock);
    clock.advance(4_999);
    expect(await reads.get(task.taskId, { ownerKey: 'anonymous' })).toBeDefined();
    clock.advance(1);
    expect(await reads.get(task.taskId, { ownerKey: 'anonymous' })).toBeUndefined();
    await expect(service.tasks.get(CALLER, task.taskId)).rejects.toMatchObject({ code: -32602 });

    await new Sweeper(store, { sweepIntervalMs: 60_000, inputTimeoutMs: 60_000 }, clock, silentLogger).sweep();
    await expect(waiting).rejects.toMatchObject({ code: -32602 });
    expect(events.map((event) => event.kind)).toContain('expired');
    await expect.poll(() => seen.reasons).toEqual(['expired']);
    expect(await store.getUnscoped(task.taskId)).toBeUndefined();
  });

  it('R41/R42 cancellation aborts the running tool and discards its later outcome', async () => {
    const seen = { reasons: [] as unknown[] };
    const tool = waitingTool('wait', seen);
    const { store, service, events, create } = await setup([tool]);
    const task = await create(tool);
    await expect.poll(() => events.some((event) => event.kind === 'attempt')).toBe(true);
    const { cancelled, task: after } = await service.tasks.cancel(CALLER, task.taskId);
    expect(cancelled).toBe(true);
    expect(after.status).toBe('cancelled');
    await expect.poll(() => seen.reasons).toEqual(['cancelled']);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await store.getUnscoped(task.taskId))?.status).toBe('cancelled');
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
    const { store, events, create, wait } = await setup([tool], { statusFlushIntervalMs: 25 });
    const task = await create(tool);
    await expect.poll(() => events.filter((event) => event.kind === 'message').length).toBe(1);
    expect((await store.getUnscoped(task.taskId))?.statusMessage).toBe('scanned (500/500)');
    release();
    const done = await wait(task.taskId);
    // The last message travels with the transition instead of being written separately; control characters are gone.
    expect(done.statusMessage).toBe('finishing up');
    expect(events.filter((event) => event.kind === 'message')).toHaveLength(1);
  });

  it('a run longer than runtimeLimitMs fails with data.reason "runtime_limit"', async () => {
    const seen = { reasons: [] as unknown[] };
    const tool = waitingTool('wait', seen);
    const { store, create, wait } = await setup([tool], { runtimeLimitMs: 100 });
    const task = await create(tool);
    const done = await wait(task.taskId);
    expect(done.status).toBe('failed');
    expect(await store.getOutcome(task.taskId)).toMatchObject({ kind: 'error', error: { code: -32603, data: { reason: 'runtime_limit' } } });
    expect(seen.reasons).toEqual(['runtime_limit']);
  });

  it('200 tasks at once all reach a terminal state and never more than `concurrency` run at once; queued ones hold no lease', async () => {
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
    const { worker, create, wait } = await setup([probe], { concurrency: 16 });
    const tasks = await Promise.all(Array.from({ length: 200 }, () => create(probe)));
    const queued = tasks.filter((task) => task.statusMessage === 'queued');
    expect(queued.length).toBeGreaterThan(0);
    for (const task of queued) expect(task).toMatchObject({ leaseOwner: null, attempt: 0 });
    const done = await Promise.all(tasks.map((task) => wait(task.taskId)));
    expect(done.every((task) => task.status === 'completed')).toBe(true);
    expect(maxSeen).toBe(16);
    expect(worker.maxInFlight).toBe(16);
  });

  it('recovery: a re-runnable task that already used maxAttempts fails with "attempts_exhausted"; a never-started one runs', async () => {
    const clock = new FakeClock(5_000_000);
    const ran: string[] = [];
    const idempotent = defineTool({
      name: 'again',
      description: 'safe',
      execution: 'task-optional',
      idempotent: true,
      inputSchema: z.object({}),
      async run() {
        ran.push('again');
        return textResult('ok');
      },
    });
    const fragile = defineTool({
      name: 'fragile',
      description: 'unsafe',
      execution: 'task-optional',
      inputSchema: z.object({}),
      async run() {
        ran.push('fragile');
        return textResult('ok');
      },
    });
    const { store, worker, wait } = await setup([idempotent, fragile], { maxAttempts: 2 }, clock);
    const base = {
      ownerKey: 'anonymous',
      generation: 'v2' as const,
      protocolVersion: '2026-07-28',
      arguments: {},
      clientCapabilities: {},
      progressToken: null,
      statusMessage: null,
      createdAt: clock.now(),
      ttlMs: 600_000,
      pollIntervalMs: 1000,
    };
    // Written by a "dead" process: leases already lapsed (0 ms long).
    const exhausted = await store.create({ ...base, taskId: 'AAAAAAAAAAAAAAAAAAAAAA', toolName: 'again', leaseOwner: 'dead', leaseMs: 0 });
    for (let attempt = 0; attempt < 2; attempt += 1) await store.startAttempt(exhausted.taskId, 'dead', 0);
    const queued = await store.create({ ...base, taskId: 'BBBBBBBBBBBBBBBBBBBBBB', toolName: 'fragile', leaseOwner: 'dead', leaseMs: 0 });

    await worker.recover();
    const failed = await wait(exhausted.taskId);
    expect(failed.status).toBe('failed');
    expect(await store.getOutcome(exhausted.taskId)).toMatchObject({ kind: 'error', error: { data: { reason: 'attempts_exhausted' } } });
    const completed = await wait(queued.taskId);
    expect(completed.status).toBe('completed');
    expect(ran).toEqual(['fragile']);
  });

  it('a create never waits for a claim in flight: the claimed task is held (leased, renewed) and runs when a slot frees, never beyond concurrency', async () => {
    const temp = makeTempDir();
    cleanups.push(() => temp.remove());
    const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db') });
    cleanups.push(() => store.close());
    let inFlight = 0;
    let maxSeen = 0;
    const gates = new Map<string, () => void>();
    const gated = defineTool({
      name: 'gated',
      description: 'runs until its gate opens',
      execution: 'task-optional',
      inputSchema: z.object({ key: z.string() }),
      async run({ key }) {
        inFlight += 1;
        maxSeen = Math.max(maxSeen, inFlight);
        await new Promise<void>((resolve) => gates.set(key, resolve));
        inFlight -= 1;
        return textResult(key);
      },
    });
    // An API-only server will create one task that the worker claims.
    const api = await createTasksServer({ tools: [gated], store, secret: randomBytes(32), limits: LIMITS, worker: false });
    cleanups.push(() => api.close());
    const plan = (key: string) => api.service.calls.planCall(CALLER, { name: 'gated', arguments: { key }, progressToken: null });
    // The worker's first claim is held open; meanwhile a create takes its only slot through the hand-off.
    let releaseClaim!: () => void;
    const claimHeld = new Promise<void>((resolve) => (releaseClaim = resolve));
    let claims = 0;
    const held = overrideStore<typeof store>(store, {
      async claimRunnable(owner: string, leaseMs: number, limit: number) {
        claims += 1;
        if (claims === 1) await claimHeld;
        return store.claimRunnable(owner, leaseMs, limit);
      },
    });
    const server = await createTasksServer({
      tools: [gated],
      store: held,
      secret: randomBytes(32),
      limits: { ...LIMITS, concurrency: 1, leaseMs: 600 },
      instanceId: 'w',
    });
    cleanups.push(() => server.close());
    // Created by the API server while the worker has its slot free: the created event wakes a claim.
    const queued = await api.service.calls.callTool(CALLER, await plan('queued'));
    await expect.poll(() => claims).toBe(1);
    const direct = await server.service.calls.callTool(CALLER, await plan('direct'));
    expect(direct.kind === 'task' && direct.task).toMatchObject({ statusMessage: null, leaseOwner: 'w', attempt: 1 });
    releaseClaim();
    // The claim started the queued task although no slot is free: it is held, its lease renewed past several leases.
    const queuedId = queued.kind === 'task' ? queued.task.taskId : '';
    await expect.poll(async () => (await store.getUnscoped(queuedId))?.leaseOwner).toBe('w');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await store.getUnscoped(queuedId)).toMatchObject({ status: 'working', leaseOwner: 'w', attempt: 1 });
    expect(maxSeen).toBe(1);
    gates.get('direct')!();
    await expect.poll(() => gates.has('queued')).toBe(true);
    gates.get('queued')!();
    expect((await server.service.tasks.waitForTerminal(CALLER, queuedId, new AbortController().signal)).status).toBe('completed');
    expect(maxSeen).toBe(1);
  });

  it("a task cancelled between the tool's end and the write of its result: the run counts as discarded, not completed; a run whose write lands counts completed (control)", async () => {
    let cancelNext = true;
    const runs: Array<{ outcome: string; durationMs: number }> = [];
    const tool = defineTool({
      name: 'quick',
      description: 'returns at once',
      execution: 'task-optional',
      inputSchema: z.object({}),
      run: async () => textResult('done'),
    });
    // The fault: the requestor's cancel commits just before the worker's completion (no timing of real processes
    // lands a cancel there reliably).
    const { server, call, close } = await serverOnWrappedStore(
      [tool],
      (real) => ({
        transition: async (taskId: string, request: Parameters<SqliteTaskStore['transition']>[1]) => {
          if (request.to === 'completed' && cancelNext) {
            cancelNext = false;
            await real.transition(taskId, { to: 'cancelled', releaseLease: true, now: Date.now() });
          }
          return real.transition(taskId, request);
        },
      }),
      { limits: LIMITS, workerObserver: { runEnded: (run) => void runs.push(run) } },
    );
    cleanups.push(close);
    expect((await terminal(server, await call('quick'))).status).toBe('cancelled');
    await expect.poll(() => runs.length).toBe(1);
    expect(runs[0]?.outcome).toBe('discarded');
    // Control: the same run whose write lands.
    expect((await terminal(server, await call('quick'))).status).toBe('completed');
    await expect.poll(() => runs.map((run) => run.outcome)).toEqual(['discarded', 'completed']);
  });

  it("a large result whose chunks were written just before a cancel won: the chunks are deleted, not kept until the task's TTL; a completed one keeps them (control)", async () => {
    let cancelNext = true;
    const tool = defineTool({
      name: 'large',
      description: 'returns a result above maxResultBytes',
      execution: 'task-optional',
      inputSchema: z.object({}),
      run: async () => textResult('x'.repeat(200_000)),
    });
    // The fault: the requestor's cancel commits between the chunk write and the worker's completion.
    const { server, real, call, close } = await serverOnWrappedStore(
      [tool],
      (store) => ({
        transition: async (taskId: string, request: Parameters<SqliteTaskStore['transition']>[1]) => {
          if (request.to === 'completed' && cancelNext) {
            cancelNext = false;
            expect(await store.readResultChunk(taskId, 0)).toBeDefined();
            await store.transition(taskId, { to: 'cancelled', releaseLease: true, now: Date.now() });
          }
          return store.transition(taskId, request);
        },
      }),
      { limits: { ...LIMITS, maxResultBytes: 100_000 } },
    );
    cleanups.push(close);
    const cancelled = await call('large');
    expect((await terminal(server, cancelled)).status).toBe('cancelled');
    await expect.poll(() => real.readResultChunk(cancelled, 0)).toBeUndefined();
    // Control: the same result whose completion lands keeps its chunks (its result links to them).
    const completed = await call('large');
    expect((await terminal(server, completed)).status).toBe('completed');
    expect(await real.readResultChunk(completed, 0)).toBeDefined();
  });

  it.each([
    {
      what: 'a store out of space (a full disk): the task fails with result_not_stored, counted failed, and is not run again',
      error: new StoreError('fault', 'Task store failed to write: database or disk is full', {
        requestorMessage: 'Task store failed to write',
        outOfSpace: true,
      }),
      counted: 'failed',
    },
    {
      what: 'control: a fault that passes (a lock timeout): the run counts discarded, and its lease lapses for recovery, whose re-run may store it',
      error: new StoreError('fault', 'Task store failed to store result chunks: canceling statement due to lock timeout', {
        requestorMessage: 'Task store failed to store result chunks',
      }),
      counted: 'discarded',
    },
    {
      what: 'control: a store that is away (unavailable): the run counts discarded, and its lease lapses for recovery',
      error: new StoreError('unavailable', 'Task store unavailable: cannot connect (ECONNREFUSED)'),
      counted: 'discarded',
    },
  ])('a run whose large result cannot be written (the chunk write throws), $what', async ({ error, counted }) => {
    let chunkWrites = 0;
    const runs: string[] = [];
    const traced: string[] = [];
    let toolRuns = 0;
    const tool = defineTool({
      name: 'large',
      description: 'returns 200 kB',
      execution: 'task-optional',
      inputSchema: z.object({}),
      run: async () => {
        toolRuns += 1;
        return textResult('x'.repeat(200_000));
      },
    });
    const { real, call, close } = await serverOnWrappedStore(
      [tool],
      () => ({
        putResultChunks: async () => {
          chunkWrites += 1;
          throw error;
        },
      }),
      {
        limits: { ...LIMITS, maxResultBytes: 100_000 },
        workerObserver: { runEnded: (run) => void runs.push(run.outcome) },
        runTracer: { startRun: () => ({ end: (outcome: string) => void traced.push(outcome), step: () => () => {}, operation: () => () => {} }) },
      },
    );
    cleanups.push(close);
    const taskId = await call('large');
    await expect.poll(() => chunkWrites).toBeGreaterThan(0);
    await expect.poll(() => runs).toEqual([counted]);
    expect(traced).toEqual([counted]);
    expect(toolRuns).toBe(1);
    const record = await real.getUnscoped(taskId);
    if (counted === 'failed') {
      expect(record).toMatchObject({
        status: 'failed',
        statusMessage: 'Tool large ran, but its result could not be stored (Task store failed to write); it is not run again',
        leaseOwner: null,
      });
    } else expect(record).toMatchObject({ status: 'working', leaseOwner: 'test-instance' });
  });

  it('a large result whose chunks were stored but whose outcome write finds the store out of space: the task fails with result_not_stored and its chunks are deleted (stop 46)', async () => {
    let full = true;
    let chunksBeforeFault: Uint8Array | undefined;
    const tool = defineTool({
      name: 'large',
      description: 'returns 200 kB',
      execution: 'task-optional',
      inputSchema: z.object({}),
      run: async () => textResult('x'.repeat(200_000)),
    });
    const { real, server, call, close } = await serverOnWrappedStore(
      [tool],
      (store) => ({
        transition: async (taskId: string, request: Parameters<SqliteTaskStore['transition']>[1]) => {
          // The outcome's write (a bounded result linking to its chunks) meets a full disk; the smaller failure fits.
          if (full && request.outcome?.kind === 'result') {
            full = false;
            chunksBeforeFault = await store.readResultChunk(taskId, 0);
            throw new StoreError('fault', 'Task store failed to commit: database or disk is full', {
              requestorMessage: 'Task store failed to commit',
              outOfSpace: true,
            });
          }
          return store.transition(taskId, request);
        },
      }),
      { limits: { ...LIMITS, maxResultBytes: 100_000 } },
    );
    cleanups.push(close);
    const taskId = await call('large');
    expect(await terminal(server, taskId)).toMatchObject({ status: 'failed' });
    expect(JSON.stringify(await real.getOutcome(taskId))).toContain('result_not_stored');
    // The control: the chunks were there when the outcome's write failed.
    expect(chunksBeforeFault).toBeDefined();
    await expect.poll(() => real.readResultChunk(taskId, 0)).toBeUndefined();
  });

  it.each([
    { what: 'a park of this run that landed meanwhile (no owner): the run is told it is over, not counted lease_lost', owner: null, counted: [] },
    { what: 'control: another process took the task over: the run is aborted as lease_lost', owner: 'other-process', counted: ['aborted_lease_lost'] },
  ])('a step refused by the store (not_held) is judged from the task row (review of the journal fence): $what', async ({ owner, counted }) => {
    const runs: string[] = [];
    const told: string[] = [];
    const tool = defineTool({
      name: 'steps',
      description: 'one journaled step',
      execution: 'task-optional',
      journaled: true,
      inputSchema: z.object({}),
      run: async (_args, ctx) => {
        await ctx.step('s', () => 1).catch((error: Error) => told.push(error.message));
        return textResult('done');
      },
    });
    const { real, call, close } = await serverOnWrappedStore(
      [tool],
      (store) => ({
        // The row changes between the run's start and its lookup: parked (no owner), or taken over by another owner.
        lookupStep: async (taskId: string, name: string, leaseOwner: string) => {
          if (owner === null) await store.transition(taskId, { to: 'input_required', releaseLease: true, now: Date.now() });
          else await real.renewLeases(leaseOwner, [taskId], 0).then(() => store.startAttempt(taskId, owner, 60_000));
          return store.lookupStep(taskId, name, leaseOwner);
        },
      }),
      { limits: LIMITS, workerObserver: { runEnded: (run) => void runs.push(run.outcome) } },
    );
    cleanups.push(close);
    await call('steps');
    await expect.poll(() => told).toHaveLength(1);
    await expect.poll(() => runs).toHaveLength(1);
    if (counted.length > 0) expect(runs).toEqual(counted);
    else expect(runs).not.toContain('aborted_lease_lost');
    expect(told[0]).toMatch(owner === null ? /^This run is over/ : /^This run no longer holds its task/);
  });

  it('a result that does not fit, of a task cancelled meanwhile: the run counts discarded (not failed) and the task stays cancelled', async () => {
    const runs: string[] = [];
    const tool = defineTool({
      name: 'large',
      description: 'returns 200 kB',
      execution: 'task-optional',
      inputSchema: z.object({}),
      run: async () => textResult('x'.repeat(200_000)),
    });
    const { real, call, close } = await serverOnWrappedStore(
      [tool],
      (store) => ({
        putResultChunks: async (taskId: string) => {
          // The requestor's cancel lands while the chunks are written; then the disk turns out to be full.
          await store.transition(taskId, { to: 'cancelled', from: ['working'], releaseLease: true, now: Date.now() });
          throw new StoreError('fault', 'Task store failed to commit: database or disk is full', {
            requestorMessage: 'Task store failed to commit',
            outOfSpace: true,
          });
        },
      }),
      { limits: { ...LIMITS, maxResultBytes: 100_000 }, workerObserver: { runEnded: (run) => void runs.push(run.outcome) } },
    );
    cleanups.push(close);
    const taskId = await call('large');
    await expect.poll(() => runs).toEqual(['discarded']);
    expect(await real.getUnscoped(taskId)).toMatchObject({ status: 'cancelled' });
  });

  it('an API-only server (worker: false) never holds a lease: its tasks wait unleased until a worker claims them', async () => {
    const { store, api, tool } = await apiOnlyOnSqlite(cleanups, LIMITS);
    expect(api.worker).toBeUndefined();
    const outcome = await api.service.calls.callTool(CALLER, await api.service.calls.planCall(CALLER, { name: 'noop', progressToken: null }));
    if (outcome.kind !== 'task') throw new Error('no task');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await store.getUnscoped(outcome.task.taskId)).toMatchObject({ status: 'working', statusMessage: 'queued', leaseOwner: null, attempt: 0 });

    const { createTaskWorker } = await import('../../src/execution/create-task-worker.js');
    const worker = await createTaskWorker({ store, tools: [tool], limits: LIMITS, instanceId: 'worker-1' });
    cleanups.push(() => worker.close());
    const done = await api.service.tasks.waitForTerminal(CALLER, outcome.task.taskId, new AbortController().signal);
    expect(done).toMatchObject({ status: 'completed', leaseOwner: null, attempt: 1 });
  });

  describe('hints that arrive while a claim is in flight (issue 25: no empty re-claims, no lost task)', () => {
    /**
     * An API-only server and a separate worker on one SQLite file; the worker's first claim is held open. `order`
     * says whether the held claim's statement runs after the release (so it sees a task created meanwhile) or
     * before the hold (so it cannot). Returns the rows each claim returned.
     */
    async function heldClaim(order: 'statement after the hold' | 'statement before the hold') {
      const { store, api, tool } = await apiOnlyOnSqlite(cleanups, LIMITS);
      let releaseClaim!: () => void;
      const claimHeld = new Promise<void>((resolve) => (releaseClaim = resolve));
      const returned: number[] = [];
      let asked = 0;
      const held = overrideStore<typeof store>(store, {
        async claimRunnable(owner: string, leaseMs: number, limit: number) {
          const nth = ++asked;
          const claim = () => store.claimRunnable(owner, leaseMs, limit);
          let records = nth > 1 || order === 'statement before the hold' ? await claim() : [];
          if (nth === 1) {
            await claimHeld;
            if (order === 'statement after the hold') records = await claim();
          }
          returned.push(records.length);
          return records;
        },
      });
      const { createTaskWorker } = await import('../../src/execution/create-task-worker.js');
      const worker = await createTaskWorker({ store: held, tools: [tool], limits: { ...LIMITS, concurrency: 4 }, instanceId: 'worker-1' });
      cleanups.push(() => worker.close());
      await expect.poll(() => asked).toBe(1);
      // Created while the claim is out: its `created` event reaches the worker before the claim answers.
      const seen = new Promise<void>((resolve) => store.onEvent((event) => event.kind === 'created' && resolve()));
      const outcome = await api.service.calls.callTool(CALLER, await api.service.calls.planCall(CALLER, { name: 'noop', progressToken: null }));
      if (outcome.kind !== 'task') throw new Error('no task');
      await seen;
      await new Promise((resolve) => setTimeout(resolve, 20));
      releaseClaim();
      // No poll fallback here (claimIntervalMs 60 s): only the hint can get the task claimed.
      const done = await api.service.tasks.waitForTerminal(CALLER, outcome.task.taskId, AbortSignal.timeout(10_000));
      expect(done).toMatchObject({ status: 'completed', attempt: 1 });
      await new Promise((resolve) => setTimeout(resolve, 200));
      return returned;
    }

    it('the claim took the hinted task: no second claim follows (it would come back empty)', async () => {
      expect(await heldClaim('statement after the hold')).toEqual([1]);
    });

    it('negative control: the claim could not see the hinted task, so a second claim follows and takes it', async () => {
      expect(await heldClaim('statement before the hold')).toEqual([0, 1]);
    });
  });
});
