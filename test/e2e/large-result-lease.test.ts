/**
 * A run that lost its lease stores no chunks of its large result (stop 40): the chunks are written before the run's
 * terminal transition, which is conditional on the lease — a stale run's chunk write replaced the chunks of the run
 * that holds the task, whose outcome names their size. Real server over real HTTP, real SQLite file; the lease is
 * moved to another process by SQL on that file just as the run stores its result (the store wrapper is the only
 * seam). Negative control: the same write without the lease owner stores the chunks.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import type { TaskStore } from '../../src/core/store.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import type { SqliteTaskStore } from '../../src/store/sqlite/index.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { postModern } from '../helpers/wire.js';

const INSTANCE = 'instance-losing-lease';

const bigTool = defineTool({
  name: 'big',
  description: 'Returns a large text result.',
  execution: 'task-optional',
  inputSchema: z.object({ chars: z.number().int().positive() }),
  run: ({ chars }) => Promise.resolve(textResult('x'.repeat(chars))),
});

const servers: RunningTasksServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

/** A server whose store hands the task's lease to `other-process` right before the run's chunks are written. */
async function start(options: { dropLeaseOwner: boolean }): Promise<{ server: RunningTasksServer; attempts: Array<string | undefined> }> {
  const attempts: Array<string | undefined> = [];
  let dbPath = '';
  const server = await startTasksServer({
    tools: [bigTool],
    instanceId: INSTANCE,
    limits: { maxResultBytes: 20_000, maxStoredResultBytes: 2_000_000 },
    wrapStore: (store: SqliteTaskStore): TaskStore =>
      new Proxy(store, {
        get(target, key) {
          if (key !== 'putResultChunks') return Reflect.get(target, key, target) as unknown;
          return async (taskId: string, chunks: readonly Uint8Array[], leaseOwner?: string) => {
            attempts.push(leaseOwner);
            const db = new Database(dbPath);
            try {
              db.prepare("UPDATE tasks SET lease_owner = 'other-process' WHERE task_id = ?").run(taskId);
            } finally {
              db.close();
            }
            return target.putResultChunks(taskId, chunks, options.dropLeaseOwner ? undefined : leaseOwner);
          };
        },
      }),
  });
  dbPath = server.dbPath;
  servers.push(server);
  return { server, attempts };
}

function chunkRows(dbPath: string): number {
  const db = new Database(dbPath, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM result_chunks').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

async function runBig(server: RunningTasksServer): Promise<string> {
  const created = await postModern(server.url, 'tools/call', { name: 'big', arguments: { chars: 100_000 } });
  const taskId = created.body.result?.taskId;
  if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
  return taskId;
}

async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 250; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('a large result of a run that lost its lease (stop 40)', () => {
  it('stores no chunks: the write names the run as lease owner and is refused', async () => {
    const { server, attempts } = await start({ dropLeaseOwner: false });
    const taskId = await runBig(server);
    await until('the chunk write', () => attempts.length > 0);
    expect(attempts).toEqual([INSTANCE]);
    // Give the run's (refused) transition time to land.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(chunkRows(server.dbPath)).toBe(0);
    const db = new Database(server.dbPath, { readonly: true });
    try {
      expect(db.prepare('SELECT status, lease_owner FROM tasks WHERE task_id = ?').get(taskId)).toEqual({ status: 'working', lease_owner: 'other-process' });
    } finally {
      db.close();
    }
  });

  it('negative control: the same write without the lease owner stores the stale run chunks', async () => {
    const { server, attempts } = await start({ dropLeaseOwner: true });
    await runBig(server);
    await until('the chunk write', () => attempts.length > 0);
    await until('the chunks', () => chunkRows(server.dbPath) > 0);
    expect(chunkRows(server.dbPath)).toBeGreaterThan(0);
  });
});
