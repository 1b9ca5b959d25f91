// CPU per run of the isolated executor (issue 25): the whole process's CPU (host thread and tool threads,
// `process.cpuUsage()`) per `noop` run (bench/tools.mjs, the null host), through 2 warm threads, one run at a time
// and then 8 in flight, after a warm-up of the same size. `--root` measures another checkout's build (its `dist/`,
// its bench tools), so a before/after pair runs the same script; run the two alternately, several times.
// Usage: npm run build && node bench/executor-cpu.mjs [--runs 20000] [--root DIR]
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '20000' }, root: { type: 'string' } } });
const ROOT = resolve(values.root ?? join(import.meta.dirname, '..'));
const RUNS = Number(values.runs);
const load = (path) => import(pathToFileURL(join(ROOT, path)).href);
const { IsolatedExecutor } = await load('dist/execution/isolated-executor.js');
const { silentLogger } = await load('dist/core/logger.js');
const { NULL_HOST } = await load('bench/lib/null-host.mjs');

const REQUEST = { taskId: null, toolName: 'noop', arguments: {}, confinement: { roots: [], deniedPaths: [] }, logFields: {} };
const executor = new IsolatedExecutor({
  sources: [{ module: pathToFileURL(join(ROOT, 'bench/tools.mjs')).href }],
  moduleOptions: { roots: [], writableRoots: [], deniedPaths: [] },
  maxThreads: 2,
  minThreads: 2,
  abortGraceMs: 5000,
  logger: silentLogger,
});
await executor.warm(60_000);
const signal = new AbortController().signal;

/** `RUNS` runs, `inFlight` at a time: CPU µs and wall µs per run, and the slowest run (ms). */
async function measure(inFlight) {
  let started = 0;
  let maxMs = 0;
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (started < RUNS) {
        started += 1;
        const begun = performance.now();
        const outcome = await executor.execute(REQUEST, NULL_HOST, signal);
        if (outcome.kind !== 'returned') throw new Error(`run ended ${JSON.stringify(outcome)}`);
        maxMs = Math.max(maxMs, performance.now() - begun);
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  return {
    cpuUsPerRun: Math.round((used.user + used.system) / RUNS),
    wallUsPerRun: Math.round(((performance.now() - t0) * 1000) / RUNS),
    maxMs: Math.round(maxMs),
  };
}

await measure(4);
console.log(JSON.stringify({ root: ROOT, runs: RUNS, oneAtATime: await measure(1), eightInFlight: await measure(8) }));
await executor.close();
