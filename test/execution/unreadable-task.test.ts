/**
 * A task no worker of this configuration can decode (its arguments encrypted with a key the process is not configured
 * with — dropped from `MCP_TASKS_ENCRYPTION_KEYS_OLD` too early) must not stop the worker: it fails with
 * `data.reason: "task_unreadable"` without its tool running, and the tasks queued behind it run (issue 25's notes,
 * stop 40: before, the claim of such a row failed and the same row came first again at every claim).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { Sweeper } from '../../src/execution/sweeper.js';
import { createTasksServer } from '../../src/server/create-tasks-server.js';
import { AesGcmFieldCipher } from '../../src/store/field-cipher.js';
import { openSqliteTaskStore, type SqliteTaskStore } from '../../src/store/sqlite/index.js';
import { anonymousV2Caller } from '../helpers/callers.js';
import { newTaskInput } from '../helpers/new-task.js';
import { QUIET_LIMITS } from '../helpers/quiet-limits.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * Two stores on one SQLite file: `before` with the key the tasks were written with, `store` with the key the server
 * has now (the old one not kept).
 */
function storesWithTwoKeys(): { before: SqliteTaskStore; store: SqliteTaskStore } {
  const temp = makeTempDir();
  const path = join(temp.dir, 'tasks.db');
  const before = openSqliteTaskStore({ path, encryption: new AesGcmFieldCipher(randomBytes(32)) });
  const store = openSqliteTaskStore({ path, encryption: new AesGcmFieldCipher(randomBytes(32)) });
  cleanups.push(
    () => temp.remove(),
    () => before.close(),
    () => store.close(),
  );
  return { before, store };
}

describe('a task the worker cannot decode', () => {
  it.each([
    ['queued before the worker starts (its first recovery takes them)', true],
    ['queued while the worker runs (a claim takes them)', false],
  ])('fails with reason task_unreadable, its tool never runs, and the tasks behind it run: %s', async (_when, queuedFirst) => {
    const { before, store } = storesWithTwoKeys();
    const seen: unknown[] = [];
    const echo = defineTool({
      name: 'echo',
      description: 'records its arguments',
      execution: 'task-optional',
      inputSchema: z.object({ n: z.number().optional() }).passthrough(),
      async run(args) {
        seen.push(args);
        return textResult('ran');
      },
    });
    const poison = newTaskInput({ toolName: 'echo', arguments: { secret: 'written under the old key' } });
    const behind = [1, 2, 3].map((n) => newTaskInput({ toolName: 'echo', arguments: { n } }));
    const queue = async (): Promise<void> => {
      await before.create(poison);
      for (const task of behind) await store.create(task);
    };
    if (queuedFirst) await queue();

    // One slot: before the fix the head of the queue failed every claim, and nothing behind it ever ran.
    const server = await createTasksServer({
      tools: [echo],
      store,
      secret: randomBytes(32),
      limits: { ...QUIET_LIMITS, concurrency: 1, claimIntervalMs: 100 },
      instanceId: 'worker-with-the-new-key',
    });
    cleanups.push(() => server.close());
    if (!queuedFirst) await queue();

    await expect
      .poll(async () => Promise.all(behind.map(async (task) => (await store.getUnscoped(task.taskId))?.status)), { timeout: 10_000 })
      .toEqual(['completed', 'completed', 'completed']);
    expect(seen).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);

    // The unreadable task, read by a process that has its key: failed by the runtime.
    const failed = await before.getUnscoped(poison.taskId);
    expect(failed?.status).toBe('failed');
    const outcome = await before.getOutcome(poison.taskId);
    expect(outcome?.kind).toBe('error');
    if (outcome?.kind !== 'error') return;
    expect(outcome.error.code).toBe(-32603);
    expect(outcome.error.data).toEqual({ reason: 'task_unreadable' });
    // One line for the requestor (or a model), no operator advice: adding the key back does not revive the task.
    expect(outcome.error.message).toBe('Task was not run: this server cannot decrypt its stored arguments; call the tool again');
    expect(failed?.statusMessage).toBe(outcome.error.message);
  });

  it('its owner gets, lists and cancels it; the sweeper times out one waiting for input beside a readable one', async () => {
    const { before, store } = storesWithTwoKeys();
    // No worker: these tasks wait for input (as a run parked them) or are queued.
    const server = await createTasksServer({
      tools: [],
      store,
      secret: randomBytes(32),
      limits: QUIET_LIMITS,
      instanceId: 'api-with-the-new-key',
      worker: false,
    });
    cleanups.push(() => server.close());
    const caller = anonymousV2Caller();
    const queued = newTaskInput({ toolName: 'echo' });
    const waiting = newTaskInput({ toolName: 'echo' });
    const readable = newTaskInput({ toolName: 'echo', arguments: { n: 1 } });
    for (const task of [queued, waiting]) await before.create(task);
    await store.create(readable);
    const now = Date.now();
    await before.transition(waiting.taskId, { to: 'input_required', now });
    await store.transition(readable.taskId, { to: 'input_required', now });

    expect((await server.service.tasks.get(caller, queued.taskId)).status).toBe('working');
    const listed = (await server.service.tasks.list(caller, undefined)).tasks.map((task) => task.taskId);
    expect(listed).toEqual(expect.arrayContaining([queued.taskId, waiting.taskId, readable.taskId]));
    const { cancelled } = await server.service.tasks.cancel(caller, queued.taskId);
    expect(cancelled).toBe(true);
    expect((await before.getUnscoped(queued.taskId))?.status).toBe('cancelled');

    await new Sweeper(store, { sweepIntervalMs: 60_000, inputTimeoutMs: 0 }, systemClock, silentLogger).sweep();
    expect((await before.getUnscoped(waiting.taskId))?.status).toBe('failed');
    expect((await store.getUnscoped(readable.taskId))?.status).toBe('failed');
  });
});
