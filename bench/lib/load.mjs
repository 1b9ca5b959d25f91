// Load generation and the arithmetic on its samples. The closed loop: N clients, each on its own keep-alive
// connection, each starting its next iteration as soon as the previous one finished (no think time), first for a
// warm-up (discarded), then for the measured window. Every iteration that STARTS inside the window is counted and
// waited for, and the rate divides them by the time until the last of them ended: a stalled round trip stretches
// the denominator instead of silently dropping out of the count. Server CPU time is sampled over IPC at the
// window's start and when its last iteration ended.
import { performance } from 'node:perf_hooks';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Iterations of the window still running this long after it closed are cut off and counted as errors. */
const DRAIN_LIMIT_MS = 30_000;

/** Percentile (nearest rank) of an ascending array, or null when empty. */
function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Summary of samples (latencies in ms, or counts): p50/p90/p99/max and the mean. */
export function latencySummary(samples) {
  const sorted = Float64Array.from(samples).sort();
  const mean = sorted.length ? sorted.reduce((sum, value) => sum + value, 0) / sorted.length : null;
  return {
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.length ? sorted[sorted.length - 1] : null,
    mean,
  };
}

/** Server CPU µs per unit of work between two `usage()` samples. */
function cpuPer(before, after, units) {
  if (!before || !after || units === 0) return null;
  const micros = after.cpu.user - before.cpu.user + (after.cpu.system - before.cpu.system);
  return micros / units;
}

/**
 * Run a closed loop.
 * - `setup(index)` → per-client state (sessions, tasks), made before the clock starts and not measured;
 * - `iteration(state, sample)` → the number of HTTP requests it made (default 1); a throw counts as an error;
 *   `sample(name, value)` records a named sample of its own (kept only for iterations started in the window);
 * - `teardown(state)` closes the client;
 * - `server` (a ServerChild, or {@link thisProcess}) is sampled for CPU, RSS and event-loop delay at the window's edges.
 * Counted: every iteration started inside the window; `seconds` runs from the window's start until the last of
 * them ended (at least the window). One still running {@link DRAIN_LIMIT_MS} after the window is an error whose
 * latency is the time until it was cut off, so `maxMs` shows the stall.
 * @returns {{ops, seconds, rate, requests, requestRate, errors, firstError, unfinished, p50Ms, p90Ms, p99Ms, maxMs, drainMs, cpuUsPerOp, cpuUsPerRequest, serverRssBytes, serverLoopDelay, samples}}
 */
export async function closedLoop({ clients, setup, iteration, teardown, warmupMs, durationMs, server }) {
  const states = await Promise.all(Array.from({ length: clients }, (_, index) => setup(index)));
  // Without a warm-up the first iterations count (runs shorter than one round trip still measure something).
  let phase = warmupMs > 0 ? 'warmup' : 'measure';
  let before = phase === 'measure' ? await server?.usage({ resetLoopDelay: true }) : undefined;
  let started = performance.now();
  const latencies = [];
  const named = new Map();
  const keep = (name, value) => {
    if (!named.has(name)) named.set(name, []);
    named.get(name).push(value);
  };
  const ignore = () => {};
  let ops = 0;
  let requests = 0;
  let errors = 0;
  let firstError;
  let lastEnd = 0;
  /** Start times of counted iterations still running. */
  const running = new Set();

  const worker = async (state) => {
    while (phase === 'warmup' || phase === 'measure') {
      const counted = phase === 'measure';
      const started = performance.now();
      const token = { started };
      if (counted) running.add(token);
      try {
        const made = (await iteration(state, counted ? keep : ignore)) ?? 1;
        if (counted && running.delete(token)) {
          const ended = performance.now();
          latencies.push(ended - started);
          lastEnd = Math.max(lastEnd, ended);
          ops += 1;
          requests += made;
        }
      } catch (error) {
        if (counted && running.delete(token)) {
          lastEnd = Math.max(lastEnd, performance.now());
          errors += 1;
          firstError ??= error instanceof Error ? error.message : String(error);
        }
        if (phase === 'done') break;
        // A refused or dropped connection fails at once; do not spin on it.
        await sleep(10);
      }
    }
  };

  const workers = states.map((state) => worker(state));
  if (phase === 'warmup') {
    await sleep(warmupMs);
    before = await server?.usage({ resetLoopDelay: true });
    started = performance.now();
    phase = 'measure';
  }
  await sleep(durationMs);
  phase = 'drain';
  const windowEnd = performance.now();
  // Iterations started in the window finish and count; a hung server is cut off so the run always ends.
  let timer;
  const cutOff = new Promise((resolve) => (timer = setTimeout(resolve, DRAIN_LIMIT_MS, false)));
  const settled = await Promise.race([Promise.all(workers).then(() => true), cutOff]);
  clearTimeout(timer);
  let unfinished = 0;
  if (!settled) {
    const cut = performance.now();
    for (const token of running) {
      latencies.push(cut - token.started);
      unfinished += 1;
    }
    running.clear();
    errors += unfinished;
    firstError ??= `${unfinished} round trips unfinished ${DRAIN_LIMIT_MS / 1000} s after the window`;
    lastEnd = cut;
  }
  const end = Math.max(lastEnd, windowEnd);
  const after = await server?.usage({ resetLoopDelay: true });
  phase = 'done';
  await Promise.all(states.map((state) => teardown?.(state)));
  if (!settled) await Promise.all(workers);
  const seconds = (end - started) / 1000;
  return {
    ops,
    seconds,
    rate: ops / seconds,
    requests,
    requestRate: requests / seconds,
    errors,
    firstError,
    unfinished,
    ...latencySummary(latencies),
    drainMs: end - windowEnd,
    cpuUsPerOp: cpuPer(before, after, ops),
    cpuUsPerRequest: cpuPer(before, after, requests),
    serverRssBytes: after?.memory.rss ?? null,
    serverLoopDelay: after?.loop ?? null,
    samples: Object.fromEntries([...named].map(([name, values]) => [name, latencySummary(values)])),
  };
}

/** The `server` argument of {@link closedLoop} for measurements that run inside the measuring process itself. */
export const thisProcess = {
  usage: async () => ({ cpu: process.cpuUsage(), memory: process.memoryUsage() }),
};

/**
 * Full collections with turns in between, so finalizers and weak maps release what they hold (needs `--expose-gc`),
 * then `process.memoryUsage()`.
 */
export async function settledMemory() {
  for (let i = 0; i < 4; i += 1) {
    globalThis.gc?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage();
}

/**
 * Run exactly `total` iterations spread over one worker per client state (a closed loop bounded by count, not
 * time), for measurements that need a known number of requests between two memory samples.
 * @returns {{seconds, rate, errors, firstError}}
 */
export async function fixedCount({ total, states, iteration }) {
  let issued = 0;
  let errors = 0;
  let firstError;
  const started = performance.now();
  await Promise.all(
    states.map(async (state) => {
      while (issued < total) {
        issued += 1;
        try {
          await iteration(state);
        } catch (error) {
          errors += 1;
          firstError ??= error instanceof Error ? error.message : String(error);
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { seconds, rate: total / seconds, errors, firstError };
}

/**
 * Memory growth per unit of work from settled samples taken after every equal segment of work. The median of the
 * segment deltas is the estimate: a leak grows every segment alike, while one-off steps (V8 flushing unused
 * bytecode, a cache filling once) move a single segment and are ignored. `overall` is the plain end-minus-start.
 */
export function growthPerUnit(samples, field, unitsPerSegment) {
  const deltas = samples
    .slice(1)
    .map((sample, index) => sample[field] - samples[index][field])
    .sort((a, b) => a - b);
  const middle = deltas.length / 2;
  const median = deltas.length % 2 === 1 ? deltas[Math.floor(middle)] : (deltas[middle - 1] + deltas[middle]) / 2;
  return {
    median: median / unitsPerSegment,
    overall: (samples[samples.length - 1][field] - samples[0][field]) / (unitsPerSegment * deltas.length),
  };
}
