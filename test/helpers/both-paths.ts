/**
 * Two tasks servers on one SQLite file — one answering hot requests on the HTTP fast path, one leaving every request
 * to the SDK — and a read-only view of that file, for tests that send the same request down both paths and then ask
 * the store what ran.
 */
import { join } from 'node:path';

import Database from 'better-sqlite3';

import { type RunningTasksServer, startTasksServer } from './tasks-server.js';
import { makeTempDir } from './temp-dir.js';

export interface BothPaths {
  fast: RunningTasksServer;
  sdk: RunningTasksServer;
  /** Tasks whose `arguments.label` is `label` (tests give each task-creating call its own). */
  tasksLabelled(label: string): number;
  /** A task's status in the store, `undefined` when there is none. */
  statusOf(taskId: string): string | undefined;
  close(): Promise<void>;
}

/** Start both servers (`options` as for {@link startTasksServer}, less the store and the path). */
export async function startBothPaths(options: Omit<Parameters<typeof startTasksServer>[0], 'dbPath' | 'fastPath'>): Promise<BothPaths> {
  const temp = makeTempDir('mcp-tasks-both-paths-');
  const dbPath = join(temp.dir, 'tasks.db');
  const fast = await startTasksServer({ ...options, dbPath, fastPath: true });
  const sdk = await startTasksServer({ ...options, dbPath, fastPath: false });
  const db = new Database(dbPath, { readonly: true });
  const byLabel = db.prepare("SELECT count(*) AS n FROM tasks WHERE json_extract(arguments, '$.label') = ?");
  const byId = db.prepare('SELECT status FROM tasks WHERE task_id = ?');
  return {
    fast,
    sdk,
    tasksLabelled: (label) => (byLabel.get(label) as { n: number }).n,
    statusOf: (taskId) => (byId.get(taskId) as { status: string } | undefined)?.status,
    async close() {
      db.close();
      await fast.close();
      await sdk.close();
      temp.remove();
    },
  };
}
