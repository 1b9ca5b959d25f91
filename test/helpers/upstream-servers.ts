/**
 * Real MCP servers without tasks, for the gateway tests of `serve --upstream` (issue 28): the reference servers from
 * npm, pinned exactly in `tools/upstream-servers/package.json` and installed there by `npm ci --prefix
 * tools/upstream-servers` (by `.ci/run` beside the project's npm ci, else here on first use; npm registry only) —
 * never root dependencies. `tapped` puts the recording relay `test/fixtures/upstream-tap.mjs` in front of one.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const DIR = join(ROOT, 'tools', 'upstream-servers');
const TAP = join(ROOT, 'test', 'fixtures', 'upstream-tap.mjs');

function installed(name: string): string | undefined {
  const file = join(DIR, 'node_modules', ...name.split('/'), 'package.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version : undefined;
}

/**
 * The entry script of a pinned server package (`dist/index.js`), installed on first use.
 * @throws Error saying how to install it when `npm ci --prefix tools/upstream-servers` fails.
 */
function serverEntry(name: string): string {
  const pinned = (JSON.parse(readFileSync(join(DIR, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[name];
  if (installed(name) !== pinned) {
    const result = spawnSync('npm', ['ci', '--prefix', DIR, '--no-audit', '--no-fund'], { stdio: 'ignore', timeout: 300_000 });
    if (result.status !== 0 || installed(name) !== pinned)
      throw new Error(`${name}@${pinned} is not installed and 'npm ci --prefix tools/upstream-servers' failed (exit ${result.status}); run it by hand`);
  }
  return join(DIR, 'node_modules', ...name.split('/'), 'dist', 'index.js');
}

/** `@modelcontextprotocol/server-everything`'s entry script (run it with `stdio`). */
export function everythingServer(): string {
  return serverEntry('@modelcontextprotocol/server-everything');
}

/** `@modelcontextprotocol/server-filesystem`'s entry script (run it with the directories it may use). */
export function filesystemServer(): string {
  return serverEntry('@modelcontextprotocol/server-filesystem');
}

/** `<name>=stdio:'<word>' …`: each word single-quoted (none of ours holds a quote). */
export function stdioSpec(name: string, words: readonly string[]): string {
  return `${name}=stdio:${words.map((word) => `'${word}'`).join(' ')}`;
}

/**
 * `<name>=stdio:sh -c "'<word>' …; exit $?"`: the words run by a shell, as a launcher (`npx`, `sh -c`) runs a server
 * — the server is the shell's child, not ours. `; exit $?` keeps it so under a shell that would exec a lone command.
 */
export function shellSpec(name: string, words: readonly string[]): string {
  return `${name}=stdio:sh -c "${words.map((word) => `'${word}'`).join(' ')}; exit $?"`;
}

/** The words of `--upstream <name>=stdio:…` for server-everything over stdio, behind the tap when `log` is given. */
export function everythingStdio(name: string, log?: string): string {
  const server = [process.execPath, everythingServer(), 'stdio'];
  return stdioSpec(name, log === undefined ? server : [process.execPath, TAP, log, ...server]);
}

/** One JSON-RPC message the tap saw (see `test/fixtures/upstream-tap.mjs`). */
export interface TapEntry {
  dir: 'start' | 'in' | 'out' | 'eof' | 'exit';
  at: number;
  tap: number;
  server?: number;
  message?: { id?: number | string; method?: string; params?: Record<string, unknown>; result?: unknown; error?: unknown };
}

/**
 * Kill every upstream process recorded in `log` that has not exited, and its tap: an upstream whose gateway was killed
 * mid-operation exits only once that operation ends, and one waiting for an answer to its question never does, so
 * without this it outlives the test run.
 */
export function endUpstreams(log: string): void {
  const entries = tapEntries(log);
  const exited = new Set(entries.filter((entry) => entry.dir === 'exit').map((entry) => entry.tap));
  for (const { tap, server } of entries.filter((entry) => entry.dir === 'start' && !exited.has(entry.tap))) {
    for (const pid of [server, tap]) {
      try {
        if (pid !== undefined) process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}

/** Everything the taps writing to `log` saw so far. */
export function tapEntries(log: string): TapEntry[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as TapEntry);
}
