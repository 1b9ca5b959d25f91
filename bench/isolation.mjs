// What the isolated executor costs per run (issue 22), against the in-process executor in the same run:
// - hand-off: one `noop` run (bench/tools.mjs) at a time through each executor, N runs after a warm-up: mean, p50,
//   p99 and max latency per run, and the isolated executor's extra µs per run; then `--concurrency` runs in flight
//   until N have ended (runs/s, counted until the last started run ends). The isolated executor runs with its own
//   setting (piscina `atomics: 'disabled'`) and with piscina's default (`sync`), to show what the choice costs;
// - thread start: from creating an executor with one thread to that thread having loaded the tools (host clock),
//   for the bench tools and for the built-in tools, median of `--starts`;
// - memory: process RSS with 1 and `--threads` warm threads of the built-in tools, per thread;
// - for the ADR's comparison, the same three figures for a forked child process that loads the same tools and runs
//   each request it gets over IPC (bench/isolation-child.mjs): what `isolation: 'process'` would cost.
// Usage: npm run bench:isolation [-- --runs 3000] [--concurrency 8] [--starts 5] [--threads 8] [--out FILE]
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

import { silentLogger } from '../dist/core/logger.js';
import { ToolRegistry } from '../dist/core/tool-registry.js';
import { loadToolSources } from '../dist/core/tool-source.js';
import { InProcessExecutor } from '../dist/execution/in-process-executor.js';
import { IsolatedExecutor } from '../dist/execution/isolated-executor.js';
import { BUILTIN_TOOL_SOURCE } from '../dist/tools/sources.js';
import { NULL_HOST } from './lib/null-host.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3000' },
    concurrency: { type: 'string', default: '8' },
    starts: { type: 'string', default: '5' },
    threads: { type: 'string', default: '8' },
    out: { type: 'string' },
  },
});
const RUNS = Number(values.runs);
const CONCURRENCY = Number(values.concurrency);
const STARTS = Number(values.starts);
const THREADS = Number(values.threads);
const BENCH_TOOLS = { module: pathToFileURL(join(ROOT, 'bench/tools.mjs')).href };
const MODULE_OPTIONS = { roots: [], writableRoots: [], deniedPaths: [] };
const REQUEST = { taskId: null, toolName: 'noop', arguments: {}, confinement: { roots: [], deniedPaths: [] }, logFields: {} };

const isolated = (sources, extra = {}) =>
  new IsolatedExecutor({
    sources,
    moduleOptions: MODULE_OPTIONS,
    maxThreads: Math.max(CONCURRENCY, 1),
    minThreads: 1,
    abortGraceMs: 5000,
    logger: silentLogger,
    ...extra,
  });
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const median = (values) =>
  quantile(
    [...values].sort((a, b) => a - b),
    0.5,
  );

/** One run at a time: latency per run (µs). */
async function sequential(executor) {
  const signal = new AbortController().signal;
  for (let i = 0; i < Math.min(200, RUNS); i += 1) await executor.execute(REQUEST, NULL_HOST, signal);
  const latencies = [];
  for (let i = 0; i < RUNS; i += 1) {
    const started = performance.now();
    const outcome = await executor.execute(REQUEST, NULL_HOST, signal);
    latencies.push((performance.now() - started) * 1000);
    if (outcome.kind !== 'returned') throw new Error(`run ended ${JSON.stringify(outcome)}`);
  }
  latencies.sort((a, b) => a - b);
  return {
    mean: latencies.reduce((sum, v) => sum + v, 0) / latencies.length,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    max: latencies.at(-1),
  };
}

/** `CONCURRENCY` runs in flight until `RUNS` have ended: runs/s until the last started run ends, max latency (µs). */
async function concurrent(executor) {
  const signal = new AbortController().signal;
  let started = 0;
  let max = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (started < RUNS) {
        started += 1;
        const begun = performance.now();
        await executor.execute(REQUEST, NULL_HOST, signal);
        max = Math.max(max, (performance.now() - begun) * 1000);
      }
    }),
  );
  return { perSecond: RUNS / ((performance.now() - t0) / 1000), max };
}

/** Create an executor with one thread and wait for it to load `sources` (ms, host clock); the thread's own report too. */
async function threadStart(sources) {
  const took = [];
  const reported = [];
  for (let i = 0; i < STARTS; i += 1) {
    const t0 = performance.now();
    const executor = isolated(sources, { maxThreads: 1 });
    await executor.warm(120_000);
    took.push(performance.now() - t0);
    reported.push(executor.readiness().warmUpMs);
    await executor.close();
  }
  return { ms: median(took), reportedMs: median(reported) };
}

/** Process RSS with `n` warm threads of the built-in tools, less the RSS before (MB). */
async function threadMemory(n) {
  global.gc?.();
  await new Promise((r) => setTimeout(r, 200));
  const before = process.memoryUsage().rss;
  const executor = isolated([BUILTIN_TOOL_SOURCE], { minThreads: n, maxThreads: n });
  await executor.warm(120_000);
  await new Promise((r) => setTimeout(r, 500));
  const after = process.memoryUsage().rss;
  await executor.close();
  return (after - before) / 2 ** 20;
}

/** A forked child that loaded `sources` (see bench/isolation-child.mjs): its start (ms), its RSS (MB), and `run()`. */
async function startChild(sources) {
  const t0 = performance.now();
  const child = fork(join(ROOT, 'bench/isolation-child.mjs'), [JSON.stringify(sources)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const ready = await new Promise((resolve) => child.once('message', resolve));
  const ms = performance.now() - t0;
  const waiting = new Map();
  let next = 0;
  child.on('message', ({ id, outcome }) => waiting.get(id)?.(outcome));
  return {
    ms,
    rssMb: ready.rss / 2 ** 20,
    execute(request) {
      const id = next++;
      return new Promise((resolve) => {
        waiting.set(id, (outcome) => {
          waiting.delete(id);
          resolve(outcome);
        });
        child.send({ id, request });
      });
    },
    close: () => new Promise((resolve) => child.once('exit', resolve).kill()),
  };
}

const inProcess = new InProcessExecutor(new ToolRegistry(await loadToolSources([BENCH_TOOLS], MODULE_OPTIONS)));
// Every thread the concurrent runs need is warm before anything is timed.
const disabled = isolated([BENCH_TOOLS], { minThreads: CONCURRENCY });
const sync = isolated([BENCH_TOOLS], { atomics: 'sync', minThreads: CONCURRENCY });
await Promise.all([disabled.warm(120_000), sync.warm(120_000)]);
const rows = [];
for (const [name, executor] of [
  ['in-process', inProcess],
  ['isolated (atomics disabled, ours)', disabled],
  ['isolated (atomics sync, piscina default)', sync],
]) {
  rows.push({ name, one: await sequential(executor), many: await concurrent(executor) });
}
await Promise.all([disabled.close(), sync.close()]);
const child = await startChild([BENCH_TOOLS]);
rows.push({ name: "child process over IPC (not used; the ADR's alternative)", one: await sequential(child), many: await concurrent(child) });
await child.close();
const starts = { bench: await threadStart([BENCH_TOOLS]), builtin: await threadStart([BUILTIN_TOOL_SOURCE]) };
const memory = { one: await threadMemory(1), many: await threadMemory(THREADS) };
const children = [];
for (let i = 0; i < STARTS; i += 1) {
  const started = await startChild([BUILTIN_TOOL_SOURCE]);
  children.push({ ms: started.ms, rssMb: started.rssMb });
  await started.close();
}

const base = rows[0];
const µs = (v) => `${v.toFixed(1)} µs`;
const lines = [
  `# Isolation cost per run — ${new Date().toISOString().slice(0, 10)}`,
  '',
  `\`node bench/isolation.mjs --runs ${RUNS} --concurrency ${CONCURRENCY} --starts ${STARTS} --threads ${THREADS}\` on Node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), load average ${loadavg()
    .map((v) => v.toFixed(1))
    .join(' ')} at the end.`,
  '',
  `## Hand-off: one \`noop\` run (${RUNS} runs after 200 discarded)`,
  '',
  '| executor | mean | p50 | p99 | max | mean / in-process | runs/s with ' + CONCURRENCY + ' in flight | max latency in flight |',
  '|---|---|---|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.name} | ${µs(r.one.mean)} | ${µs(r.one.p50)} | ${µs(r.one.p99)} | ${µs(r.one.max)} | ${(r.one.mean / base.one.mean).toFixed(1)}× | ${r.many.perSecond.toFixed(0)} | ${µs(r.many.max)} |`,
  ),
  '',
  `Hand-off cost of the isolated executor (ours): ${µs(rows[1].one.mean - base.one.mean)} per run over the in-process executor (mean); piscina's \`atomics: 'sync'\` would save ${µs(rows[1].one.mean - rows[2].one.mean)} of it; a child process over IPC would cost ${µs(rows[3].one.mean - base.one.mean)}.`,
  '',
  `## Thread start (one thread, median of ${STARTS})`,
  '',
  '| tools | host: executor created → thread warm | thread: entry loaded → tools loaded |',
  '|---|---|---|',
  `| bench/tools.mjs | ${starts.bench.ms.toFixed(0)} ms | ${starts.bench.reportedMs} ms |`,
  `| built-in tools | ${starts.builtin.ms.toFixed(0)} ms | ${starts.builtin.reportedMs} ms |`,
  `| built-in tools, child process instead (fork → tools loaded) | ${median(children.map((c) => c.ms)).toFixed(0)} ms | — |`,
  '',
  '## Memory (built-in tools, process RSS after the warm-up)',
  '',
  '| warm threads | RSS added | per thread |',
  '|---|---|---|',
  `| 1 | ${memory.one.toFixed(1)} MB | ${memory.one.toFixed(1)} MB |`,
  `| ${THREADS} | ${memory.many.toFixed(1)} MB | ${(memory.many / THREADS).toFixed(1)} MB |`,
  `| child process instead (its own RSS, median of ${STARTS}) | — | ${median(children.map((c) => c.rssMb)).toFixed(1)} MB |`,
  '',
];
const report = lines.join('\n');
process.stdout.write(`${report}\n`);
if (values.out) {
  writeFileSync(values.out, report);
  process.stdout.write(`wrote ${values.out}\n`);
}
