import { availableParallelism } from 'node:os';

import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

import SlowestFilesReporter from './test/helpers/slowest-files-reporter.js';

/**
 * Test tiers (docs/testing.md). Every `test/**\/*.test.ts` file belongs to exactly one of unit, contract and e2e —
 * e2e takes whatever the other two do not name, so a new file always runs in `npm test`. `long` runs some e2e files
 * again at full size and exists only when MCP_TASKS_TEST_LONG=1 (`npm run test:long`), so that running one file
 * with `npx vitest run <file>` never runs it twice.
 *
 * - unit: needs nothing but Node — in-process: SQLite files, servers on loopback HTTP inside the test process (the
 *   in-process files of test/e2e too); includes the task store contract on SQLite. `npm run test:unit`.
 * - contract: the same store contract and the store-level rules against a real PostgreSQL server.
 * - e2e: real processes (serve, worker, the CLI, real MCP clients, Chromium), several processes on one store,
 *   and the chaos, fuzz and benchmark smoke runs at `npm test` size. Two projects: `e2e`, whose files share a
 *   process per worker, and `e2e-alone` for the few (ALONE) that need one of their own.
 * - long: chaos (soak size), fuzz and the benchmark smoke at full size. `npm run test:long`.
 */

const UNIT = [
  'test/{architecture,auth,client,contract,core,execution,protocol,server,service,store,testing,upstream}/**/*.test.ts',
  'test/tools/**/!(pathological-lines).test.ts',
  'test/cli/{demo-corpus-command,invocation,json-layout,prompt,result-render,task-id-argument}.test.ts',
  'test/dashboard/dashboard-{http,jwt,operations}.test.ts',
  'test/ops/{canary,input-wait-metrics,kill-switch,kill-switch-control,tracing}.test.ts',
  'test/verify/verify-{units,seeded-defects}.test.ts',
  // End to end over real HTTP, but the server runs inside the test process (startTasksServer): no child process.
  'test/e2e/{audit,fallback-tool-scopes,fault-injection,http-edges,idempotency,immediate-response,input-bounds,input-v1,input-v2,large-results}.test.ts',
  'test/e2e/{lease-renewal-race,notifications,oauth-resource-server,owner-isolation,quotas-and-limits,scope-lost-mid-task,task-fallback-tools}.test.ts',
  'test/e2e/{v1-sdk-client,v2-http-wire,v2-official-client}.test.ts',
  // Not test/tools/pathological-lines: see ALONE.
];

/**
 * Files of the e2e tier that get a process of their own (project `e2e-alone`, isolated) instead of sharing one per
 * worker. test/tools/pathological-lines compares the times of its own code on short and long lines against a bound,
 * and in a worker shared with other files its ratios came closer to the bound (2 failures in 7 runs under load, none
 * in 6 alone).
 */
const ALONE = ['test/tools/pathological-lines.test.ts'];

/** Files under the unit folders that need PostgreSQL. */
const CONTRACT = [
  'test/store/postgres-*.test.ts',
  'test/store/audit-kind-filter.test.ts',
  'test/service/task-reads.test.ts',
  'test/execution/owner-state.test.ts',
];

/** Run again at full size by `long`. */
const LONG = ['test/chaos/**/*.test.ts', 'test/fuzz/**/*.test.ts', 'test/bench/bench-quick.test.ts', 'test/long/**/*.test.ts'];
/** Only in `long`: too slow or too heavy for `npm test` (Claude Code: a 356 MB install and real CLI runs). */
const LONG_ONLY = ['test/long/**/*.test.ts'];

/**
 * Full sizes of the LONG files (`npm run test:long`; each can be overridden from the environment). In e2e they run
 * at their own defaults: the same invariants on fewer messages, tasks, kills and benchmark suites.
 */
const LONG_SIZES = {
  FUZZ_MESSAGES: process.env.FUZZ_MESSAGES ?? '100000',
  FUZZ_HTTP_REQUESTS: process.env.FUZZ_HTTP_REQUESTS ?? '20000',
  CHAOS_TASKS: process.env.CHAOS_TASKS ?? '10000',
  CHAOS_KILLS: process.env.CHAOS_KILLS ?? '30',
  BENCH_SUITES: process.env.BENCH_SUITES ?? 'all',
};

const ALL = 'test/**/*.test.ts';

/** One file per core (at least two): the `long` tier's runs, each heavy on its own. */
const CPU_WORKERS = Math.max(2, availableParallelism() - 1);
/**
 * Files at a time in the unit, contract and e2e tiers: one more than CPU_WORKERS, as their time is mostly waiting.
 * A clean-clone `.ci/run` on 2 cores used 18 min 40 s of CPU in 19 min 22 s of wall time with two files at a time,
 * so half of the machine sat idle. The unit tier too: its in-process servers wait on timers, leases and polls far
 * more than they compute — 107-129 s of CPU in 141 s of wall with two files at a time on 2 cores (under 1 core);
 * three at a time took 114 s, the same CPU. MCP_TASKS_TEST_WORKERS overrides it (e.g. 2 on a machine shared with
 * other work).
 */
const WAITING_WORKERS = Number(process.env.MCP_TASKS_TEST_WORKERS ?? CPU_WORKERS + 1);

/**
 * vitest's order — group by group; in a group project by project, by name; in a project the files that failed or
 * took longest last time first, else the largest — with one change: in a group, the projects whose files get a
 * process each (contract, e2e-alone) start before the one whose files share a process per worker (e2e). By name,
 * e2e-alone came after e2e: its one 10 s file started last and ran on while the other workers had nothing left (a
 * clean clone has no durations from a last run). The e2e files stay together, as a worker keeps its process for the
 * next file only when that file is next in the queue.
 */
class SharedProcessesLastSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification): number => file.project.config.sequence.groupOrder * 2 + (file.project.config.isolate === false ? 1 : 0);
    // Array.prototype.sort is stable: vitest's order holds within each rank.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Servers the tests spawn (`serve`, `worker`) answer every 2026-07-28 task-optional call with a task, as before
    // the inline grace (issue 27 §5); the files that measure or test the grace set it themselves.
    env: { MCP_TASKS_INLINE_GRACE_MS: '0' },
    pool: 'forks',
    sequence: { sequencer: SharedProcessesLastSequencer },
    // Two files at a time even on two cores (vitest's default there is one): most e2e time is waiting on child
    // processes, leases and polls. Measured on this 2-core machine under load: 8 e2e files 492 s → 326 s wall with
    // the same CPU; the unit tier 248 s → 151 s. The unit, contract and e2e tiers set WAITING_WORKERS.
    maxWorkers: CPU_WORKERS,
    reporters: ['default', new SlowestFilesReporter(), ...(process.env.CI_JSON_REPORT ? [['json', { outputFile: process.env.CI_JSON_REPORT }] as const] : [])],
    projects: [
      // One process per worker runs file after file (isolate: false): the source is imported once per worker
      // instead of once per file, which halves the tier's CPU time. One more file at a time than cores
      // (WAITING_WORKERS): its files mostly wait too.
      { extends: true, test: { name: 'unit', include: UNIT, exclude: CONTRACT, isolate: false, maxWorkers: WAITING_WORKERS, sequence: { groupOrder: 0 } } },
      // Files that wait on child processes, PostgreSQL, leases and polls run in a second group, after the unit tier,
      // with one more file at a time than there are cores (WAITING_WORKERS).
      { extends: true, test: { name: 'contract', include: CONTRACT, maxWorkers: WAITING_WORKERS, sequence: { groupOrder: 1 } } },
      // e2e shares one process per worker too: its files spend their time in the processes they spawn, and a fresh
      // process per file imported the sources, the SDKs and the helpers again each time (about a second of CPU per
      // file, 66 files). A file must leave nothing behind; what it spawned and did not stop is killed at its end
      // (reap-after-file). ALONE: the files that need a process of their own.
      {
        extends: true,
        test: {
          name: 'e2e',
          include: [ALL],
          exclude: [...UNIT, ...CONTRACT, ...LONG_ONLY, ...ALONE],
          isolate: false,
          setupFiles: ['test/helpers/reap-after-file.ts'],
          maxWorkers: WAITING_WORKERS,
          sequence: { groupOrder: 1 },
        },
      },
      { extends: true, test: { name: 'e2e-alone', include: ALONE, maxWorkers: WAITING_WORKERS, sequence: { groupOrder: 1 } } },
      ...(process.env.MCP_TASKS_TEST_LONG === '1'
        ? [{ extends: true, test: { name: 'long', include: LONG, env: LONG_SIZES, sequence: { groupOrder: 2 } } }]
        : []),
    ],
  },
});
