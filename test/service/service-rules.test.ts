import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { TasksError } from '../../src/core/errors.js';
import { TaskEventFeed } from '../../src/core/event-feed.js';
import { resolveLimits, type TasksServerLimits } from '../../src/core/limits.js';
import { silentLogger } from '../../src/core/logger.js';
import { ScopePolicy } from '../../src/core/scopes.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { ToolRegistry } from '../../src/core/tool-registry.js';
import { InProcessExecutor } from '../../src/execution/in-process-executor.js';
import { Scope, TASK_SCOPES } from '../../src/protocol/scopes.js';
import type { Caller, TaskCaller } from '../../src/service/caller.js';
import type { TaskModeGate } from '../../src/service/calls/task-mode-gate.js';
import type { TaskServiceHook } from '../../src/service/hooks.js';
import { ScopeCheck } from '../../src/service/scope-check.js';
import { createTaskServices, type TaskServices } from '../../src/service/services.js';
import { openSqliteTaskStore, type SqliteTaskStore } from '../../src/store/sqlite/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { QUIET_LIMITS } from '../helpers/quiet-limits.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * The task service's rules without HTTP (issue 24 §2): the three doors built by `createTaskServices` over a real
 * SQLite file and a fake clock, no worker (tasks wait, unleased, as on an API-only instance), no adapter. Each rule
 * has a negative control: the same call that must succeed, or the guard taken away.
 */

const ALICE = 'https://issuer.test|alice|acme';
const BOB = 'https://issuer.test|bob|acme';
const ALL_SCOPES = [...TASK_SCOPES, 'logs:read'];

function caller(ownerKey: string, generation: 'v1' | 'v2' = 'v2', scopes: readonly string[] | 'all' = ALL_SCOPES): TaskCaller {
  return generation === 'v2'
    ? { ownerKey, scopes, negotiation: 'per-request', generation, protocolVersion: '2026-07-28', clientCapabilities: {} }
    : { ownerKey, scopes, negotiation: 'per-session', generation, protocolVersion: '2025-11-25', clientCapabilities: { tasks: {} } };
}

/** A task tool that waits for an external event (never runs here: no worker), and a sync one. */
const TOOLS = [
  defineTool({
    name: 'analyze',
    description: 'a long task',
    execution: 'task-optional',
    inputSchema: z.object({ path: z.string().optional() }),
    run: async () => textResult('done'),
  }),
  defineTool({
    name: 'echo',
    description: 'inline',
    execution: 'sync',
    inputSchema: z.object({ text: z.string() }),
    run: async (args) => textResult(args.text),
  }),
];

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Built {
  services: TaskServices;
  store: SqliteTaskStore;
  clock: FakeClock;
}

function build(options: { limits?: Partial<TasksServerLimits>; hooks?: TaskServiceHook[]; gate?: TaskModeGate; scopes?: ScopePolicy } = {}): Built {
  const temp = makeTempDir();
  const clock = new FakeClock(1_700_000_000_000);
  const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db'), clock });
  const tools = new ToolRegistry(TOOLS);
  const executor = new InProcessExecutor(tools);
  const feed = new TaskEventFeed(store, silentLogger);
  const hooks = options.hooks ?? [new ScopeCheck(options.scopes ?? new ScopePolicy(new Map([['analyze', ['logs:read']]])), silentLogger)];
  const services = createTaskServices({
    store,
    tools,
    feed,
    executor,
    limits: resolveLimits({ ...QUIET_LIMITS, ...options.limits }),
    confinement: { roots: [], deniedPaths: [] },
    clock,
    logger: silentLogger,
    secret: randomBytes(32),
    hooks,
    ...(options.gate ? { gate: options.gate } : {}),
  });
  cleanups.push(
    () => temp.remove(),
    () => store.close(),
    () => executor.close(),
  );
  return { services, store, clock };
}

async function createTask(services: TaskServices, as: Caller, args: Record<string, unknown> = {}, idempotencyKey?: string) {
  // A 2025-11-25 call asks for a task with `params.task` (R8); a 2026-07-28 one with the extension always gets one.
  const task = as.generation === 'v1' ? { task: {} } : {};
  const plan = await services.calls.planCall(as, {
    name: 'analyze',
    arguments: args,
    progressToken: null,
    ...task,
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
  });
  const outcome = await services.calls.callTool(as, plan);
  if (outcome.kind !== 'task') throw new Error(`no task: ${outcome.kind}`);
  return outcome.task;
}

/** The wire form of what `promise` threw (code, message, data), so two refusals can be compared exactly. */
async function refusalOf(promise: Promise<unknown>): Promise<{ code: number; message: string; data?: unknown }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TasksError) return error.toJsonRpc() as { code: number; message: string; data?: unknown };
    throw error;
  }
  throw new Error('expected a refusal, the operation succeeded');
}

describe('task service rules without HTTP', () => {
  it('R45 R49 E39 E45 C-SEC-02/03: a foreign or other-generation task is refused exactly like an unknown id by every tasks/* operation, and left untouched', async () => {
    const { services, store } = build();
    const task = await createTask(services, caller(ALICE));
    const unknown = await refusalOf(services.tasks.get(caller(BOB), 'f'.repeat(32)));
    expect(unknown).toMatchObject({ code: -32602 });
    const signal = new AbortController().signal;
    for (const as of [caller(BOB), caller(ALICE, 'v1')]) {
      expect(await refusalOf(services.tasks.get(as, task.taskId))).toEqual(unknown);
      expect(await refusalOf(services.tasks.poll(as, task.taskId, signal, { details: true }))).toEqual(unknown);
      expect(await refusalOf(services.tasks.cancel(as, task.taskId))).toEqual(unknown);
      expect(await refusalOf(services.tasks.answerInput(as, task.taskId, { 'input-1': { action: 'accept', content: {} } }))).toEqual(unknown);
      expect(await refusalOf(services.tasks.details(as, task))).toEqual(unknown);
      expect((await services.tasks.subscribe(as, [task.taskId], () => {})).taskIds).toEqual([]);
    }
    expect((await services.tasks.list(caller(BOB), undefined)).tasks).toEqual([]);
    expect((await store.getUnscoped(task.taskId))?.status).toBe('working');
    // Negative control: the owner, in the task's generation, reads, lists and subscribes.
    expect((await services.tasks.poll(caller(ALICE), task.taskId, signal)).task.taskId).toBe(task.taskId);
    expect((await services.tasks.list(caller(ALICE), undefined)).tasks.map((record) => record.taskId)).toEqual([task.taskId]);
    expect((await services.tasks.subscribe(caller(ALICE), [task.taskId], () => {})).taskIds).toEqual([task.taskId]);
  });

  it('C-SEC-02 (issue 10 §1): a credential without tasks:read / tasks:cancel / the tool scope gets the unknown-task answer; without the ScopeCheck hook the same calls go through', async () => {
    const guarded = build();
    const task = await createTask(guarded.services, caller(ALICE));
    const unknown = await refusalOf(guarded.services.tasks.get(caller(ALICE), 'f'.repeat(32)));
    const without = (scope: string) =>
      caller(
        ALICE,
        'v2',
        ALL_SCOPES.filter((granted) => granted !== scope),
      );
    expect(await refusalOf(guarded.services.tasks.get(without(Scope.TasksRead), task.taskId))).toEqual(unknown);
    expect(await refusalOf(guarded.services.tasks.get(without('logs:read'), task.taskId))).toEqual(unknown);
    expect(await refusalOf(guarded.services.tasks.cancel(without(Scope.TasksCancel), task.taskId))).toEqual(unknown);
    expect(await refusalOf(guarded.services.tasks.list(without(Scope.TasksRead), undefined))).toMatchObject({
      code: -32602,
      data: { reason: 'insufficient_scope', requiredScopes: [Scope.TasksRead] },
    });
    // tools/call of a tool needs its scope: refused, nothing created.
    const plan = await guarded.services.calls.planCall(without('logs:read'), { name: 'analyze', arguments: {}, progressToken: null });
    expect(await refusalOf(guarded.services.calls.callTool(without('logs:read'), plan))).toMatchObject({
      code: -32602,
      data: { requiredScopes: ['logs:read'] },
    });
    expect(await guarded.store.list({ ownerKey: ALICE, generation: 'v2' }, { afterSeq: 0, limit: 10 })).toHaveLength(1);
    expect((await guarded.store.getUnscoped(task.taskId))?.status).toBe('working');

    // Negative control: the same service without the hook lets every one of them through.
    const open = build({ hooks: [] });
    const other = await createTask(open.services, without('logs:read'));
    expect((await open.services.tasks.get(without(Scope.TasksRead), other.taskId)).taskId).toBe(other.taskId);
    expect((await open.services.tasks.cancel(without(Scope.TasksCancel), other.taskId)).cancelled).toBe(true);
  });

  it('C-SEC-02 (issue 16): a viewer sees its own tasks of both generations, another owner’s only with admin:read; an unseen task answers like an unknown id', async () => {
    const { services } = build();
    const v1 = await createTask(services, caller(ALICE, 'v1'));
    const v2 = await createTask(services, caller(ALICE));
    const alice = { ownerKey: ALICE, scopes: [Scope.TasksRead] };
    const bob = { ownerKey: BOB, scopes: [Scope.TasksRead, Scope.TasksCancel] };
    const admin = { ownerKey: BOB, scopes: [Scope.AdminRead] };
    expect((await services.viewer.browse(alice, { limit: 10 })).tasks.map((task) => task.taskId).sort()).toEqual([v1.taskId, v2.taskId].sort());
    expect((await services.viewer.browse(bob, { limit: 10 })).tasks).toEqual([]);
    const unknown = await refusalOf(services.viewer.inspect(bob, 'f'.repeat(32)));
    expect(await refusalOf(services.viewer.inspect(bob, v2.taskId))).toEqual(unknown);
    expect(await refusalOf(services.viewer.cancel(bob, v2.taskId))).toEqual(unknown);
    // Negative control: admin:read sees the other owner's tasks, read-only.
    expect((await services.viewer.browse(admin, { limit: 10 })).tasks).toHaveLength(2);
    const inspected = await services.viewer.inspect(admin, v2.taskId);
    expect(inspected.permissions).toEqual({ cancel: false, answer: false });
    expect(await refusalOf(services.viewer.cancel(admin, v2.taskId))).toMatchObject({ code: -32600 });
  });

  it('C-SEC-09 idempotency: the same key and arguments answer the same task, other arguments or another tool are -32602, another owner’s key is its own', async () => {
    const { services, store } = build();
    const first = await createTask(services, caller(ALICE), { path: 'a' }, 'key-1');
    expect((await createTask(services, caller(ALICE), { path: 'a' }, 'key-1')).taskId).toBe(first.taskId);
    const conflict = await refusalOf(createTask(services, caller(ALICE), { path: 'b' }, 'key-1'));
    expect(conflict).toMatchObject({ code: -32602 });
    expect(conflict.message).toContain('different arguments');
    const plan = await services.calls.planCall(caller(ALICE), { name: 'echo', arguments: { text: 'x' }, progressToken: null, idempotencyKey: 'key-1' });
    expect((await refusalOf(services.calls.callTool(caller(ALICE), plan))).message).toContain('tool analyze, not echo');
    expect(await store.list({ ownerKey: ALICE, generation: 'v2' }, { afterSeq: 0, limit: 10 })).toHaveLength(1);
    // Negative controls: another owner with the same key gets its own task; without a key every call is a new task.
    expect((await createTask(services, caller(BOB), { path: 'a' }, 'key-1')).taskId).not.toBe(first.taskId);
    expect((await createTask(services, caller(ALICE), { path: 'a' })).taskId).not.toBe(first.taskId);
  });

  it('C-SEC-09 R52 quotas: the active-task quota refuses with -31001 active_tasks and writes nothing; another owner and a freed slot are admitted', async () => {
    const { services, store } = build({ limits: { maxActiveTasksPerOwner: 1 } });
    const first = await createTask(services, caller(ALICE));
    expect(await refusalOf(createTask(services, caller(ALICE)))).toMatchObject({ code: -31001, data: { reason: 'active_tasks', limit: 1 } });
    expect(await store.list({ ownerKey: ALICE, generation: 'v2' }, { afterSeq: 0, limit: 10 })).toHaveLength(1);
    // Negative controls: the quota is per owner, and a terminal task frees its slot.
    await createTask(services, caller(BOB));
    await services.tasks.cancel(caller(ALICE), first.taskId);
    await createTask(services, caller(ALICE));
  });

  it('C-SEC-09 R52 quotas: the create-rate quota refuses with -31001 create_rate within its minute and admits again after it (fake clock)', async () => {
    const { services, clock } = build({ limits: { maxCreatesPerMinute: 2 } });
    await createTask(services, caller(ALICE));
    await createTask(services, caller(ALICE));
    const refused = await refusalOf(createTask(services, caller(ALICE)));
    expect(refused).toMatchObject({ code: -31001, data: { reason: 'create_rate', limit: 2 } });
    expect((refused.data as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(0);
    clock.advance(60_001);
    await createTask(services, caller(ALICE));
  });

  it('kill switch (issue 15): a refused task mode answers -31003 with its reason and creates nothing; tools/list shows the tool as sync; an open gate lets the same call create a task', async () => {
    let allow = false;
    const gate: TaskModeGate = {
      verdict: () =>
        allow ? { allow: true, cohort: undefined } : { allow: false, fallback: 'reject', reason: 'kill_switch', cohort: undefined, maxSyncMs: 0 },
    };
    const { services, store } = build({ gate });
    expect(await refusalOf(createTask(services, caller(ALICE)))).toMatchObject({ code: -31003, data: { reason: 'kill_switch' } });
    expect(await store.list({ ownerKey: ALICE, generation: 'v2' }, { afterSeq: 0, limit: 10 })).toHaveLength(0);
    expect((await services.calls.listTools(caller(ALICE, 'v1'))).find((tool) => tool.name === 'analyze')?.execution).toBe('sync');
    // Negative control: the gate is what refused.
    allow = true;
    await createTask(services, caller(ALICE));
    expect((await services.calls.listTools(caller(ALICE, 'v1'))).find((tool) => tool.name === 'analyze')?.execution).toBe('task-optional');
  });

  it('R18 R19 R20 C-V2-23 TTL: a task is visible until createdAt + ttl and answers like an unknown id from then on, before any sweep (fake clock)', async () => {
    const { services, clock } = build({ limits: { defaultTtlMs: 10_000, maxTtlMs: 10_000, runtimeLimitMs: 5_000, minResultRetentionMs: 0 } });
    const task = await createTask(services, caller(ALICE));
    expect(task.ttlMs).toBe(10_000);
    clock.advance(9_999);
    // Negative control: one millisecond before its expiry the task is there.
    expect((await services.tasks.get(caller(ALICE), task.taskId)).taskId).toBe(task.taskId);
    expect((await services.tasks.list(caller(ALICE), undefined)).tasks).toHaveLength(1);
    clock.advance(1);
    const unknown = await refusalOf(services.tasks.get(caller(ALICE), 'f'.repeat(32)));
    expect(await refusalOf(services.tasks.get(caller(ALICE), task.taskId))).toEqual(unknown);
    expect(await refusalOf(services.tasks.cancel(caller(ALICE), task.taskId))).toEqual(unknown);
    expect((await services.tasks.list(caller(ALICE), undefined)).tasks).toEqual([]);
  });

  it('R21 E11 issue 27 §6 poll hint: a client honouring the tasks/get hint over a fake hour polls ~150 times, each gap within max(1 s, 10 % of the age) and ≤ 30 s (fake clock)', async () => {
    const { services, clock } = build({ limits: { defaultTtlMs: 7_200_000, maxTtlMs: 7_200_000, pollIntervalMs: 1000 } });
    for (const generation of ['v1', 'v2'] as const) {
      const as = caller(ALICE, generation);
      const task = await createTask(services, as);
      const createdAt = clock.now();
      let hint = task.pollIntervalMs;
      let polls = 0;
      let longest = 0;
      while (clock.now() + hint <= createdAt + 3_600_000) {
        clock.advance(hint);
        const answered = (await services.tasks.poll(as, task.taskId, new AbortController().signal)).task;
        polls += 1;
        const age = clock.now() - createdAt;
        expect(answered.status).toBe('working');
        expect(answered.pollIntervalMs, `${generation} age ${age}`).toBeLessThanOrEqual(Math.max(1000, Math.ceil(0.1 * age)));
        hint = answered.pollIntervalMs;
        longest = Math.max(longest, hint);
      }
      // With a hint that stopped at 1 s (before issue 27) this client polled 3,600 times in the hour.
      expect(polls, generation).toBeGreaterThan(100);
      expect(polls, generation).toBeLessThan(200);
      expect(longest, generation).toBe(30_000);
    }
  });

  it('R40 R41 R42 E30 state transitions: cancel writes cancelled before it answers; a second cancel finds it terminal (cancelled: false, unchanged), which the v1 adapter answers -32602 and v2 acknowledges', async () => {
    const { services, store } = build();
    const task = await createTask(services, caller(ALICE));
    const first = await services.tasks.cancel(caller(ALICE), task.taskId);
    expect(first).toMatchObject({ cancelled: true, task: { status: 'cancelled' } });
    expect((await store.getUnscoped(task.taskId))?.status).toBe('cancelled');
    const again = await services.tasks.cancel(caller(ALICE), task.taskId);
    expect(again).toMatchObject({ cancelled: false, task: { status: 'cancelled' } });
    // R42: cancelled sticks — a late outcome of the tool is not written over it.
    expect(
      await store.transition(task.taskId, { to: 'completed', outcome: { kind: 'result', result: { content: [] } }, releaseLease: true, now: Date.now() }),
    ).toBeUndefined();
    expect((await services.tasks.get(caller(ALICE), task.taskId)).status).toBe('cancelled');
    // Answers to a task that does not wait for input change nothing (E27).
    expect(await services.tasks.answerInput(caller(ALICE), task.taskId, { 'input-1': { action: 'accept', content: {} } })).toEqual([]);
    // Negative control: a live task's cancel reports `cancelled: true` (the flag the adapters map from).
    const live = await createTask(services, caller(ALICE));
    expect((await services.tasks.cancel(caller(ALICE), live.taskId)).cancelled).toBe(true);
  });

  it('R37 R39 one paging rule: tasks/list pages through every task once with an opaque cursor bound to its owner', async () => {
    const { services } = build({ limits: { listPageSize: 2 } });
    const created = [];
    for (let i = 0; i < 5; i += 1) created.push((await createTask(services, caller(ALICE))).taskId);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await services.tasks.list(caller(ALICE), cursor);
      seen.push(...page.tasks.map((task) => task.taskId));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor !== undefined && pages < 10);
    expect(seen).toEqual(created);
    expect(pages).toBe(3);
    // A cursor of Alice's is no cursor for Bob (-32602),.
    const first = await services.tasks.list(caller(ALICE), undefined);
    expect(await refusalOf(services.tasks.list(caller(BOB), first.nextCursor))).toMatchObject({ code: -32602, message: 'Invalid cursor' });
  });
});
