import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { defineTool, type ShadowJobState, textResult } from '../../src/core/tool.js';
import { TasksMetrics } from '../../src/ops/metrics.js';
import { cliRunner, ensureBuilt, MAIN, type RunningCli } from '../cli/support.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';
import { fetchText, metricValue, until } from './support.js';

// Issue 15 item 8: shadow mode against a small real job API (HTTP) that this test runs. The tool submits its job
// itself and names it with ctx.shadow.observe; the runtime only polls the adapter's status. One job deliberately
// reports `failed` at its end while its task completes: the report shows exactly that one mismatch.

const run = promisify(execFile);

interface Job {
  state: ShadowJobState;
  /** What the job API reports once the job ended (the deliberate disagreement). */
  finalState: ShadowJobState;
  polls: number;
}

/** The existing job API: POST /jobs {lie?} → {id}; GET /jobs/:id → {state}; POST /jobs/:id/finish. */
function startJobApi(): Promise<{ server: Server; url: string; jobs: Map<string, Job>; submissions: () => number }> {
  const jobs = new Map<string, Job>();
  let submitted = 0;
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const send = (status: number, value: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      const path = request.url ?? '';
      if (request.method === 'POST' && path === '/jobs') {
        submitted += 1;
        const id = `job-${submitted}`;
        jobs.set(id, { state: 'working', finalState: (JSON.parse(body || '{}') as { lie?: boolean }).lie ? 'failed' : 'completed', polls: 0 });
        return send(201, { id });
      }
      const finish = /^\/jobs\/([^/]+)\/finish$/.exec(path);
      const job = jobs.get((finish ?? /^\/jobs\/([^/]+)$/.exec(path))?.[1] ?? '');
      if (!job) return send(404, { error: 'no such job' });
      if (finish && request.method === 'POST') {
        job.state = job.finalState;
        return send(200, { state: job.state });
      }
      job.polls += 1;
      return send(200, { state: job.state });
    });
  });
  return new Promise((resolveStart) =>
    server.listen(0, '127.0.0.1', () =>
      resolveStart({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, jobs, submissions: () => submitted }),
    ),
  );
}

describe('shadow mode against a real job API (issue 15 item 8)', () => {
  let jobApi: Awaited<ReturnType<typeof startJobApi>>;
  let running: RunningTasksServer;
  const metrics = new TasksMetrics({ role: 'serve', defaultMetrics: false });
  let adapterSubmits = 0;

  beforeAll(async () => {
    ensureBuilt();
    jobApi = await startJobApi();
    const shadow = {
      async submit(): Promise<string> {
        adapterSubmits += 1;
        throw new Error('shadow mode must never submit');
      },
      async status(jobId: string): Promise<ShadowJobState> {
        const response = await fetch(`${jobApi.url}/jobs/${jobId}`);
        return ((await response.json()) as { state: ShadowJobState }).state;
      },
    };
    const migrating = (name: string) =>
      defineTool({
        name,
        description: 'submits a job to the existing API, waits, finishes it',
        execution: 'task-required',
        idempotent: true,
        shadow,
        inputSchema: z.object({ lie: z.boolean().default(false) }),
        async run({ lie }, ctx) {
          const { id } = (await (await fetch(`${jobApi.url}/jobs`, { method: 'POST', body: JSON.stringify({ lie }) })).json()) as { id: string };
          ctx.shadow.observe(id);
          await new Promise((resolve) => setTimeout(resolve, 200));
          await fetch(`${jobApi.url}/jobs/${id}/finish`, { method: 'POST' });
          return textResult(`job ${id} done`);
        },
      });
    running = await startTasksServer({
      tools: [migrating('migrating_job'), migrating('unshadowed_job')],
      workerObserver: metrics.workerObserver(),
      shadow: { tools: ['migrating_job'], intervalMs: 40, settleChecks: 5 },
    });
  }, 60_000);
  afterAll(async () => {
    await running?.close();
    jobApi?.server.close();
  });

  const call = async (name: string, lie: boolean): Promise<string> => {
    const created = await postModern(running.url, 'tools/call', { name, arguments: { lie } });
    const taskId = String(created.body.result?.taskId);
    expect(await pollModernTask(running.url, taskId)).toMatchObject({ status: 'completed' });
    return taskId;
  };
  const report = async (...args: string[]) =>
    run(process.execPath, [MAIN, 'admin', 'shadow-report', '--store', running.dbPath, '--data-dir', `${running.dbPath}.data`, ...args]);

  it('three agreeing runs and one that disagrees: exactly one mismatch in the report, the metric and the audit trail; submit never called', async () => {
    for (const _ of [1, 2, 3]) await call('migrating_job', false);
    const liar = await call('migrating_job', true);
    const unshadowed = await call('unshadowed_job', true);
    // The final comparison happens after the task ended: wait until the metric shows it.
    await until(
      'the mismatch metric',
      async () => metricValue((await metrics.exposition()).body, 'mcp_tasks_shadow_mismatches_total', { tool: 'migrating_job' }) === 1,
    );
    await until(
      'every final check of the agreeing runs',
      async () => metricValue((await metrics.exposition()).body, 'mcp_tasks_shadow_checks_total', { tool: 'migrating_job', result: 'match' }) >= 3,
    );

    const { stdout } = await report('--json');
    const parsed = JSON.parse(stdout) as { mismatches: number; byTool: Record<string, number>; entries: Array<Record<string, string>> };
    expect(parsed.mismatches).toBe(1);
    expect(parsed.byTool).toEqual({ migrating_job: 1 });
    expect(parsed.entries[0]).toMatchObject({
      tool: 'migrating_job',
      taskId: liar,
      phase: 'final',
      taskState: 'completed',
      jobState: 'failed',
      jobId: 'job-4',
    });
    const text = (await report('--since', '1h')).stdout;
    expect(text).toMatch(/^shadow mismatches since \S+: 1 \(migrating_job: 1\)\n/);
    expect(text).toContain(`task=${liar}`);
    expect(text).toContain('task completed, job failed');

    const exposition = (await metrics.exposition()).body;
    expect(metricValue(exposition, 'mcp_tasks_shadow_mismatches_total')).toBe(1);
    expect(metricValue(exposition, 'mcp_tasks_shadow_checks_total', { tool: 'migrating_job', result: 'error' })).toBe(0);
    // Never a task id in a label.
    expect(exposition).not.toContain(liar);
    // Shadow mode only observes: the adapter's submit was never called, the job API saw one submission per run.
    expect(adapterSubmits).toBe(0);
    expect(jobApi.submissions()).toBe(5);
    // Negative control: a tool not in shadow.tools is never polled, however much its job disagrees.
    expect(jobApi.jobs.get('job-5')?.polls).toBe(0);
    expect(unshadowed).not.toBe(liar);
    expect((jobApi.jobs.get('job-1')?.polls ?? 0) > 0).toBe(true);
  });

  it('a report with --since after the mismatch and a report for another tool are empty', async () => {
    const later = new Date(Date.now() + 60_000).toISOString();
    expect(JSON.parse((await report('--json', '--since', later)).stdout)).toMatchObject({ mismatches: 0, entries: [] });
    expect((await report('--tool', 'unshadowed_job')).stdout).toBe('shadow mismatches since ever: 0\n');
  });
});

describe('shadow mode in a real serve process (isolated executor, the CLI default)', () => {
  const temp = makeTempDir('mcp-tasks-shadow-');
  const { start } = cliRunner({ ...process.env });
  const store = join(temp.dir, 'tasks.db');
  let jobApi: Awaited<ReturnType<typeof startJobApi>>;
  let serve: RunningCli;
  let base = '';
  beforeAll(async () => {
    ensureBuilt();
    jobApi = await startJobApi();
    const tools = resolve(import.meta.dirname, '../fixtures/shadow-tools.mjs');
    serve = start([
      'serve',
      '--port',
      '0',
      '--store',
      store,
      '--data-dir',
      join(temp.dir, 'data'),
      '--no-builtins',
      '--tools',
      tools,
      '--log-level',
      'error',
      '--root',
      temp.dir,
      '--shadow-tool',
      'migrating_job',
      '--shadow-interval-ms',
      '40',
      '--shadow-settle-checks',
      '5',
    ]);
    base = `http://127.0.0.1:${(await serve.stderrLine(/serving http:\/\/127\.0\.0\.1:(\d+)\/mcp/))[1]}`;
  }, 60_000);
  afterAll(() => {
    if (serve?.child.exitCode === null) serve.child.kill('SIGKILL');
    jobApi?.server.close();
    temp.remove();
  });

  it('two runs, one job disagrees: /metrics and admin shadow-report show exactly one mismatch', async () => {
    const ids: string[] = [];
    for (const lie of [false, true]) {
      const created = await postModern(`${base}/mcp`, 'tools/call', { name: 'migrating_job', arguments: { jobApi: jobApi.url, lie } });
      ids.push(String(created.body.result?.taskId));
      expect(await pollModernTask(`${base}/mcp`, ids.at(-1) as string)).toMatchObject({ status: 'completed' });
    }
    await until(
      'the mismatch metric',
      async () => metricValue((await fetchText(`${base}/metrics`)).body, 'mcp_tasks_shadow_mismatches_total', { tool: 'migrating_job' }) === 1,
    );
    const { stdout } = await run(process.execPath, [MAIN, 'admin', 'shadow-report', '--store', store, '--data-dir', join(temp.dir, 'data'), '--json']);
    const parsed = JSON.parse(stdout) as { mismatches: number; entries: Array<Record<string, string>> };
    expect(parsed.mismatches).toBe(1);
    expect(parsed.entries[0]).toMatchObject({ taskId: ids[1], phase: 'final', taskState: 'completed', jobState: 'failed' });
    expect(jobApi.submissions()).toBe(2);
    expect((jobApi.jobs.get('job-1')?.polls ?? 0) > 0).toBe(true);
  });
});
