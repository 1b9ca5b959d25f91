/** Scraping `/metrics` and the probes of real processes. */
import { join, resolve } from 'node:path';

import { cliRunner } from '../cli/support.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/** The progress tools (`stepped_job`) the operations tests serve. */
export const PROGRESS_TOOLS = resolve(import.meta.dirname, '../fixtures/progress-tools.mjs');

/**
 * A temp dir, CLI runners with a private journal and no URL/token from the environment, and the flags every process
 * of one test shares: one SQLite store, the progress tools, warn logs. Remove `temp` after the tests.
 */
export function operatorProcesses(prefix: string) {
  const temp = makeTempDir(prefix);
  const env: NodeJS.ProcessEnv = { ...process.env, MCP_TASKS_CLIENT_STATE: join(temp.dir, 'journal.json') };
  delete env.MCP_TASKS_URL;
  delete env.MCP_TASKS_TOKEN;
  const store = join(temp.dir, 'tasks.db');
  const shared = [
    '--store',
    store,
    '--data-dir',
    join(temp.dir, 'data'),
    '--no-builtins',
    '--tools',
    PROGRESS_TOOLS,
    '--log-level',
    'warn',
    '--root',
    temp.dir,
  ];
  return { temp, ...cliRunner(env), store, log: join(temp.dir, 'runs.log'), shared };
}

/** GET `url`; status and body text. */
export async function fetchText(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.text() };
}

/**
 * The value of metric `name` with (at least) `labels` in a Prometheus text exposition, summed over the series that
 * match; 0 when none does (a counter that never moved has no labelled series yet).
 */
export function metricValue(exposition: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((pair) => [pair[1], pair[2]]));
    if (Object.entries(labels).every(([key, value]) => present[key] === value)) sum += Number(match[3]);
  }
  return sum;
}

/** Poll `check` every 50 ms until it returns true, failing with `what` after `ms`. */
export async function until(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
