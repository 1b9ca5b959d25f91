/**
 * each terminal path of a run leaves exactly one task.ended entry (cdafc4f), through a real server and its
 * embedded worker on SQLite: completed, failed (the tool threw), runtime_limit (the tool ignored its signal).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';

import { type AnyToolDefinition, defineTool, textResult } from '../../src/core/tool.js';
import { createTasksServer } from '../../src/server/create-tasks-server.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { anonymousV2Caller } from '../helpers/callers.js';
import { QUIET_LIMITS } from '../helpers/quiet-limits.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const CALLER = anonymousV2Caller();
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const tool = (name: string, run: (signal: AbortSignal) => Promise<unknown>): AnyToolDefinition =>
  defineTool({
    name,
    description: name,
    execution: 'task-optional',
    inputSchema: z.object({ secret: z.string().optional() }),
    run: (_args, ctx) => run(ctx.signal) as never,
  });

it('completed, failed and runtime_limit each leave exactly one task.ended entry, with no arguments in it', async () => {
  const temp = makeTempDir();
  const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db') });
  const tools = [
    tool('ok', async () => textResult('done')),
    tool('throws', async () => {
      throw new Error('tool failed');
    }),
    tool('slow', () => new Promise(() => {})),
  ];
  const server = await createTasksServer({ tools, store, secret: randomBytes(32), limits: { ...QUIET_LIMITS, runtimeLimitMs: 200 }, instanceId: 'i-1' });
  cleanups.push(
    () => temp.remove(),
    () => store.close(),
    () => server.close(),
  );
  const { service } = server;
  const ids: Record<string, string> = {};
  for (const name of ['ok', 'throws', 'slow']) {
    const outcome = await service.calls.callTool(
      CALLER,
      await service.calls.planCall(CALLER, { name, arguments: { secret: 'hunter2-secret' }, progressToken: null } as never),
    );
    if (outcome.kind !== 'task') throw new Error(`no task: ${JSON.stringify(outcome)}`);
    ids[name] = outcome.task.taskId;
  }
  for (const id of Object.values(ids)) await service.tasks.waitForTerminal(CALLER, id, new AbortController().signal);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const audit = await store.listAudit({ limit: 1000 });
  const endedOf = (id: string) => audit.filter((entry) => entry.taskId === id && entry.kind === 'task.ended').map((entry) => [entry.outcome, entry.detail]);
  expect(endedOf(ids.ok as string)).toEqual([['completed', null]]);
  expect(endedOf(ids.throws as string)).toEqual([['failed', null]]);
  expect(endedOf(ids.slow as string)).toEqual([['failed', { reason: 'runtime_limit' }]]);
  expect(JSON.stringify(audit)).not.toContain('hunter2');
});
