import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { z } from 'zod';

import type { TasksServerLimits } from '../../src/core/limits.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { createTasksServer } from '../../src/server/create-tasks-server.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { makeTempDir } from './temp-dir.js';

/** A task-optional tool that does nothing and completes (`noop`). */
export const noopTool = defineTool({
  name: 'noop',
  description: 'nothing',
  execution: 'task-optional',
  inputSchema: z.object({}),
  run: async () => textResult('done'),
});

/**
 * An API-only server (`worker: false`) with {@link noopTool} on a fresh SQLite file, for tests that put a worker of
 * their own beside it on the same store. Everything is undone through `cleanups` (run in reverse).
 */
export async function apiOnlyOnSqlite(cleanups: Array<() => Promise<void> | void>, limits: Partial<TasksServerLimits>) {
  const temp = makeTempDir();
  cleanups.push(() => temp.remove());
  const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db') });
  cleanups.push(() => store.close());
  const api = await createTasksServer({ tools: [noopTool], store, secret: randomBytes(32), limits, worker: false });
  cleanups.push(() => api.close());
  return { store, api, tool: noopTool };
}
