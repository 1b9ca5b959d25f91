/**
 * Issue 22, end to end: real `mcp-tasks serve` processes (default isolated executor, SQLite) over loopback HTTP.
 * - churn: bursts of runtime-limited and cancelled runs of a signal-honouring tool with a short grace — the process
 *   survives every burst, no thread is terminated (`mcp_tasks_thread_terminations_total` stays 0), every task ends
 *   with the right reason, `tasks/get` answers throughout, and SIGTERM afterwards drains and exits 0;
 * - hostile tools each fail only their own task with a clear reason while the server keeps serving;
 * - waiting for a thread (queued, or while one loads the tools) is not charged to a run's runtime limit;
 * - the warm pool: `/readyz` reports it (with the hostile tools), and `serve` refuses to start when the tools cannot
 *   load in a thread.
 * - drain: SIGTERM aborts started runs with `shutdown` and releases them, none reported failed; runs still waiting
 *   for a thread are not started by the draining server but given back uncounted, and the next server runs them.
 * ISOLATION_CHURN_BURSTS (default 3) and ISOLATION_CHURN_TASKS (per burst, default 40) make the long variant.
 */
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';

import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { ensureBuilt, MAIN } from '../cli/support.js';
import { eventually, runNotes } from '../helpers/run-notes.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';
import { metricValue } from '../ops/support.js';

const ISOLATION_TOOLS = resolve(import.meta.dirname, '../fixtures/isolation-tools.mjs');
const THREAD_LOAD_TOOLS = resolve(import.meta.dirname, '../fixtures/thread-load-tools.mjs');
const BURSTS = Number(process.env.ISOLATION_CHURN_BURSTS ?? 3);
const TASKS_PER_BURST = Number(process.env.ISOLATION_CHURN_TASKS ?? 40);

describe('isolated execution never takes the server down (issue 22)', () => {
  ensureBuilt();
  const temp = makeTempDir('mcp-tasks-isolation-');
  const processes: ServerProcess[] = [];
  afterEach(async () => {
    for (const server of processes.splice(0)) await server.stop();
  });
  afterAll(() => temp.remove());

  const serve = async (name: string, args: string[], env: Record<string, string> = {}) => {
    const server = await startServerProcess(join(temp.dir, name), ['--no-builtins', ...args], env);
    processes.push(server);
    return server;
  };
  const create = async (url: string, name: string, args: Record<string, unknown>) => {
    const created = await postModern(url, 'tools/call', { name, arguments: args });
    const taskId = created.body.result?.taskId;
    if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
    return taskId;
  };
  const base = (server: ServerProcess) => server.url.replace(/\/mcp$/, '');
  const metrics = async (server: ServerProcess) => (await fetch(`${base(server)}/metrics`)).text();

  it(`churn: ${BURSTS} bursts of ${TASKS_PER_BURST} runtime-limited or cancelled runs of a signal-honouring tool (grace 1 s) — 0 terminations, right reasons, tasks/get answers throughout, SIGTERM exits 0`, async () => {
    // The grace is the time a thread has to act on the abort once it is posted, and a thread must get a core to act:
    // at 100 ms, one thread in stop 45's final CI (2 cores, load ~5) was not scheduled in time and was terminated, as
    // the executor must do once the grace elapsed (the product's default is 5 s). 1 s keeps the property tested — an
    // abort that did not reach the tool, or a tool that ignored it, still ends in a termination this test counts — and
    // costs no time when the tools honour it.
    const server = await serve('churn', ['--tools', ISOLATION_TOOLS, '--runtime-limit-ms', '300', '--abort-grace-ms', '1000', '--concurrency', '6']);
    // tasks/get keeps being answered while the bursts run (each read must come back within the test's timeout).
    let reading = true;
    let reads = 0;
    let cancelledSeen = 0;
    const readTaskIds: string[] = [];
    const reader = (async () => {
      while (reading) {
        const taskId = readTaskIds.at(-1);
        if (taskId) {
          const answer = await postModern(server.url, 'tasks/get', { taskId });
          expect(answer.body.result?.taskId).toBe(taskId);
          reads += 1;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    try {
      for (let burst = 0; burst < BURSTS; burst += 1) {
        const limited: string[] = [];
        const cancelled: string[] = [];
        await Promise.all(
          Array.from({ length: TASKS_PER_BURST }, async (_, i) => {
            const taskId = await create(server.url, 'sleepy', { ms: 10_000 });
            readTaskIds.push(taskId);
            if (i % 2 === 0) {
              limited.push(taskId);
              return;
            }
            // Cancelled at once, a little later, or once running: queued, starting and running runs alike.
            await new Promise((r) => setTimeout(r, (i * 37) % 250));
            expect((await postModern(server.url, 'tasks/cancel', { taskId })).body.error).toBeUndefined();
            cancelled.push(taskId);
          }),
        );
        for (const taskId of limited) {
          const done = await pollModernTask(server.url, taskId, { timeoutMs: 60_000 });
          expect(done.status, JSON.stringify(done)).toBe('failed');
          expect(done.error).toMatchObject({ data: { reason: 'runtime_limit' } });
        }
        // A cancel races the runtime limit on a slow machine; whichever came first is the reason, never anything else.
        for (const taskId of cancelled) {
          const done = await pollModernTask(server.url, taskId, { timeoutMs: 60_000 });
          if (done.status === 'cancelled') cancelledSeen += 1;
          else expect(done, JSON.stringify(done)).toMatchObject({ status: 'failed', error: { data: { reason: 'runtime_limit' } } });
        }
        expect(server.child.exitCode).toBeNull();
      }
    } finally {
      reading = false;
      await reader;
    }
    expect(reads).toBeGreaterThan(0);
    expect(cancelledSeen).toBeGreaterThan(0);
    expect(metricValue(await metrics(server), 'mcp_tasks_thread_terminations_total')).toBe(0);
    expect(server.log()).not.toMatch(/its thread was terminated|FATAL|Aborted/);
    await server.stop();
    expect(server.child.signalCode).toBeNull();
    expect(server.child.exitCode).toBe(0);
  }, 180_000);

  it('hostile tools each fail their own task with a clear reason; the server keeps serving and counts the two terminations', async () => {
    const server = await serve('hostile', ['--tools', ISOLATION_TOOLS, '--abort-grace-ms', '200', '--thread-heap-mb', '64', '--concurrency', '6']);
    const byTool: Record<string, Record<string, any>> = {};
    const log = join(temp.dir, 'hostile.log');
    // The two that hold their thread are cancelled once they run (blocking-tool.test.ts covers the runtime limit).
    const blocking = await Promise.all([create(server.url, 'ignores_signal', { log }), create(server.url, 'spins_forever', { log })]);
    await eventually('both to start', () => blocking.every((taskId) => runNotes<{ taskId: string }>(log).some((note) => note.taskId === taskId)));
    for (const taskId of blocking) await postModern(server.url, 'tasks/cancel', { taskId });
    for (const taskId of blocking) expect((await pollModernTask(server.url, taskId, { timeoutMs: 30_000 })).status).toBe('cancelled');
    await eventually('both threads to be terminated', async () => metricValue(await metrics(server), 'mcp_tasks_thread_terminations_total') === 2);
    // Those that end by themselves, on their own (a spinning thread would slow the heap blow-up on a busy machine).
    const tools = ['eats_heap', 'calls_exit', 'throws_in_timer', 'leaves_timer'];
    const taskIds = await Promise.all(tools.map((tool) => create(server.url, tool, {})));
    const ended = await Promise.all(taskIds.map((taskId) => pollModernTask(server.url, taskId, { timeoutMs: 60_000 })));
    tools.forEach((tool, i) => (byTool[tool] = ended[i] as Record<string, any>));
    expect(byTool.eats_heap).toMatchObject({
      status: 'failed',
      statusMessage: "Tool eats_heap ran out of memory (its thread's heap limit is 64 MB); only this run failed",
    });
    expect(byTool.calls_exit).toMatchObject({
      status: 'failed',
      statusMessage: 'Tool calls_exit called process.exit(3), which is refused in a tool thread; only this run failed',
    });
    expect(byTool.throws_in_timer).toMatchObject({
      status: 'failed',
      statusMessage: expect.stringMatching(/^Tool throws_in_timer threw an uncaught error from a callback/),
    });
    expect(byTool.leaves_timer).toMatchObject({ status: 'completed' });
    // Still serving: a well-behaved task completes, the process is ready, and only the two blocking tools cost a thread.
    expect((await pollModernTask(server.url, await create(server.url, 'sleepy', { ms: 10 }))).status).toBe('completed');
    const ready = await fetch(`${base(server)}/readyz`);
    expect(ready.status).toBe(200);
    // The warm pool as /readyz reports it: the two terminated threads were replaced; none failed to load the tools.
    expect(((await ready.json()) as { checks: { executor: unknown } }).checks.executor).toMatchObject({
      ready: true,
      mode: 'isolated',
      threads: { failed: 0, min: 1, max: 10 },
    });
    const exposition = await metrics(server);
    expect(metricValue(exposition, 'mcp_tasks_thread_terminations_total', { tool: 'ignores_signal' })).toBe(1);
    expect(metricValue(exposition, 'mcp_tasks_thread_terminations_total', { tool: 'spins_forever' })).toBe(1);
    await server.logLine('a tool callback threw after its run ended');
    expect(metricValue(exposition, 'mcp_tasks_thread_terminations_total')).toBe(2);
    expect(server.child.exitCode).toBeNull();
  }, 120_000);

  it('waiting for a thread is not charged to the run: a run that waits 2 s for one completes under a 3 s runtime limit', async () => {
    const log = join(temp.dir, 'waiting.log');
    // One warm thread; a thread started on demand takes 4 s to load, so the second run waits for the first's thread.
    const server = await serve('waiting', ['--tools', THREAD_LOAD_TOOLS, '--min-threads', '1', '--concurrency', '2', '--runtime-limit-ms', '3000'], {
      ISOLATION_TEST_LOAD_MS: '4000',
      ISOLATION_TEST_FIRST_FAST: join(temp.dir, 'waiting.marker'),
    });
    const first = await create(server.url, 'quick', { log, ms: 2000 });
    await eventually('the first run to start', () => runNotes<{ taskId: string }>(log).some((note) => note.taskId === first));
    const second = await create(server.url, 'quick', { log, ms: 1500 });
    // 2 s of waiting + 1.5 s of running: over the limit if the wait counted, well under it since it does not.
    for (const taskId of [first, second]) expect((await pollModernTask(server.url, taskId, { timeoutMs: 30_000 })).status).toBe('completed');
    const starts = runNotes<{ event: string; taskId: string; thread: number }>(log).filter((note) => note.event === 'start');
    expect(starts.map((note) => note.thread)).toEqual([starts[0]?.thread, starts[0]?.thread]);
  }, 60_000);

  it('serve refuses to start, with a clear error, when the tool modules fail to load in a worker thread', async () => {
    const run = spawnSync(
      process.execPath,
      [MAIN, 'serve', '--port', '0', '--data-dir', join(temp.dir, 'refuses'), '--no-builtins', '--tools', THREAD_LOAD_TOOLS],
      {
        env: { ...process.env, ISOLATION_TEST_LOAD_FAILS: '1' },
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(
      'cannot start the isolated executor: the tool modules failed to load in a worker thread: Error: this tool module refuses to load in a worker thread',
    );
  }, 60_000);

  it('SIGTERM while runs go: the drain aborts them with shutdown and releases them; none is reported failed; exit 0', async () => {
    const dataDir = join(temp.dir, 'drain');
    const server = await startServerProcess(dataDir, [
      '--no-builtins',
      '--tools',
      ISOLATION_TOOLS,
      '--drain-ms',
      '300',
      '--abort-grace-ms',
      '200',
      '--concurrency',
      '4',
    ]);
    const taskIds = await Promise.all(Array.from({ length: 8 }, () => create(server.url, 'sleepy', { ms: 30_000 })));
    await new Promise((r) => setTimeout(r, 500));
    await server.stop();
    expect(server.child.exitCode).toBe(0);
    const store = openSqliteTaskStore({ path: join(dataDir, 'tasks.db') });
    try {
      const rows = await Promise.all(taskIds.map((taskId) => store.getUnscoped(taskId)));
      expect(rows.map((row) => row?.status)).toEqual(taskIds.map(() => 'working'));
      const released = new Set((await store.readEventsAfter(0, 10_000)).filter((event) => event.kind === 'released').map((event) => event.taskId));
      for (const row of rows) if ((row?.attempt ?? 0) > 0) expect(released.has(row!.taskId)).toBe(true);
    } finally {
      await store.close();
    }
  }, 60_000);

  it('SIGTERM while runs wait for a thread: a draining server starts none of them; it gives them back uncounted at once, lets the running one finish, and the next server runs them (a tool not safe to re-run)', async () => {
    const dataDir = join(temp.dir, 'drain-waiting');
    const log = join(temp.dir, 'drain-waiting.log');
    // One warm thread; threads started on demand take 3 s to load, well inside the 10 s drain: without the withdrawal
    // the waiting runs would start during the drain. `quick` is neither idempotent nor journaled.
    const first = await startServerProcess(
      dataDir,
      ['--no-builtins', '--tools', THREAD_LOAD_TOOLS, '--min-threads', '1', '--concurrency', '3', '--drain-ms', '10000'],
      {
        ISOLATION_TEST_LOAD_MS: '3000',
        ISOLATION_TEST_FIRST_FAST: join(temp.dir, 'drain-waiting.marker'),
      },
    );
    processes.push(first);
    const running = await create(first.url, 'quick', { log, ms: 2_500 });
    await eventually('the first run to start', () => runNotes<{ taskId: string }>(log).some((note) => note.taskId === running));
    const waiting = [await create(first.url, 'quick', { log, ms: 50 }), await create(first.url, 'quick', { log, ms: 50 })];
    const stopped = first.stop();
    const store = openSqliteTaskStore({ path: join(dataDir, 'tasks.db') });
    try {
      // Given back while the drain still waits for the running one: not counted, no lease, runnable by anyone.
      await eventually(
        'the waiting runs to be given back',
        async () => {
          const rows = await Promise.all(waiting.map((taskId) => store.getUnscoped(taskId)));
          return rows.every((row) => row?.status === 'working' && row.attempt === 0 && row.leaseOwner === null && row.leaseExpiresAt === null);
        },
        10_000,
      );
      expect(first.child.exitCode).toBeNull();
      await stopped;
      expect(first.child.exitCode).toBe(0);
      // The started run finished within the drain.
      expect(await store.getUnscoped(running)).toMatchObject({ status: 'completed', attempt: 1 });
    } finally {
      await store.close();
    }
    const second = await serve('drain-waiting', ['--tools', THREAD_LOAD_TOOLS, '--concurrency', '3']);
    for (const taskId of waiting) expect((await pollModernTask(second.url, taskId, { timeoutMs: 30_000 })).status).toBe('completed');
    // Each started once, in the second server; the draining one started none of them.
    const starts = runNotes<{ event: string; taskId: string; pid: number }>(log).filter((note) => note.event === 'start' && waiting.includes(note.taskId));
    expect(starts.map((note) => [note.taskId, note.pid])).toEqual(expect.arrayContaining(waiting.map((taskId) => [taskId, second.child.pid])));
    expect(starts).toHaveLength(2);
  }, 90_000);
});
