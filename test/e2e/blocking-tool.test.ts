/**
 * Issue 11 item 2 / acceptance 4: tools run off the loop that keeps the lease. Real `mcp-tasks serve` processes on
 * a real SQLite file, observed over HTTP, through the store's rows and events and the tool's own run log.
 * - A tool that busy-loops for 3× `--lease-ms` keeps its lease, runs exactly once and completes, and a `tasks/get`
 *   issued meanwhile is answered within 1 s (generous) with the isolated executor — and is not with
 *   `--executor in-process` (the negative control: the same loop blocks the process that would answer).
 * - A tool that ignores its signal is terminated after `--abort-grace-ms` (its thread ended) on cancel and on the
 *   runtime limit, and the task settles as it would have (`cancelled`; `failed` with `data.reason: "runtime_limit"`).
 */
import { join, resolve } from 'node:path';

import { afterAll, afterEach, describe, expect, it } from 'vitest';

import type { TaskStore } from '../../src/core/store.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { ensureBuilt } from '../cli/support.js';
import { eventually, runNotes } from '../helpers/run-notes.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/blocking-tools.mjs');
const LEASE_MS = 1_000;
const BLOCK_MS = 3 * LEASE_MS;

interface Note {
  event: 'start' | 'done';
  taskId: string;
  thread: number;
  at: number;
}

describe('tools off the lease loop (issue 11 item 2)', () => {
  ensureBuilt();
  const temp = makeTempDir();
  const processes: ServerProcess[] = [];
  const stores: TaskStore[] = [];
  afterEach(async () => {
    for (const process of processes.splice(0)) await process.stop();
    for (const store of stores.splice(0)) await store.close();
  });
  afterAll(() => temp.remove());

  const serve = async (name: string, extra: string[]) => {
    const dataDir = join(temp.dir, name);
    const server = await startServerProcess(dataDir, ['--no-builtins', '--tools', TOOLS, '--lease-ms', String(LEASE_MS), ...extra]);
    processes.push(server);
    const store = openSqliteTaskStore({ path: join(dataDir, 'tasks.db') });
    stores.push(store);
    return { server, store };
  };
  const create = async (url: string, name: string, args: Record<string, unknown>) => {
    const created = await postModern(url, 'tools/call', { name, arguments: args });
    const taskId = created.body.result?.taskId;
    if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
    return taskId;
  };

  /** Start a busy loop, then time one `tasks/get` issued while it spins; wait for the task to end. */
  const blockAndAsk = async (mode: 'isolated' | 'in-process') => {
    const { server, store } = await serve(`block-${mode}`, ['--executor', mode]);
    const log = join(temp.dir, `block-${mode}.log`);
    const taskId = await create(server.url, 'busy_loop', { log, ms: BLOCK_MS });
    const start = await eventually('the loop to start', () => runNotes<Note>(log).find((n) => n.event === 'start'));
    const askedAt = Date.now();
    const answer = await postModern(server.url, 'tasks/get', { taskId });
    const answeredMs = Date.now() - askedAt;
    const spinning = runNotes<Note>(log).every((n) => n.event !== 'done');
    const done = await pollModernTask(server.url, taskId, { timeoutMs: 20_000 });
    return { taskId, store, log, start, answer, answeredMs, spinning, done };
  };

  it('isolated: a tool that busy-loops for 3× the lease keeps its lease, runs once, completes; tasks/get meanwhile answers within 1 s', async () => {
    const run = await blockAndAsk('isolated');
    expect(run.answer.body.result).toMatchObject({ taskId: run.taskId, status: 'working' });
    expect(run.spinning).toBe(true);
    expect(run.answeredMs).toBeLessThan(1_000);
    expect(run.done.status).toBe('completed');
    // Ran exactly once, on a thread other than the main one, under one lease owner that never changed.
    const runs = runNotes<Note>(run.log);
    expect(runs.map((n) => n.event)).toEqual(['start', 'done']);
    expect(runs[0]?.thread).not.toBe(0);
    const events = (await run.store.readEventsAfter(0, 10_000)).filter((e) => e.taskId === run.taskId);
    expect(events.filter((e) => e.kind === 'attempt')).toHaveLength(1);
    expect(events.some((e) => e.kind === 'released')).toBe(false);
    expect((await run.store.getUnscoped(run.taskId))?.attempt).toBe(1);
  });

  it('negative control, in-process: the same loop holds the process, so the tasks/get waits longer than 1 s', async () => {
    const run = await blockAndAsk('in-process');
    expect(run.answeredMs).toBeGreaterThan(1_000);
    expect(run.done.status).toBe('completed');
    expect(runNotes<Note>(run.log).map((n) => n.event)).toEqual(['start', 'done']);
  });

  it('a tool that ignores its signal is terminated after --abort-grace-ms on cancel; the task is cancelled and the pool runs the next task', async () => {
    const { server } = await serve('ignore-cancel', ['--abort-grace-ms', '300']);
    const log = join(temp.dir, 'ignore-cancel.log');
    const taskId = await create(server.url, 'ignore_signal', { log });
    await eventually('the run to start', () => runNotes<Note>(log).find((n) => n.event === 'start'));
    expect((await postModern(server.url, 'tasks/cancel', { taskId })).body.result).toBeDefined();
    await eventually('the thread to be terminated', () => server.log().includes('its thread was terminated'), 5_000);
    expect((await postModern(server.url, 'tasks/get', { taskId })).body.result).toMatchObject({ status: 'cancelled' });
    expect(runNotes<Note>(log).filter((n) => n.event === 'done')).toHaveLength(0);
    // The pool replaced the thread: the next task runs and completes.
    const next = await create(server.url, 'busy_loop', { log: join(temp.dir, 'after.log'), ms: 10 });
    expect((await pollModernTask(server.url, next)).status).toBe('completed');
  });

  it('a tool that ignores its signal at the runtime limit is terminated; the task fails with data.reason "runtime_limit"', async () => {
    const { server } = await serve('ignore-limit', ['--abort-grace-ms', '300', '--runtime-limit-ms', '1000']);
    const log = join(temp.dir, 'ignore-limit.log');
    const taskId = await create(server.url, 'ignore_signal', { log });
    const done = await pollModernTask(server.url, taskId, { timeoutMs: 10_000 });
    expect(done.status).toBe('failed');
    expect(JSON.stringify(done)).toContain('runtime_limit');
    await eventually('the thread to be terminated', () => server.log().includes('its thread was terminated'), 5_000);
  });
});
