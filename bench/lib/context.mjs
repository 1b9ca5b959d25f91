// What every suite gets: the measured targets, fresh data directories, the load generator with the run's timings,
// and the place figures are recorded.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { runMeasurement, startServer } from './child.mjs';
import { closedLoop } from './load.mjs';

const BENCH = fileURLToPath(new URL('..', import.meta.url));
const ROOT = join(BENCH, '..');
export const OUR_CLI = join(ROOT, 'dist', 'cli', 'main.js');
const TOOLS = join(BENCH, 'tools.mjs');

/** `mcp-tasks serve` (dist/) with the benchmark tools on the database in `dataDir`, for `startServer`. */
export function ourServer(dataDir, extraArgs = []) {
  return {
    name: 'mcp-tasks',
    script: OUR_CLI,
    args: (port) => ['serve', '--port', String(port), '--data-dir', dataDir, '--no-builtins', '--tools', TOOLS, '--log-level', 'warn', ...extraArgs],
  };
}

/**
 * A figure from a closed-loop result: `value` is the op rate (every op started in the window, over the time until the
 * last of them ended), plus latency p50/p99/max, errors and server CPU per op.
 */
export function loadFigure(label, unit, result, extra = {}) {
  return {
    label,
    unit,
    value: result.rate,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
    maxMs: result.maxMs,
    drainMs: result.drainMs,
    errors: result.errors,
    ...(result.firstError ? { firstError: result.firstError } : {}),
    cpuUsPerOp: result.cpuUsPerOp,
    cpuUsPerRequest: result.cpuUsPerRequest,
    requestsPerOp: result.ops > 0 ? result.requests / result.ops : null,
    serverRssBytes: result.serverRssBytes,
    serverLoopDelay: result.serverLoopDelay,
    ...extra,
  };
}

export class RunContext {
  /** Figures by key, in the order they were measured. */
  figures = {};
  #root;

  constructor(options) {
    this.options = options;
    // Databases live in the OS temp directory (set TMPDIR to measure another disk); removed by `cleanup()`.
    this.#root = mkdtempSync(join(tmpdir(), 'mcp-tasks-bench-'));
  }

  get concurrencyHigh() {
    return Math.max(...this.options.concurrency);
  }

  get concurrencyLow() {
    return Math.min(...this.options.concurrency);
  }

  record(key, figure) {
    this.figures[key] = figure;
    const rate = Number.isFinite(figure.value) ? figure.value.toFixed(figure.value < 100 ? 2 : 0) : String(figure.value);
    const latency =
      figure.p99Ms != null ? `  p50 ${figure.p50Ms.toFixed(2)} ms  p99 ${figure.p99Ms.toFixed(2)} ms  max ${figure.maxMs?.toFixed(2) ?? '?'} ms` : '';
    const errors = figure.errors ? `  ERRORS ${figure.errors} (${figure.firstError ?? ''})` : '';
    process.stderr.write(`  ${key}: ${rate} ${figure.unit}${latency}${errors}\n`);
  }

  /** A fresh directory for one server's or measurement's database. */
  dataDir() {
    return mkdtempSync(join(this.#root, 'data-'));
  }

  /** Our server: `mcp-tasks serve` with the benchmark tools on a fresh database (`extraArgs` are serve flags). */
  ours(extraArgs = []) {
    // `--inline-grace-ms 0`: these suites measure the task path, which a 2026-07-28 noop would otherwise skip
    // (issue 27 §5; bench/inline-grace.mjs measures the grace). A later `--inline-grace-ms` in extraArgs wins.
    return ourServer(this.dataDir(), ['--inline-grace-ms', '0', ...extraArgs]);
  }

  /** A baseline server from bench/servers (`echo`, `sdk24-noop`, `reference-sdk132`). */
  baseline(name) {
    return { name, script: join(BENCH, 'servers', `${name}.mjs`), args: (port) => [String(port)] };
  }

  /**
   * Start `target`, run `body(server)`, always stop it. With `--profile`, a server started with a `profile` name
   * writes a V8 CPU profile `<out>/profiles/<profile>.cpuprofile` when it exits.
   */
  async withServer(target, body, { profile } = {}) {
    const nodeArgs = [];
    if (this.options.profile && profile) {
      const dir = join(this.options.out, 'profiles');
      mkdirSync(dir, { recursive: true });
      nodeArgs.push('--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-name', `${profile}.cpuprofile`);
    }
    const server = await startServer({ ...target, nodeArgs, cwd: ROOT });
    try {
      return await body(server);
    } finally {
      await server.stop();
    }
  }

  /** A closed loop with the run's warm-up and duration against `server`. */
  load(server, loop) {
    return closedLoop({ warmupMs: this.options.warmupMs, durationMs: this.options.durationMs, server, ...loop });
  }

  /** An in-process measurement script of bench/inproc, in its own process, on a fresh data directory. */
  measure(name, options) {
    return runMeasurement(join(BENCH, 'inproc', `${name}.mjs`), { dir: this.dataDir(), ...options }, { cwd: ROOT });
  }

  cleanup() {
    rmSync(this.#root, { recursive: true, force: true });
  }
}
