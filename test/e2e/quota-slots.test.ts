/**
 * Issue 23 §4 end to end through `mcp-tasks serve` (the built CLI, its SQLite file, its own sweeper at the default
 * interval) with an SDK 1.32.2 client on 2025-11-25: with `--max-active-tasks-per-owner 2`, tasks created with
 * `ttl: 1000` that completed and expired — and were deleted by the sweeper — hold no slot: the owner, who has nothing
 * active, is admitted at once (the store used to count creates of the last 5 s whose row was missing, i.e. exactly
 * these). Control: two tasks still working do fill the quota (`-31001` active_tasks), and cancelling one frees it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ensureBuilt } from '../cli/support.js';
import { connectV1Http, NOT_FOUND, pollUntil, rejection, rpcError, type V1HttpClient } from '../helpers/official-clients.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';

describe('issue 23 §4: expired tasks free their quota slots at once (serve, 2025-11-25 client, ttl: 1000)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mcp-tasks-quota-slots-'));
  let server: ServerProcess;
  let v1: V1HttpClient;
  beforeAll(async () => {
    ensureBuilt();
    server = await startServerProcess(dataDir, [
      '--no-builtins',
      '--fixtures',
      'conformance',
      '--max-active-tasks-per-owner',
      '2',
      '--poll-interval-ms',
      '100',
    ]);
    v1 = await connectV1Http(server.url);
  }, 60_000);
  afterAll(async () => {
    await v1?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const create = (seconds: number, ttl?: number) =>
    v1.client.request({ method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds } } }, CreateTaskResultSchema, {
      task: ttl === undefined ? {} : { ttl },
    });
  const getTask = (taskId: string) => v1.client.experimental.tasks.getTask(taskId);

  it('R18 the expired, swept tasks of ttl 1000 hold no slot; two working tasks do (control), and a cancelled one frees its slot', async () => {
    const short = [await create(0, 1000), await create(0, 1000)];
    for (const created of short) expect(created.task.ttl).toBe(1000);
    // Completed, expired and deleted by the server's sweeper: tasks/get answers "not found" (R45).
    for (const created of short) {
      await pollUntil(
        () => getTask(created.task.taskId).then(() => undefined, rpcError),
        (error) => error?.code === NOT_FOUND.code,
        { timeoutMs: 20_000, intervalMs: 100, what: `task ${created.task.taskId} gone` },
      );
    }
    // The owner has nothing active: both creates are admitted at once (not refused for the next seconds).
    const working = [await create(60), await create(60)];
    for (const created of working) expect(created.task.status).toBe('working');
    // Control: the quota is on — two working tasks fill it.
    const refused = await rejection(create(60));
    expect(refused).toMatchObject({ code: -31001, data: { reason: 'active_tasks', limit: 2 } });
    await v1.client.experimental.tasks.cancelTask(working[0]!.task.taskId);
    const after = await create(60);
    expect(after.task.status).toBe('working');
    for (const created of [working[1]!, after]) await v1.client.experimental.tasks.cancelTask(created.task.taskId);
  }, 60_000);
});
