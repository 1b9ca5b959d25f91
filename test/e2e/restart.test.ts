import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/recovery-tools.mjs');
const ARGS = ['--no-builtins', '--fixtures', 'conformance', '--tools', TOOLS, '--lease-ms', '600'];

async function create(url: string, name: string, args: Record<string, unknown>): Promise<string> {
  const response = await postModern(url, 'tools/call', { name, arguments: args });
  const taskId = response.body.result?.taskId;
  if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(response.body)}`);
  return taskId;
}

async function waitForFile(path: string, content: string): Promise<void> {
  await expect.poll(() => (existsSync(path) ? readFileSync(path, 'utf8') : ''), { timeout: 15_000 }).toContain(content);
}

const lines = (path: string) => readFileSync(path, 'utf8').trim().split('\n');

describe('restart and recovery (real processes, real SQLite file)', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('kill -9 mid-run: results stay readable, journaled and idempotent tasks re-run to completion without repeating journaled steps, others fail as interrupted', async () => {
    const temp = makeTempDir();
    cleanups.push(() => temp.remove());
    const dataDir = join(temp.dir, 'data');
    const first: ServerProcess = await startServerProcess(dataDir, ARGS);
    cleanups.push(() => first.stop());

    const doneId = await create(first.url, 'slow_compute', { seconds: 0, label: 'before' });
    await pollModernTask(first.url, doneId);
    const logs = { journaled: join(temp.dir, 'journaled.log'), idempotent: join(temp.dir, 'idempotent.log'), fragile: join(temp.dir, 'fragile.log') };
    const journaledId = await create(first.url, 'journaled_job', { log: logs.journaled });
    const idempotentId = await create(first.url, 'idempotent_job', { log: logs.idempotent });
    const fragileId = await create(first.url, 'fragile_job', { log: logs.fragile });
    await waitForFile(logs.journaled, 'first');
    await waitForFile(logs.idempotent, 'run');
    await waitForFile(logs.fragile, 'run');

    await first.kill9();
    for (const log of Object.values(logs)) writeFileSync(`${log}.release`, '');
    const second = await startServerProcess(dataDir, ARGS);
    cleanups.push(() => second.stop());

    const before = await pollModernTask(second.url, doneId);
    expect(before.result).toMatchObject({ content: [{ type: 'text', text: 'Computed before after 0s' }] });

    const journaled = await pollModernTask(second.url, journaledId);
    expect(journaled.status).toBe('completed');
    // Two runs, but the journaled side effect "first" happened once and "second" once.
    expect(lines(logs.journaled)).toEqual(['run', 'first', 'run', 'second']);

    const idempotent = await pollModernTask(second.url, idempotentId);
    expect(idempotent.status).toBe('completed');
    expect(lines(logs.idempotent)).toEqual(['run', 'run']);

    const fragile = await pollModernTask(second.url, fragileId);
    expect(fragile.status).toBe('failed');
    expect(fragile.error).toMatchObject({ code: -32603, data: { reason: 'interrupted' } });
    expect(lines(logs.fragile)).toEqual(['run']);
  });

  it("two processes on one database file: killing one leaves the other's running task untouched, and its own tasks are recovered by the survivor", async () => {
    const temp = makeTempDir();
    cleanups.push(() => temp.remove());
    const dataDir = join(temp.dir, 'data');
    const survivor = await startServerProcess(dataDir, ARGS);
    cleanups.push(() => survivor.stop());
    const victim = await startServerProcess(dataDir, ARGS);
    cleanups.push(() => victim.stop());

    const survivorLog = join(temp.dir, 'survivor.log');
    const victimLog = join(temp.dir, 'victim.log');
    const survivorTask = await create(survivor.url, 'fragile_job', { log: survivorLog });
    const victimTask = await create(victim.url, 'idempotent_job', { log: victimLog });
    await waitForFile(survivorLog, 'run');
    await waitForFile(victimLog, 'run');

    await victim.kill9();
    // The victim's idempotent task is re-run by the survivor once its lease lapses (600 ms).
    await expect.poll(() => lines(victimLog).length, { timeout: 15_000 }).toBe(2);
    // Several lease periods later the survivor's own non-idempotent task is still running its first attempt.
    await new Promise((r) => setTimeout(r, 2000));
    const untouched = await postModern(survivor.url, 'tasks/get', { taskId: survivorTask });
    expect(untouched.body.result?.status).toBe('working');
    expect(lines(survivorLog)).toEqual(['run']);

    writeFileSync(`${survivorLog}.release`, '');
    writeFileSync(`${victimLog}.release`, '');
    expect((await pollModernTask(survivor.url, survivorTask)).status).toBe('completed');
    expect((await pollModernTask(survivor.url, victimTask)).status).toBe('completed');
  });
});
