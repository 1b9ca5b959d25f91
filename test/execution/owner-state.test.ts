/**
 * `ctx.ownerState` through the task service, the embedded worker and each real store (a SQLite file, a PostgreSQL server): a tool keeps
 * a document per owner between calls, task runs and inline runs alike, and no owner sees another's (issue 17:
 * check_infrastructure's snapshot is per-owner state kept by the server, never a file).
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';

import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { MAX_TOOL_STATE_BYTES, type TaskStore } from '../../src/core/store.js';
import { StoreError } from '../../src/core/store-error.js';
import type { JsonObject } from '../../src/core/task.js';
import { type AnyToolDefinition, defineTool, textResult } from '../../src/core/tool.js';
import { createTasksServer } from '../../src/server/create-tasks-server.js';
import type { Caller } from '../../src/service/caller.js';
import type { CallInteraction } from '../../src/service/calls/call-service.js';
import type { TaskServices } from '../../src/service/services.js';
import { openPostgresTaskStore } from '../../src/store/postgres/index.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { checkInfrastructureTool } from '../../src/tools/check-infrastructure/tool.js';
import { createTestDatabase, emptyTaskStore, type TestDatabase } from '../helpers/postgres.js';
import { QUIET_LIMITS } from '../helpers/quiet-limits.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const LIMITS = QUIET_LIMITS;

/** A 2026-07-28 caller (every call a task) and a 2025-11-25 one calling without `task` (inline). */
const taskCaller = (ownerKey: string): Caller => ({
  ownerKey,
  scopes: 'all',
  negotiation: 'per-request',
  generation: 'v2',
  protocolVersion: '2026-07-28',
  clientCapabilities: {},
});
const inlineCaller = (ownerKey: string): Caller => ({
  ownerKey,
  scopes: 'all',
  negotiation: 'per-session',
  generation: 'v1',
  protocolVersion: '2025-11-25',
  clientCapabilities: {},
});

/** Answers what it kept last time for this owner, then keeps `value`. */
const remember = defineTool({
  name: 'remember',
  description: 'keeps a value per owner',
  execution: 'task-optional',
  idempotent: true,
  inputSchema: z.object({ value: z.string() }),
  async run(args, ctx) {
    const previous = await ctx.ownerState.get('last');
    await ctx.ownerState.put('last', { value: args.value });
    return textResult(JSON.stringify(previous ?? null));
  },
});

/** Tries to keep a document over the bound. */
const hoard = defineTool({
  name: 'hoard',
  description: 'keeps too much',
  execution: 'task-optional',
  inputSchema: z.object({}),
  async run(_args, ctx) {
    try {
      await ctx.ownerState.put('all', 'x'.repeat(MAX_TOOL_STATE_BYTES + 1));
      return textResult('kept');
    } catch (error) {
      return textResult(error instanceof StoreError ? `refused: ${error.code}` : 'other error');
    }
  },
});

/** Opens a fresh store of each kind; PostgreSQL from `npm run pg:start` (or MCP_TASKS_TEST_PG_URL), failing without one. */
let database: TestDatabase | undefined;
const STORES: [string, (dir: string) => Promise<TaskStore>][] = [
  ['SQLite', async (dir) => openSqliteTaskStore({ path: join(dir, 'tasks.db') })],
  [
    'PostgreSQL',
    async () => {
      database ??= await createTestDatabase();
      await emptyTaskStore(database.url);
      return openPostgresTaskStore({ url: database.url });
    },
  ],
];
afterAll(async () => {
  await database?.drop();
});

describe.each(STORES)('ctx.ownerState (task service + worker + %s store)', (_name, open) => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** A server (service + embedded worker) over a fresh store with `tools`, roots at a temp dir; all closed after the test. */
  async function start(tools: AnyToolDefinition[]) {
    const temp = makeTempDir();
    const store = await open(temp.dir);
    const server = await createTasksServer({ tools, store, secret: randomBytes(32), limits: LIMITS, roots: [temp.dir], instanceId: 'test-instance' });
    cleanups.push(
      () => temp.remove(),
      () => store.close(),
      () => server.close(),
    );
    return { service: server.service, store, dir: temp.dir };
  }

  const signal = new AbortController().signal;
  /** Runs `tool` inline for `ownerKey` and returns its result. */
  async function inlineRun(service: TaskServices, tool: AnyToolDefinition, ownerKey: string, args: JsonObject) {
    const caller = inlineCaller(ownerKey);
    // An inline run that never asks: its phase runs once and is done.
    const interaction: CallInteraction = { signal, withInput: async (_prefix, phase) => ({ done: await phase(async () => ({ parked: true })) }) };
    const outcome = await service.calls.callTool(caller, await service.calls.planCall(caller, { name: tool.name, arguments: args, progressToken: null }), {
      interaction,
    });
    if (outcome.kind !== 'result') throw new Error(`not an inline result: ${JSON.stringify(outcome)}`);
    return outcome.result as { content: { text: string }[] };
  }
  /** Runs `tool` as a task of `ownerKey` and returns its result. */
  async function asTask(service: TaskServices, store: TaskStore, tool: AnyToolDefinition, ownerKey: string, args: JsonObject) {
    const caller = taskCaller(ownerKey);
    const created = await service.calls.callTool(caller, await service.calls.planCall(caller, { name: tool.name, arguments: args, progressToken: null }));
    if (created.kind !== 'task') throw new Error(`no task: ${JSON.stringify(created)}`);
    await service.tasks.waitForTerminal({ ...caller, generation: 'v2' }, created.task.taskId, signal);
    const outcome = await store.getOutcome(created.task.taskId);
    if (outcome?.kind !== 'result') throw new Error(`task ended without a result: ${JSON.stringify(outcome)}`);
    return outcome.result as { content: { text: string }[]; structuredContent?: Record<string, unknown> };
  }

  it('keeps a document per owner and tool across task and inline runs, apart from other owners', async () => {
    const { service, store } = await start([remember, hoard]);
    const inline = (ownerKey: string, value: string) => inlineRun(service, remember, ownerKey, { value });
    const remembered = async (ownerKey: string, value: string) => (await asTask(service, store, remember, ownerKey, { value })).content[0]?.text ?? '';
    expect((await inline('alice', 'one')).content[0]?.text).toBe('null');
    expect(await remembered('alice', 'two')).toBe('{"value":"one"}');
    expect((await inline('alice', 'three')).content[0]?.text).toBe('{"value":"two"}');
    // Bob has his own state; Alice's is untouched by him.
    expect(await remembered('bob', 'b1')).toBe('null');
    expect((await inline('alice', 'four')).content[0]?.text).toBe('{"value":"three"}');
    expect(await store.getToolState('alice', 'remember', 'last')).toEqual({ value: 'four' });
    expect(await store.getToolState('bob', 'remember', 'last')).toEqual({ value: 'b1' });
    // Namespaced by tool: another tool of the same owner sees nothing of it.
    expect(await store.getToolState('alice', 'hoard', 'last')).toBeUndefined();
    const refused = await inlineRun(service, hoard, 'alice', {});
    expect(refused.content[0]?.text).toBe('refused: invalid');
  });

  it("keeps check_infrastructure's snapshot in the store: a second run of an owner sees the changed file, another owner has none", async () => {
    const tool = checkInfrastructureTool(['127.0.0.1']);
    const { service, store, dir } = await start([tool]);
    const port = await new Promise<number>((resolve) => {
      const server: Server = createServer((socket) => socket.end()).listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
      cleanups.push(() => new Promise<void>((done) => server.close(() => done())));
    });
    const file = join(dir, 'app.conf');
    writeFileSync(file, 'workers = 4\n');
    const args = { targets: [file, { tcp: `127.0.0.1:${port}` }] };
    type Report = { results: { status: string; file?: { changed: boolean | null; diff: string | null } }[]; baseline: { previousRunAt: string | null } };
    const report = async (ownerKey: string) => (await asTask(service, store, tool, ownerKey, args)).structuredContent as unknown as Report;

    const first = await report('alice');
    expect(first.baseline.previousRunAt).toBeNull();
    expect(first.results.map((r) => r.status)).toEqual(['ok', 'ok']);
    expect(await store.getToolState('alice', 'check_infrastructure', 'baseline:default')).toBeDefined();
    writeFileSync(file, 'workers = 8\n');
    const second = await report('alice');
    expect(second.baseline.previousRunAt).not.toBeNull();
    expect(second.results[0]).toMatchObject({ status: 'changed', file: { changed: true } });
    expect(second.results[0]?.file?.diff).toContain('+workers = 8');
    // Bob's first run compares with nothing: Alice's snapshot is hers.
    const bob = await report('bob');
    expect(bob.baseline.previousRunAt).toBeNull();
    expect(bob.results[0]?.file?.changed).toBeNull();
  });
});
