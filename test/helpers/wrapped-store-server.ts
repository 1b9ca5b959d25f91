import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import type { AnyToolDefinition } from '../../src/core/tool.js';
import { createTasksServer, type CreateTasksServerOptions } from '../../src/server/create-tasks-server.js';
import { openSqliteTaskStore, type SqliteTaskStore } from '../../src/store/sqlite/index.js';
import { anonymousV2Caller } from './callers.js';
import { QUIET_LIMITS } from './quiet-limits.js';
import { overrideStore } from './store-wrapper.js';
import { makeTempDir } from './temp-dir.js';

const CALLER = anonymousV2Caller();

/**
 * A server (embedded worker, in-process executor) on a SQLite store some of whose methods `overrides` replaces —
 * for a fault no real timing lands reliably (a cancel just before a write, a write that throws or is slow). `real`
 * is the store under it; `call` creates a task of `tool` and returns its id; `close` ends all of it.
 */
export async function serverOnWrappedStore(
  tools: AnyToolDefinition[],
  overrides: (real: SqliteTaskStore) => object,
  options: Partial<Omit<CreateTasksServerOptions, 'tools' | 'store'>> = {},
): Promise<{
  real: SqliteTaskStore;
  server: Awaited<ReturnType<typeof createTasksServer>>;
  call(tool: string): Promise<string>;
  close(): Promise<void>;
}> {
  const temp = makeTempDir();
  const real = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db') });
  const store = overrideStore<SqliteTaskStore>(real, overrides(real));
  const server = await createTasksServer({ tools, store, secret: randomBytes(32), limits: QUIET_LIMITS, instanceId: 'test-instance', ...options });
  return {
    real,
    server,
    async call(tool) {
      const outcome = await server.service.calls.callTool(CALLER, await server.service.calls.planCall(CALLER, { name: tool, progressToken: null }));
      if (outcome.kind !== 'task') throw new Error(`no task: ${JSON.stringify(outcome)}`);
      return outcome.task.taskId;
    },
    async close() {
      await server.close();
      await real.close();
      temp.remove();
    },
  };
}

/** The terminal record of `taskId` on `server` (the anonymous caller's). */
export function terminal(server: Awaited<ReturnType<typeof createTasksServer>>, taskId: string) {
  return server.service.tasks.waitForTerminal(CALLER, taskId, new AbortController().signal);
}
