/**
 * Smoke test of the benchmark suite: `node bench/run.mjs --quick` runs suites against real child processes and
 * writes its three result files with every figure of them. No timing is asserted: the figures of a quick run mean
 * nothing. `npm test` runs P3 and P4 (about 10 s: the harness end to end); `npm run test:long` runs every suite
 * (about 3 minutes), so each figure of issues 4 and 9 is still produced by some tier.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { testPostgresUrl } from '../helpers/postgres.js';

const ROOT = resolve(import.meta.dirname, '../..');

/** Every figure of issues 4 and 9 at the default concurrency list (8,32), by the suite that measures it. */
const FIGURES_BY_SUITE: Record<string, string[]> = {
  p3: ['baseline.sqlite.singleRow', 'baseline.sqlite.batch100', 'p3.store.c32', 'p3.http.c32'],
  p4: ['p4.pickup'],
  p5: ['p5.heapPerTask', 'p5.heapPerRequest.v1', 'p5.heapPerRequest.v2'],
  p1: [
    'baseline.reference.roundTrip.c8',
    'baseline.reference.roundTrip.c32',
    'p1.v1.c8',
    'p1.v1.c32',
    'p1.v2.c8',
    'p1.v2.c32',
    'baseline.reference.blocking.c32',
    'p1.v1blocking.c32',
    'baseline.reference.honouring.c32',
    'p1.v1honouring.c32',
    'p1.v2honouring.c32',
  ],
  hint: ['hint.v1.0ms', 'hint.v1.50ms', 'hint.v1.2s', 'hint.v2.0ms', 'hint.v2.50ms', 'hint.v2.2s'],
  p2: ['baseline.echo.c32', 'baseline.sdk24.c32', 'baseline.reference.tasksGet.c32', 'p2.v1.c32', 'p2.v2.c32'],
  polling: ['polling.honouring', 'polling.mixed'],
  // P6 runs on the tests' PostgreSQL server (required, like every PostgreSQL test).
  p6: ['baseline.pg.singleRow.c32', 'p6.store.c32', 'p6.storeUnbatched.c32'],
};

/**
 * BENCH_SUITES: `all` (`npm run test:long`) runs every suite; otherwise a comma-separated list, by default P3 and P4
 * (`npm test`): a server process under a closed loop, two in-process measurements, the report files and goals.
 */
const SUITES = !process.env.BENCH_SUITES
  ? ['p3', 'p4']
  : process.env.BENCH_SUITES === 'all'
    ? Object.keys(FIGURES_BY_SUITE)
    : process.env.BENCH_SUITES.split(',');
const FIGURES = SUITES.flatMap((suite) => {
  const figures = FIGURES_BY_SUITE[suite];
  if (!figures) throw new Error(`BENCH_SUITES: unknown suite ${suite} (suites: ${Object.keys(FIGURES_BY_SUITE).join(', ')}, or all)`);
  return figures;
});
const EVERY_SUITE = SUITES.length === Object.keys(FIGURES_BY_SUITE).length;

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    const env = { ...process.env, ...(SUITES.includes('p6') ? { MCP_TASKS_TEST_PG_URL: testPostgresUrl() } : {}) };
    const child = spawn(process.execPath, [join(ROOT, 'bench', 'run.mjs'), ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('exit', (code) => resolveRun({ code, stdout, stderr }));
  });
}

describe(`npm run bench -- --quick${EVERY_SUITE ? '' : ` --only ${SUITES.join(',')}`}`, () => {
  const out = mkdtempSync(join(tmpdir(), 'bench-quick-'));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it(
    `runs ${EVERY_SUITE ? 'every suite' : SUITES.join(' and ')} and writes JSON, markdown and SVG with every figure, ratio and goal of ${EVERY_SUITE ? 'them' : 'those suites'}`,
    async () => {
      const { code, stdout, stderr } = await run(['--quick', '--out', out, ...(EVERY_SUITE ? [] : ['--only', SUITES.join(',')])]);
      expect(code, stderr).toBe(0);
      for (const extension of ['json', 'md', 'svg']) expect(existsSync(join(out, `latest.${extension}`))).toBe(true);

      const result = JSON.parse(readFileSync(join(out, 'latest.json'), 'utf8'));
      expect(result.meta.failure).toBeUndefined();
      expect(Object.keys(result.figures).sort()).toEqual([...FIGURES].sort());
      for (const key of FIGURES) {
        expect(typeof result.figures[key].value, key).toBe('number');
        expect(Number.isFinite(result.figures[key].value), key).toBe(true);
      }
      // Issue 9: no table hides a stall — every latency figure shows its maximum beside p50/p99.
      for (const [key, figure] of Object.entries(result.figures as Record<string, { p99Ms?: number | null; maxMs?: number | null }>)) {
        if (figure.p99Ms != null) expect(figure.maxMs, key).toBeGreaterThanOrEqual(figure.p99Ms);
      }
      for (const key of FIGURES.filter((name) => name.startsWith('hint.'))) {
        expect(result.figures[key].pollsPerTask, key).toBeGreaterThanOrEqual(1);
        expect(result.figures[key].goalMs, key).toBeGreaterThan(0);
      }
      expect(result.goals.length).toBeGreaterThan(0);
      // A goal on a measured figure has a verdict; one on a suite that did not run says so (pass: null).
      for (const goal of result.goals as Array<{ id: string; figure: string; pass: boolean | null; measured: string }>) {
        if (FIGURES.includes(goal.figure)) expect(typeof goal.pass, goal.id).toBe('boolean');
        else expect([goal.pass, goal.measured], goal.id).toEqual([null, 'not measured']);
      }
      expect(result.goals.some((goal: { pass: boolean | null }) => goal.pass !== null)).toBe(true);

      const table = readFileSync(join(out, 'latest.md'), 'utf8');
      for (const key of FIGURES) expect(table).toContain(`\`${key}\``);
      expect(stdout).toContain('| Goal | Target | Measured | Pass |');
      expect(table).toContain('| p50 ms | p99 ms | max ms |');
      expect(readFileSync(join(out, 'latest.svg'), 'utf8')).toMatch(/^<svg [^>]*>[\s\S]*<rect [\s\S]*<\/svg>\n$/);
    },
    EVERY_SUITE ? 600_000 : 120_000,
  ); // every suite: about 170 s on 2 quiet cores (longer beside the rest of a run); P3 + P4: about 10 s
});
