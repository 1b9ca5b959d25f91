/**
 * `ctx.ownerState` through the real runtime and a real SQLite store: a tool keeps a document per owner between
 * calls, task runs and inline runs alike, and no owner sees another's (issue 17: check_infrastructure's snapshot is
 * per-owner state kept by the server, never a file).
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import { StoreError } from '../../src/core/store-error.js';
import { MAX_TOOL_STATE_BYTES } from '../../src/core/store.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { TaskRuntime, type RuntimeSettings } from '../../src/runtime/task-runtime.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
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

describe('ctx.ownerState (runtime + SQLite store)', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('keeps a document per owner and tool across task and inline runs, apart from other owners', async () => {
    const temp = makeTempDir();
    const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db') });
    const runtime = new TaskRuntime(store, [remember, hoard], SETTINGS, systemClock, silentLogger);
    await runtime.start();
    cleanups.push(() => temp.remove(), () => store.close(), () => runtime.close());
    const signal = new AbortController().signal;
    const inline = async (ownerKey: string, value: string) =>
      (await runtime.runInline(remember, { value }, signal, silentLogger, undefined, undefined, ownerKey)) as { content: { text: string }[] };
    const asTask = async (ownerKey: string, value: string) => {
      const record = await runtime.createTask({
        tool: remember, ownerKey, generation: 'v2', protocolVersion: '2026-07-28', arguments: { value }, clientCapabilities: {},
        progressToken: null, ttlMs: 60_000, pollIntervalMs: 1000,
      });
      await runtime.waitForTerminal(record.taskId, { ownerKey, generation: 'v2' }, signal);
      const outcome = await store.getOutcome(record.taskId);
      return outcome?.kind === 'result' ? ((outcome.result as { content: { text: string }[] }).content[0]?.text ?? '') : '';
    };
    expect((await inline('alice', 'one')).content[0]?.text).toBe('null');
    expect(await asTask('alice', 'two')).toBe('{"value":"one"}');
    expect((await inline('alice', 'three')).content[0]?.text).toBe('{"value":"two"}');
    // Bob has his own state; Alice's is untouched by him.
    expect(await asTask('bob', 'b1')).toBe('null');
    expect((await inline('alice', 'four')).content[0]?.text).toBe('{"value":"three"}');
    expect(await store.getToolState('alice', 'remember', 'last')).toEqual({ value: 'four' });
    expect(await store.getToolState('bob', 'remember', 'last')).toEqual({ value: 'b1' });
    // Namespaced by tool: another tool of the same owner sees nothing of it.
    expect(await store.getToolState('alice', 'hoard', 'last')).toBeUndefined();
    const refused = (await runtime.runInline(hoard, {}, signal, silentLogger, undefined, undefined, 'alice')) as { content: { text: string }[] };
    expect(refused.content[0]?.text).toBe('refused: invalid');
  });
});
