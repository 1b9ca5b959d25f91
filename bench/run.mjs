#!/usr/bin/env node
// `npm run bench [-- options]`: measures our server and its baselines in one run and writes
// bench/results/{latest,bench-<time>}.{json,md,svg}. See bench/README.md.
//
// Process layout: this process is the load generator. Every server it measures (ours, the echo, the SDK 2.4 handler,
// the SDK 1.32.2 reference) is a child process started here on a free loopback port, and every in-process
// measurement (SQLite, TaskStore creates, pick-up, heap per task) runs in a child of its own, so no measurement
// shares an event loop, a heap or a SQLite cache with the load generator or with another measurement.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { cpus, loadavg, platform, release } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { OUR_CLI, RunContext } from './lib/context.mjs';
import { parseOptions, USAGE } from './lib/options.mjs';
import { summariseProfiles } from './lib/profile.mjs';
import { evaluate, markdown, writeResults } from './lib/report.mjs';
import { hint } from './suites/hint.mjs';
import { p1 } from './suites/p1.mjs';
import { p2 } from './suites/p2.mjs';
import { p3 } from './suites/p3.mjs';
import { p4 } from './suites/p4.mjs';
import { p5 } from './suites/p5.mjs';
import { p6 } from './suites/p6.mjs';
import { polling } from './suites/polling.mjs';

const BENCH = fileURLToPath(new URL('.', import.meta.url));
const ROOT = join(BENCH, '..');
const SUITES = { p1, hint, p2, p3, p4, p5, p6, polling };

/** Our server and tools run from dist/; build it when missing (an existing build is used as it is). */
function ensureBuilt() {
  if (existsSync(OUR_CLI)) return;
  process.stderr.write('dist/ is missing: npm run build\n');
  const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build failed');
}

function gitCommit() {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    return dirty ? `${commit} (src/ modified)` : commit;
  } catch {
    return 'unknown';
  }
}

async function main() {
  let options;
  try {
    options = parseOptions(process.argv.slice(2), join(BENCH, 'results'));
  } catch (error) {
    process.stderr.write(`${error.message}\n\n${USAGE}\n`);
    return 64;
  }
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  ensureBuilt();
  const profileDir = join(options.out, 'profiles');
  // Profiles of an earlier run would be summarised as this run's.
  if (options.profile) rmSync(profileDir, { recursive: true, force: true });
  const startedAt = new Date().toISOString();
  const loadBefore = loadavg();
  const context = new RunContext(options);
  let failure;
  try {
    for (const name of options.suites) {
      const suiteStarted = Date.now();
      process.stderr.write(`== ${name}\n`);
      await SUITES[name](context);
      process.stderr.write(`   (${((Date.now() - suiteStarted) / 1000).toFixed(1)} s)\n`);
    }
  } catch (error) {
    failure = error;
  } finally {
    context.cleanup();
  }

  const { ratios, goals } = evaluate(context.figures, context.concurrencyHigh);
  const profiles = options.profile && existsSync(profileDir) ? summariseProfiles(profileDir) : undefined;
  const meta = {
    startedAt,
    finishedAt: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    platform: `${platform()} ${release()}`,
    loadAverageBefore: loadBefore,
    loadAverageAfter: loadavg(),
    commit: gitCommit(),
    quick: options.quick,
    durationS: options.durationMs / 1000,
    warmupS: options.warmupMs / 1000,
    options,
    ...(failure ? { failure: String(failure.stack ?? failure) } : {}),
  };
  const result = { meta, figures: context.figures, ratios, goals, ...(profiles ? { profiles } : {}) };
  const written = writeResults(options.out, result);
  process.stdout.write(`\n${markdown(result)}\n`);
  process.stderr.write(`written: ${written.filter((path) => path.includes('latest')).join(', ')} (and timestamped copies)\n`);
  const withErrors = Object.entries(context.figures).filter(([, figure]) => figure.errors > 0);
  for (const [key, figure] of withErrors) process.stderr.write(`warning: ${key} saw ${figure.errors} errors: ${figure.firstError}\n`);
  if (failure) {
    process.stderr.write(`benchmark failed: ${failure.stack ?? failure}\n`);
    return 1;
  }
  return 0;
}

process.exitCode = await main();
