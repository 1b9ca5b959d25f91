/**
 * A run that lost its lease stores no chunks of its large result (stop 40): the chunks are written before the run's
 * terminal transition, which is conditional on the lease — a stale run's chunk write replaced the chunks of the run
 * that holds the task, whose outcome names their size. Real server over real HTTP, real SQLite file; the lease is
 * moved to another process by SQL on that file just as the run stores its result (the store wrapper is the only
 * seam). Negative control: the same write without the lease owner stores the chunks.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import type { TaskStore } from '../../src/core/store.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { boundLargeResult } from '../../src/execution/large-result.js';
import { createTasksServer } from '../../src/server/create-tasks-server.js';
import { openSqliteTaskStore, type SqliteTaskStore } from '../../src/store/sqlite/index.js';
import { anonymousV2Caller, CONFIRM_SCHEMA } from '../helpers/callers.js';
import { type CapturedLine, captureLogger } from '../helpers/capture-logger.js';
import { QUIET_LIMITS } from '../helpers/quiet-limits.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
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
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A server whose store hands the task's lease to `other-process` right before the run's chunks are written. */
async function start(options: {
  dropLeaseOwner: boolean;
}): Promise<{ server: RunningTasksServer; attempts: Array<string | undefined>; lines: CapturedLine[] }> {
  const attempts: Array<string | undefined> = [];
  let dbPath = '';
  const logs = captureLogger();
  const server = await startTasksServer({
    tools: [bigTool],
    logger: logs.logger,
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
  return { server, attempts, lines: logs.lines };
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
    const { server, attempts, lines } = await start({ dropLeaseOwner: false });
    const taskId = await runBig(server);
    await until('the chunk write', () => attempts.length > 0);
    expect(attempts).toEqual([INSTANCE]);
    // Discarded, not reported as a run that failed or completed.
    await until('the discard', () => lines.some((line) => line.message?.includes('its large result is discarded') === true));
    // Nothing else is written for it afterwards (no transition: the run is discarded).
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

describe('a large result of a run that holds its lease (review of the lease condition)', () => {
  it('with its in-place question still open (input_required under its lease): stored in chunks, the outcome bounded', async () => {
    const temp = makeTempDir();
    cleanups.push(() => temp.remove());
    const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db') });
    cleanups.push(() => store.close());
    const tool = defineTool({
      name: 'ask_then_big',
      description: 'Asks in place, then returns a large result without waiting for the answer.',
      execution: 'task-optional',
      elicits: 'in-place',
      inputSchema: z.object({}),
      async run(_arguments, context) {
        // As an upstream that gives up on its elicitation/create and returns its result anyway.
        await Promise.race([context.elicit({ message: 'Go on?', requestedSchema: CONFIRM_SCHEMA }), new Promise((resolve) => setTimeout(resolve, 300))]);
        return textResult('x'.repeat(100_000));
      },
    });
    const server = await createTasksServer({
      tools: [tool],
      store,
      secret: randomBytes(32),
      instanceId: 'w-in-place',
      limits: { ...QUIET_LIMITS, maxResultBytes: 20_000, maxStoredResultBytes: 2_000_000 },
    });
    cleanups.push(() => server.close());
    const caller = anonymousV2Caller({ elicitation: { form: {} } });
    const outcome = await server.service.calls.callTool(caller, await server.service.calls.planCall(caller, { name: 'ask_then_big', progressToken: null }));
    if (outcome.kind !== 'task') throw new Error(`no task: ${outcome.kind}`);
    const done = await server.service.tasks.waitForTerminal(caller, outcome.task.taskId, AbortSignal.timeout(10_000));
    expect(done.status).toBe('completed');
    expect(Buffer.byteLength(JSON.stringify(await store.getOutcome(outcome.task.taskId)))).toBeLessThan(21_000);
    expect(await store.readResultChunk(outcome.task.taskId, 0)).toBeDefined();
  });

  it('a refused chunk write discards the run outcome (undefined) rather than keep the whole result inline', async () => {
    const refusing = { putResultChunks: () => Promise.resolve(false) } as unknown as TaskStore;
    const settled = await boundLargeResult(
      refusing,
      'Zz9Yy8Xx7Ww6Vv5Uu4Tt3S',
      { status: 'completed', outcome: { kind: 'result', result: { content: [{ type: 'text', text: 'x'.repeat(100_000) }] } } },
      { maxResultBytes: 20_000, maxStoredResultBytes: 2_000_000 },
      'w-lost',
    );
    expect(settled).toBeUndefined();
  });
});
