/**
 * A draining worker takes no new task, and `doctor` says so (a newcomer: 1 API + 2 workers on PostgreSQL, both
 * workers SIGTERMed, and doctor said "1 working task waits for a worker; 1 live worker process" while none would
 * take it). Real processes on one real PostgreSQL database: `serve --no-worker` and one `worker` with one slot and a
 * long `--drain-ms`; a long run holds the slot, a second task waits. Before the SIGTERM (control) the worker counts
 * as live and takes tasks; during its drain doctor names it draining and FAILs the tasks line, the API's `/readyz`
 * and the waiting task's status say no worker takes tasks; the run still finishes in the drain.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { cliRunner } from '../cli/support.js';
import { eventually, runNotes } from '../helpers/run-notes.js';
import { type ServerProcess, startServerProcess, startWorkerProcess, type WorkerProcess } from '../helpers/server-process.js';
import { sharedStore } from '../helpers/shared-store.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/worker-tools.mjs');

describe('a SIGTERMed worker on postgres drains: doctor counts it draining, not live', () => {
  const temp = makeTempDir();
  const fixture = sharedStore<ServerProcess | WorkerProcess>('postgres', temp);
  const common = () => ['--store', fixture.storeArg, '--no-builtins', '--tools', TOOLS, '--heartbeat-ms', '200'];
  const { cli } = cliRunner({ ...process.env, MCP_TASKS_SECRET: '' });
  const doctor = async () => {
    const run = await cli(['doctor', '--store', fixture.storeArg]);
    const line = (check: string) => run.stdout.split('\n').find((l) => new RegExp(`^(ok  |FAIL)  ${check}\\s`).test(l)) ?? run.stdout;
    return { code: run.code, line };
  };
  const call = async (url: string, args: Record<string, unknown>) => {
    const created = await postModern(url, 'tools/call', { name: 'role_job', arguments: args });
    const taskId = created.body.result?.taskId;
    if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
    return taskId;
  };

  it('before SIGTERM it takes tasks (control); while it drains, doctor FAILs "no worker takes tasks (1 draining: …)", and the run finishes', async () => {
    const api = await startServerProcess(join(temp.dir, 'api'), ['--no-worker', '--instance-id', 'api-d', ...common()]);
    fixture.processes.push(api);
    const worker = await startWorkerProcess([
      '--data-dir',
      join(temp.dir, 'w'),
      ...common(),
      '--instance-id',
      'worker-d',
      '--concurrency',
      '1',
      '--drain-ms',
      '60000',
    ]);
    fixture.processes.push(worker);
    const log = join(temp.dir, 'long.log');
    const long = await call(api.url, { log });
    await eventually('the long run to start', () => runNotes(log).find((n) => n.event === 'start'), 15_000, 25);
    const waiting = await call(api.url, { log: join(temp.dir, 'second.log'), ms: 0 });

    // Control: the worker counts as live and taking tasks (the second task waits for its one slot).
    const before = await doctor();
    expect(before.line('tasks')).toMatch(/^ok {4}tasks\s+\d+ working tasks? waits? for a worker; 1 live worker process \(live: [^;]*\)$/);
    expect(before.line('processes')).toMatch(/^ok {4}processes 2 live \(api-d api, worker-d worker\)$/);
    const workerMetrics = async (): Promise<string> => (await fetch(new URL('/metrics', api.url))).text();
    // The API's gauges of its store's workers, read at scrape time from the same look as /readyz.
    await eventually(
      'the API to see the worker',
      async () => ((await workerMetrics()).includes('mcp_tasks_worker_processes{state="takes_tasks",role="api"} 1') ? true : undefined),
      10_000,
      100,
    );
    expect(await workerMetrics()).toContain('mcp_tasks_worker_processes{state="draining",role="api"} 0');
    expect(await workerMetrics()).toContain('mcp_tasks_draining{role="api"} 0');

    worker.child.kill('SIGTERM');
    await worker.logLine('draining: waiting for runs to finish');
    // The mark is written beside the drain: give doctor a few reads to see it, then judge the last one (before the fix
    // it said "1 working task waits for a worker; 1 live worker process" for the whole drain).
    let during = await doctor();
    await eventually(
      'doctor to see the worker draining',
      async () => {
        during = await doctor();
        return during.line('processes').includes('draining') ? true : undefined;
      },
      5_000,
      100,
    ).catch(() => undefined);
    expect(during.line('tasks')).toMatch(
      /^FAIL {2}tasks\s+1 working task waits for a worker; no worker takes tasks \(1 draining: worker-d for \d+ s\): start .*worker \(or serve without --no-worker\)$/,
    );
    expect(during.line('processes')).toMatch(/^ok {4}processes 2 live \(api-d api, worker-d worker draining for \d+ s\)$/);
    expect(during.code).toBe(1);
    // The worker still runs (it drains), and the API process, reading the same registry, agrees.
    expect(worker.child.exitCode).toBeNull();
    const readyz = await eventually(
      "the API's /readyz to count the worker draining",
      async () => {
        const body = (await (await fetch(new URL('/readyz', api.url))).json()) as { checks: { workers?: { live: number; draining: number } } };
        return body.checks.workers?.draining === 1 ? body.checks.workers : undefined;
      },
      10_000,
      100,
    );
    expect(readyz).toMatchObject({ live: 0, draining: 1 });
    const scraped = await workerMetrics();
    expect(scraped).toContain('mcp_tasks_worker_processes{state="takes_tasks",role="api"} 0');
    expect(scraped).toContain('mcp_tasks_worker_processes{state="draining",role="api"} 1');
    expect((await postModern(api.url, 'tasks/get', { taskId: waiting })).body.result).toMatchObject({
      status: 'working',
      statusMessage: expect.stringMatching(/^waiting for a worker \(no worker process takes tasks: 1 draining, taking no new task; last seen /),
    });

    // The drain lets the long run finish; then the worker exits 0 and its registration (with its mark) goes.
    // (Not `worker.stop()`: a second signal ends a drain at once.)
    const exited = new Promise<number | null>((resolveExit) => worker.child.once('exit', (code) => resolveExit(code)));
    writeFileSync(`${log}.release`, '');
    expect(await exited, worker.log()).toBe(0);
    expect((await pollModernTask(api.url, long)).status).toBe('completed');
    const after = await doctor();
    expect(after.line('tasks')).toMatch(/^FAIL {2}tasks\s+1 working task waits with a lapsed or no lease and no live worker is registered/);
    expect(after.line('processes')).toMatch(/^ok {4}processes 1 live \(api-d api\)$/);
  }, 90_000);

  it('a SIGTERMed serve (its embedded worker) is marked draining too; control: before the SIGTERM it is not', async () => {
    const serve = await startServerProcess(join(temp.dir, 'serve'), ['--instance-id', 'serve-d', '--drain-ms', '60000', ...common()]);
    fixture.processes.push(serve);
    const log = join(temp.dir, 'serve-long.log');
    await call(serve.url, { log });
    await eventually('the run to start', () => runNotes(log).find((n) => n.event === 'start'), 15_000, 25);
    expect((await doctor()).line('processes')).toMatch(/serve-d serve[,)]/);

    serve.child.kill('SIGTERM');
    const seen = await eventually(
      'doctor to see serve draining',
      async () => {
        const line = (await doctor()).line('processes');
        return /serve-d serve draining for \d+ s/.test(line) ? line : undefined;
      },
      10_000,
      100,
    );
    expect(seen).toMatch(/serve-d serve draining for \d+ s/);
    const exited = new Promise<number | null>((resolveExit) => serve.child.once('exit', (code) => resolveExit(code)));
    writeFileSync(`${log}.release`, '');
    expect(await exited, serve.log()).toBe(0);
  }, 90_000);
});
