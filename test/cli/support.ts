/**
 * Running the real CLI (`dist/cli/main.js`) in a child process: an up-to-date build, and runners that capture exit
 * code, stdout and stderr.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { reaped } from '../helpers/child-reaper.js';

const ROOT = resolve(import.meta.dirname, '../..');
/** The built CLI entry point. */
export const MAIN = join(ROOT, 'dist/cli/main.js');
const LOCK = join(ROOT, 'dist/.test-build.lock');
const LOCK_STALE_MS = 120_000;

function newestSource(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((newest, entry) => {
    const path = join(dir, entry.name);
    return Math.max(newest, entry.isDirectory() ? newestSource(path) : entry.name.endsWith('.ts') ? statSync(path).mtimeMs : 0);
  }, 0);
}

function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * The CLI runs from dist: rebuild when any source is newer (tsc still emits when other folders have type errors).
 * Test files running in parallel build one at a time (a lock directory), so none runs a half-written dist.
 */
export function ensureBuilt(): void {
  const fresh = (): boolean => existsSync(MAIN) && statSync(MAIN).mtimeMs >= newestSource(join(ROOT, 'src'));
  if (fresh()) return;
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      const age = Date.now() - (statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > LOCK_STALE_MS) rmSync(LOCK, { recursive: true, force: true });
      else pause(100);
    }
  }
  try {
    if (!fresh()) spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'ignore' });
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
  if (!existsSync(join(ROOT, 'dist/client/index.js'))) throw new Error('build failed: dist/client/index.js is missing');
}

/** The outcome of one CLI run. */
export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A CLI process being run. */
export interface RunningCli {
  child: ChildProcess;
  done: Promise<Run>;
  /** Resolves with the first match of `pattern` in stderr so far or later; rejects when the CLI exits first. */
  stderrLine(pattern: RegExp): Promise<RegExpMatchArray>;
}

/** Runners for the CLI with `env` (read at each start, so a test may change it); stdin is not a terminal. */
export function cliRunner(env: NodeJS.ProcessEnv): { start(args: string[], cwd?: string): RunningCli; cli(args: string[], cwd?: string): Promise<Run> } {
  const start = (args: string[], cwd = ROOT): RunningCli => {
    const child = reaped(spawn(process.execPath, [MAIN, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] }));
    let stdout = '';
    let stderr = '';
    const waiters: Array<() => void> = [];
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      for (const wake of waiters.splice(0)) wake();
    });
    const done = new Promise<Run>((resolveRun) => child.on('close', (code) => resolveRun({ code, stdout, stderr })));
    const stderrLine = async (pattern: RegExp): Promise<RegExpMatchArray> => {
      for (;;) {
        const match = stderr.match(pattern);
        if (match) return match;
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`CLI exited before printing ${pattern}: ${stderr}`);
        await new Promise<void>((wake) => {
          waiters.push(wake);
          void done.then(() => wake());
        });
      }
    };
    return { child, done, stderrLine };
  };
  return { start, cli: (args, cwd) => start(args, cwd).done };
}

/**
 * The environment of a requestor CLI in a test: this process's, with its journal at `journal` and none of the
 * caller's `MCP_TASKS_URL` / `MCP_TASKS_TOKEN` (a developer's shell must not point the test elsewhere).
 */
export function requestorEnv(journal: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, MCP_TASKS_CLIENT_STATE: journal };
  delete env.MCP_TASKS_URL;
  delete env.MCP_TASKS_TOKEN;
  return env;
}
