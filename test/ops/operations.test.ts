import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ensureBuilt, type RunningCli } from '../cli/support.js';
import { fetchText, metricValue, operatorProcesses, until } from './support.js';

// Metrics and probes of real `serve --no-worker` and `worker --health-port` processes on one SQLite file, driven
// by the real requestor CLI (issue 15 items 3 and 5).

describe('metrics and probes of an API process and a worker process', () => {
  const { temp, start, cli, log, shared } = operatorProcesses('mcp-tasks-ops-');
  let api: RunningCli;
  let worker: RunningCli;
  let apiBase = '';
  let workerBase = '';
  const createdId = (stderr: string): string => stderr.match(/task (\S+) created/)?.[1] ?? '';

  beforeAll(async () => {
    ensureBuilt();
    api = start(['serve', '--port', '0', '--no-worker', ...shared]);
    apiBase = `http://127.0.0.1:${(await api.stderrLine(/serving http:\/\/127\.0\.0\.1:(\d+)\/mcp/))[1]}`;
    worker = start(['worker', '--health-port', '0', '--drain-ms', '20000', ...shared]);
    workerBase = `http://127.0.0.1:${(await worker.stderrLine(/health:\s+http:\/\/127\.0\.0\.1:(\d+)\/healthz/))[1]}`;
  }, 60_000);
  afterAll(async () => {
    for (const child of [api?.child, worker?.child]) if (child && child.exitCode === null) child.kill('SIGKILL');
    temp.remove();
  });

  it('GET /metrics on both processes: created, runs, durations, queue wait, store latency and HTTP counters move during a real run; no task id in any label', async () => {
    const apiBefore = (await fetchText(`${apiBase}/metrics`)).body;
    const workerBefore = (await fetchText(`${workerBase}/metrics`)).body;
    expect(apiBefore).toContain('# TYPE mcp_tasks_tasks_created_total counter');
    expect(workerBefore).toContain('# TYPE mcp_tasks_run_duration_seconds histogram');

    const detached = await cli(['call', 'stepped_job', '--url', `${apiBase}/mcp`, '--args', JSON.stringify({ steps: 10, stepMs: 100, log }), '--detach']);
    expect(detached.code, detached.stderr).toBe(0);
    const taskId = createdId(detached.stderr);
    expect(taskId).not.toBe('');
    // The worker's gauge shows the run while it runs.
    await until('the worker to report one active run', async () => metricValue((await fetchText(`${workerBase}/metrics`)).body, 'mcp_tasks_active_runs') === 1);
    const watched = await cli(['watch', taskId, '--url', `${apiBase}/mcp`]);
    expect(watched.code, watched.stderr).toBe(0);
    const polled = await cli(['get', taskId, '--url', `${apiBase}/mcp`, '--protocol', '2025-11-25']);
    expect(polled.code).not.toBe(5);

    const apiAfter = (await fetchText(`${apiBase}/metrics`)).body;
    const workerAfter = (await fetchText(`${workerBase}/metrics`)).body;
    const moved = (before: string, after: string, name: string, labels: Record<string, string> = {}): number =>
      metricValue(after, name, labels) - metricValue(before, name, labels);
    expect(moved(apiBefore, apiAfter, 'mcp_tasks_tasks_created_total', { tool: 'stepped_job' })).toBe(1);
    expect(moved(apiBefore, apiAfter, 'mcp_tasks_service_operations_total', { operation: 'callTool', outcome: 'ok' })).toBe(1);
    expect(moved(apiBefore, apiAfter, 'mcp_tasks_http_requests_total', { method: 'POST', code: '200' })).toBeGreaterThan(0);
    // The CLI sends an idempotency key with every call, so the task is created by the key's claim (issue 12).
    expect(moved(apiBefore, apiAfter, 'mcp_tasks_store_operation_duration_seconds_count', { operation: 'claimIdempotencyKey', outcome: 'ok' })).toBe(1);
    expect(moved(apiBefore, apiAfter, 'mcp_tasks_store_operation_duration_seconds_count', { operation: 'create', outcome: 'ok' })).toBe(0);
    expect(moved(workerBefore, workerAfter, 'mcp_tasks_runs_total', { tool: 'stepped_job', outcome: 'completed' })).toBe(1);
    expect(moved(workerBefore, workerAfter, 'mcp_tasks_tasks_terminal_total', { tool: 'stepped_job', status: 'completed' })).toBe(1);
    expect(moved(workerBefore, workerAfter, 'mcp_tasks_run_duration_seconds_count', { tool: 'stepped_job', outcome: 'completed' })).toBe(1);
    // 10 steps of 100 ms: the run took about a second — seconds, not milliseconds.
    expect(moved(workerBefore, workerAfter, 'mcp_tasks_run_duration_seconds_sum', { tool: 'stepped_job', outcome: 'completed' })).toBeGreaterThan(0.9);
    expect(moved(workerBefore, workerAfter, 'mcp_tasks_queue_wait_seconds_count', { tool: 'stepped_job' })).toBe(1);
    expect(moved(workerBefore, workerAfter, 'mcp_tasks_store_operation_duration_seconds_count', { operation: 'transition', outcome: 'ok' })).toBeGreaterThan(0);
    expect(metricValue(workerAfter, 'mcp_tasks_active_runs')).toBe(0);
    // Bounded labels: never a task id (nor its redacted prefix) in any series.
    for (const text of [apiAfter, workerAfter]) expect(text).not.toContain(taskId.slice(0, 8));
  }, 60_000);

  it('a cancellation is counted where it is requested (API) and where it reaches the tool (worker)', async () => {
    const apiBefore = (await fetchText(`${apiBase}/metrics`)).body;
    const workerBefore = (await fetchText(`${workerBase}/metrics`)).body;
    const detached = await cli(['call', 'stepped_job', '--url', `${apiBase}/mcp`, '--args', JSON.stringify({ steps: 200, stepMs: 100, log }), '--detach']);
    const taskId = createdId(detached.stderr);
    await until('the run to start', async () => metricValue((await fetchText(`${workerBase}/metrics`)).body, 'mcp_tasks_active_runs') === 1);
    const cancelled = await cli(['cancel', taskId, '--url', `${apiBase}/mcp`]);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout + cancelled.stderr).toMatch(/cancelled/);
    await until(
      'the worker to count the delivered cancellation',
      async () =>
        metricValue((await fetchText(`${workerBase}/metrics`)).body, 'mcp_tasks_cancellations_delivered_total', { tool: 'stepped_job' }) >
        metricValue(workerBefore, 'mcp_tasks_cancellations_delivered_total', { tool: 'stepped_job' }),
    );
    const apiAfter = (await fetchText(`${apiBase}/metrics`)).body;
    expect(
      metricValue(apiAfter, 'mcp_tasks_cancellations_requested_total') - metricValue(apiBefore, 'mcp_tasks_cancellations_requested_total'),
    ).toBeGreaterThanOrEqual(1);
    expect(
      metricValue(apiAfter, 'mcp_tasks_tasks_terminal_total', { tool: 'stepped_job', status: 'cancelled' }) -
        metricValue(apiBefore, 'mcp_tasks_tasks_terminal_total', { tool: 'stepped_job', status: 'cancelled' }),
    ).toBe(1);
  }, 60_000);

  it('/healthz and /readyz answer on both; other methods get 405', async () => {
    for (const base of [apiBase, workerBase]) {
      expect((await fetchText(`${base}/healthz`)).status).toBe(200);
      const ready = await fetchText(`${base}/readyz`);
      expect(ready.status, ready.body).toBe(200);
      const body = JSON.parse(ready.body) as {
        ready: boolean;
        checks: { store: { ok: boolean }; migrations: { ok: boolean; applied: number; expected: number }; draining: boolean; killSwitch: { state: string } };
      };
      expect(body.ready).toBe(true);
      expect(body.checks.store.ok).toBe(true);
      expect(body.checks.migrations).toMatchObject({ ok: true });
      expect(body.checks.migrations.applied).toBe(body.checks.migrations.expected);
      expect(body.checks.draining).toBe(false);
      expect(body.checks.killSwitch.state).toBe('off');
      expect((await fetch(`${base}/readyz`, { method: 'POST' })).status).toBe(405);
    }
  });

  it('/readyz flips to 503 (draining) while a worker drains, /healthz stays 200 until it exits', async () => {
    const detached = await cli(['call', 'stepped_job', '--url', `${apiBase}/mcp`, '--args', JSON.stringify({ steps: 30, stepMs: 100, log }), '--detach']);
    expect(detached.code, detached.stderr).toBe(0);
    await until('the run to start', async () => metricValue((await fetchText(`${workerBase}/metrics`)).body, 'mcp_tasks_active_runs') === 1);
    expect((await fetchText(`${workerBase}/readyz`)).status).toBe(200);
    expect(metricValue((await fetchText(`${workerBase}/metrics`)).body, 'mcp_tasks_draining')).toBe(0);
    // Only an API process without a worker watches its store's workers; a worker has no such series.
    expect((await fetchText(`${workerBase}/metrics`)).body).not.toMatch(/^mcp_tasks_worker_processes\{/m);
    worker.child.kill('SIGTERM');
    await until('readyz to say draining', async () => {
      const probe = await fetchText(`${workerBase}/readyz`);
      return probe.status === 503 && (JSON.parse(probe.body) as { checks: { draining: boolean } }).checks.draining;
    });
    expect(metricValue((await fetchText(`${workerBase}/metrics`)).body, 'mcp_tasks_draining')).toBe(1);
    const health = await fetchText(`${workerBase}/healthz`);
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toMatchObject({ status: 'draining' });
    // The run finishes within --drain-ms and the worker exits 0.
    expect((await worker.done).code).toBe(0);
    const watched = await cli(['watch', createdId(detached.stderr), '--url', `${apiBase}/mcp`]);
    expect(watched.code, watched.stderr).toBe(0);
  }, 60_000);
});
