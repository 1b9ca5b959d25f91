import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

// `serve` on SQLite whose disk fills up, as a data volume does in production: a real SQLite file on a 3 MiB tmpfs
// mounted in a mount namespace of the server's own (`unshare -m`: the mount goes with the process, never onto this
// machine's tree). A result that no longer fits cannot be stored; the tool must not run again for it, the task must
// say why it failed (not "its worker stopped"), the server keeps serving, and the log does not flood.

const TOOLS = resolve(import.meta.dirname, '../fixtures/disk-tools.mjs');
/** Mount a tmpfs of `size` on `dir` (the data directory), then become serve. Exit 99 names a missing namespace. */
const onSmallDisk = (size: string, dir: string) => [
  'unshare',
  '-m',
  'sh',
  '-c',
  `mount -t tmpfs -o size=${size} mcp-tasks-test "$0" || exit 99; exec "$@"`,
  dir,
];

let temp: ReturnType<typeof makeTempDir>;
/** The server of the running test, stopped after it. */
let running: ServerProcess | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
  temp?.remove();
});

/** Create a `sized_result` task (2026-07-28, always a task: `--inline-grace-ms 0`); `at`: when its tool returns. */
async function create(url: string, kib: number, label: string, log: string, at?: number): Promise<string> {
  const response = await postModern(url, 'tools/call', { name: 'sized_result', arguments: { kib, label, log, ...(at === undefined ? {} : { at }) } });
  const taskId = response.body.result?.taskId;
  if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(response.body).slice(0, 300)}`);
  return taskId;
}

/** {@link create}, then wait for the task's end. */
async function run(url: string, kib: number, label: string, log: string): Promise<{ taskId: string; task: Record<string, unknown> }> {
  const taskId = await create(url, kib, label, log);
  return { taskId, task: await pollModernTask(url, taskId, { timeoutMs: 20_000 }) };
}

const runsOf = (log: string, label: string): number =>
  existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter((line) => line === label).length
    : 0;

/** `serve` with the disk tools on a 3 MiB data directory of its own (`args` added); it, its data directory and run log. */
async function serveOnSmallDisk(args: string[]): Promise<{ server: ServerProcess; data: string; log: string }> {
  temp = makeTempDir();
  const data = join(temp.dir, 'data');
  mkdirSync(data);
  running = await startServerProcess(
    data,
    ['--no-builtins', '--tools', TOOLS, '--inline-grace-ms', '0', ...args],
    {},
    undefined,
    onSmallDisk('3m', data),
  ).catch((error: unknown) => {
    throw new Error(`unshare -m and a tmpfs mount are needed here (root): ${String(error)}`);
  });
  return { server: running, data, log: join(temp.dir, 'runs.log') };
}

describe('serve on SQLite when its disk is full', () => {
  it('a result that cannot be stored fails its task with result_not_stored, the tool is not run again, the server goes on, stores results again once the disk grows, and its log is not flooded', async () => {
    // A short lease: were the failed write left to recovery, it would re-run this idempotent tool within seconds.
    const { server, data, log } = await serveOnSmallDisk(['--lease-ms', '600', '--log-level', 'info']);

    // 256 KiB results until one does not fit (3 MiB hold a few: each is written to the log, then to the database).
    const completed: string[] = [];
    let failed: { taskId: string; task: Record<string, unknown>; label: string } | undefined;
    for (let i = 0; i < 24 && !failed; i++) {
      const label = `big-${i}`;
      const { taskId, task } = await run(server.url, 256, label, log);
      if (task.status === 'completed') completed.push(label);
      else failed = { taskId, task, label };
    }
    expect(completed.length, 'control: results were stored until the disk filled').toBeGreaterThanOrEqual(1);
    expect(failed, `every one of 24 results was stored: the disk never filled (${server.log()})`).toBeDefined();
    const { taskId, label } = failed!;
    expect(failed!.task).toMatchObject({ status: 'failed' });
    const statusMessage = String(failed!.task.statusMessage);
    expect(statusMessage).toBe('Tool sized_result ran, but its result could not be stored (Task store failed to commit); it is not run again');

    // Well past the lease: the task has not been taken over and re-run, and reads as it did.
    await new Promise((resolveWait) => setTimeout(resolveWait, 2_000));
    expect(runsOf(log, label)).toBe(1);
    const again = (await postModern(server.url, 'tasks/get', { taskId })).body.result;
    expect(again).toMatchObject({ status: 'failed', statusMessage, error: { code: -32603, message: statusMessage, data: { reason: 'result_not_stored' } } });

    // More calls: each either fails as that one did (ran once), or finds the disk too full to record the call at all
    // (the creation refused with -32603, nothing ran) — never runs twice, never takes the server down.
    const started = Date.now();
    let notStored = 1;
    for (let i = 0; i < 4; i++) {
      const response = await postModern(server.url, 'tools/call', { name: 'sized_result', arguments: { kib: 256, label: `more-${i}`, log } });
      const moreId = response.body.result?.taskId;
      if (typeof moreId !== 'string') {
        expect(response.body.error).toEqual({ code: -32603, message: 'Task store failed to commit', data: { reason: 'store_failed' } });
        expect(runsOf(log, `more-${i}`)).toBe(0);
        continue;
      }
      expect(await pollModernTask(server.url, moreId)).toMatchObject({ status: 'failed', statusMessage });
      expect(runsOf(log, `more-${i}`)).toBe(1);
      notStored += 1;
    }
    expect(server.child.exitCode).toBeNull();
    expect((await fetch(new URL('/healthz', server.url))).status).toBe(200);
    expect((await postModern(server.url, 'tasks/get', { taskId })).body.result).toMatchObject({ status: 'failed', statusMessage });

    // The volume grows (in the server's mount namespace): the same process stores results again, no restart.
    const grown = spawnSync('nsenter', ['-t', String(server.child.pid), '-m', 'mount', '-o', 'remount,size=16m', data], { encoding: 'utf8' });
    expect(grown.status, grown.stderr).toBe(0);
    const after = await run(server.url, 256, 'after', log);
    expect(after.task.status).toBe('completed');
    expect(runsOf(log, 'after')).toBe(1);

    // The log: the store's fault is written whole once per 10 s window and then counted; the count of a window still
    // open is written when the process stops (coalesceOutageLogs, flushOutageLogs).
    await server.stop();
    const windows = 1 + Math.ceil((Date.now() - started) / 10_000);
    const lines = server
      .log()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg?: string; err?: { type?: string; message?: string }; repeats?: number });
    const message = 'task result could not be stored; the task failed';
    const whole = lines.filter((line) => line.msg === message);
    const counted = whole.length + lines.filter((line) => line.msg?.startsWith(`${message} — `)).reduce((sum, line) => sum + (line.repeats ?? 0), 0);
    expect(whole[0]?.err).toMatchObject({ type: 'StoreError', message: expect.stringContaining('database or disk is full') });
    expect(whole.length).toBeLessThanOrEqual(windows);
    expect(counted, server.log()).toBe(notStored);
  }, 90_000);

  it('small results that shared a failed commit with one that does not fit are stored: each runs again in a commit of its own', async () => {
    // In-process: the runs' outcome writes reach the group commit in one turn, as on a busy server (found by review).
    const { server, log } = await serveOnSmallDisk(['--executor', 'in-process', '--concurrency', '8', '--max-result-bytes', '16000000']);
    // All seven created and started before `at`, even on a loaded machine: their tools then return at one instant.
    const at = Date.now() + 4_000;
    const big = await create(server.url, 4_000, 'big', log, at);
    const small = await Promise.all(Array.from({ length: 6 }, (_, i) => create(server.url, 1, `small-${i}`, log, at)));
    expect(await pollModernTask(server.url, big, { timeoutMs: 20_000 })).toMatchObject({
      status: 'failed',
      statusMessage: 'Tool sized_result ran, but its result could not be stored (Task store failed to commit); it is not run again',
    });
    for (const [i, taskId] of small.entries()) {
      expect(await pollModernTask(server.url, taskId, { timeoutMs: 20_000 }), `small-${i}`).toMatchObject({ status: 'completed' });
      expect(runsOf(log, `small-${i}`)).toBe(1);
    }
    expect(runsOf(log, 'big')).toBe(1);
    // Control: the writes did share a commit that failed (else this test proves nothing): two operations or more.
    expect(server.log()).toMatch(/"operations":([2-9]|[1-9]\d+),[^\n]*"msg":"task store failed to commit a batch; its writes run again one by one"/);
  }, 90_000);
});
