// Polling amplification: many clients poll their own long-running task (`sleep_ms`), each honouring the
// server's `pollIntervalMs` with ±20 % jitter (as `mcp-tasks call` does). Run once with honouring clients only, then
// again with some clients polling as fast as they can. What matters is how the honouring clients fare (errors,
// latency) and whether the server's memory stays bounded; the server may throttle the abusive ones. Every poll
// started in the window counts, and the rate runs until the last of them was answered (a held-back answer included).
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';

import { latencySummary } from '../lib/load.mjs';
import { ModernClient, RpcError } from '../lib/mcp.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const TASK_MS = 600_000;
const CREATE_PARALLELISM = 64;

/** Each client with its own working task, created `CREATE_PARALLELISM` at a time (setup, not measured). */
async function clientsWithTasks(url, count) {
  const clients = [];
  for (let start = 0; start < count; start += CREATE_PARALLELISM) {
    const batch = Array.from({ length: Math.min(CREATE_PARALLELISM, count - start) }, async () => {
      const client = new ModernClient(url);
      const created = await client.call('tools/call', { name: 'sleep_ms', arguments: { ms: TASK_MS } });
      if (created.resultType !== 'task') throw new RpcError('sleep_ms answered no task');
      return { client, taskId: created.taskId };
    });
    clients.push(...(await Promise.all(batch)));
  }
  return clients;
}

async function pollingRun(ctx, honouringCount, abusiveCount) {
  const interval = ctx.options.pollIntervalMs;
  return ctx.withServer(ctx.ours(['--poll-interval-ms', String(interval)]), async (server) => {
    const honouring = await clientsWithTasks(server.url, honouringCount);
    const abusive = await clientsWithTasks(server.url, abusiveCount);
    let phase = 'warmup';
    let lastEnd = 0;
    const stats = () => ({ latencies: [], requests: 0, errors: 0, firstError: undefined, intervals: 0, intervalSum: 0 });
    const by = { honouring: stats(), abusive: stats() };

    const poll = async ({ client, taskId }, kind) => {
      const started = performance.now();
      const counted = phase === 'measure';
      const s = by[kind];
      try {
        const task = await client.call('tasks/get', { taskId });
        if (task.status !== 'working') throw new RpcError(`task is ${task.status}`);
        if (counted) {
          const ended = performance.now();
          lastEnd = Math.max(lastEnd, ended);
          s.latencies.push(ended - started);
          s.requests += 1;
          s.intervals += 1;
          s.intervalSum += task.pollIntervalMs;
        }
        return task.pollIntervalMs ?? interval;
      } catch (error) {
        if (counted) {
          lastEnd = Math.max(lastEnd, performance.now());
          s.errors += 1;
          s.firstError ??= error instanceof Error ? error.message : String(error);
        }
        return interval;
      }
    };
    const honour = async (state) => {
      await sleep(Math.random() * interval);
      while (phase !== 'done') await sleep((await poll(state, 'honouring')) * (0.8 + 0.4 * Math.random()));
    };
    const hammer = async (state) => {
      while (phase !== 'done') await poll(state, 'abusive');
    };
    const workers = [...honouring.map(honour), ...abusive.map(hammer)];

    // Warm-up long enough for the jittered schedules to spread out.
    await sleep(ctx.options.warmupMs + interval);
    const before = await server.usage({ resetLoopDelay: true });
    let peakRss = before.memory.rss;
    const sampler = setInterval(() => void server.usage().then((usage) => (peakRss = Math.max(peakRss, usage.memory.rss))), 250);
    // The load generator's own event-loop delay: with a thousand clients it adds to the latencies measured.
    const driverLoop = monitorEventLoopDelay({ resolution: 10 });
    driverLoop.enable();
    const started = performance.now();
    phase = 'measure';
    await sleep(ctx.options.durationMs);
    phase = 'done';
    const windowEnd = performance.now();
    await Promise.all(workers);
    const seconds = (Math.max(lastEnd, windowEnd) - started) / 1000;
    clearInterval(sampler);
    driverLoop.disable();
    const after = await server.usage({ resetLoopDelay: true });
    for (const { client } of [...honouring, ...abusive]) client.close();
    const requests = by.honouring.requests + by.abusive.requests;
    const cpu = after.cpu.user - before.cpu.user + (after.cpu.system - before.cpu.system);
    return {
      by,
      seconds,
      peakRss: Math.max(peakRss, after.memory.rss),
      loop: after.loop,
      driverLoop: { p99Ms: driverLoop.percentile(99) / 1e6, maxMs: driverLoop.max / 1e6 },
      cpuUsPerRequest: requests > 0 ? cpu / requests : null,
    };
  });
}

function pollingFigure(label, run, honouringCount, abusiveCount) {
  const { honouring, abusive } = run.by;
  const latency = latencySummary(honouring.latencies);
  return {
    label,
    unit: 'req/s (honouring)',
    value: honouring.requests / run.seconds,
    p50Ms: latency.p50Ms,
    p99Ms: latency.p99Ms,
    maxMs: latency.maxMs,
    errors: honouring.errors,
    ...(honouring.firstError ? { firstError: honouring.firstError } : {}),
    honouringClients: honouringCount,
    abusiveClients: abusiveCount,
    ...(abusiveCount > 0
      ? {
          abusiveRequestsPerSecond: abusive.requests / run.seconds,
          abusiveP50Ms: latencySummary(abusive.latencies).p50Ms,
          abusiveMaxMs: latencySummary(abusive.latencies).maxMs,
          abusiveErrors: abusive.errors,
          abusiveMeanPollIntervalMs: abusive.intervals > 0 ? abusive.intervalSum / abusive.intervals : null,
        }
      : {}),
    serverPeakRssBytes: run.peakRss,
    serverLoopDelay: run.loop,
    driverLoopDelay: run.driverLoop,
    cpuUsPerRequest: run.cpuUsPerRequest,
    cpuUsPerOp: run.cpuUsPerRequest,
  };
}

export async function polling(ctx) {
  const honouringCount = ctx.options.pollClients;
  const abusiveCount = ctx.concurrencyHigh;
  const calm = await pollingRun(ctx, honouringCount, 0);
  ctx.record('polling.honouring', pollingFigure(`Polling: ${honouringCount} clients honouring pollIntervalMs (+jitter)`, calm, honouringCount, 0));
  const mixed = await pollingRun(ctx, honouringCount, abusiveCount);
  ctx.record(
    'polling.mixed',
    pollingFigure(`Polling: the same ${honouringCount} clients + ${abusiveCount} polling as fast as possible`, mixed, honouringCount, abusiveCount),
  );
}
