import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';

import { reaped } from './child-reaper.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** How long a process may take to say it runs. */
const START_TIMEOUT_MS = 20_000;

/**
 * Resolve when `pattern` appears in the process's stderr (`output()` so far, woken by each chunk); reject when it
 * exits first or does not print it within START_TIMEOUT_MS — and then kill it: a half-started process must not hold
 * its port and store (and CPU) for the rest of the run.
 */
function startedLine(child: ChildProcess, output: () => string, pattern: RegExp, what: string, timeoutMs = START_TIMEOUT_MS): Promise<void> {
  return new Promise((resolveStart, reject) => {
    const check = (): void => {
      if (pattern.test(output())) finish();
      else if (child.exitCode !== null || child.signalCode !== null)
        finish(new Error(`${what} exited early (${child.exitCode ?? child.signalCode}):\n${output()}`));
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      finish(new Error(`${what} did not start within ${timeoutMs} ms:\n${output()}`));
    }, timeoutMs);
    const finish = (error?: Error): void => {
      clearTimeout(timer);
      child.stderr?.off('data', check);
      child.off('exit', check);
      if (error) reject(error);
      else resolveStart();
    };
    // Registered after the caller's own 'data' listener, so `output()` already holds each chunk.
    child.stderr?.on('data', check);
    child.once('exit', check);
    check();
  });
}

/** How long a log line may take to reach the test after what it reports is visible elsewhere. */
const LOG_LINE_TIMEOUT_MS = 5_000;

/**
 * Resolve with the output once `pattern` is in it; reject (quoting the output) after `timeoutMs` or when the process
 * exits without it. The CLI's pino logger writes asynchronously (`pino.destination(2)`: SonicBoom with `sync`
 * false, each write handed to libuv's thread pool), so a line can reach the pipe after what it reports is visible in
 * the store or over HTTP — a test that saw the effect must wait for the line, not read `log()` at once (stop 41's CI:
 * the takeover was in the store, its log line not yet in the output). Banner lines (`process.stderr`, synchronous on
 * a pipe) are there as soon as the process printed them.
 */
export function waitForLogLine(child: ChildProcess, output: () => string, pattern: RegExp | string, timeoutMs: number): Promise<string> {
  const found = (): boolean => (typeof pattern === 'string' ? output().includes(pattern) : pattern.test(output()));
  if (found()) return Promise.resolve(output());
  return new Promise((resolveLine, reject) => {
    const check = (): void => {
      if (found()) finish();
    };
    // Its stderr closed (the process ended, everything it wrote read): the line will not come.
    const closed = (): void => finish(found() ? undefined : 'its stderr closed');
    const timer = setTimeout(() => finish(`not within ${timeoutMs} ms`), timeoutMs);
    const finish = (failure?: string): void => {
      clearTimeout(timer);
      child.stderr?.off('data', check);
      child.stderr?.off('close', closed);
      if (failure) reject(new Error(`log line ${String(pattern)} missing: ${failure}; the output:\n${output()}`));
      else resolveLine(output());
    };
    child.stderr?.on('data', check);
    child.stderr?.once('close', closed);
    if (child.stderr === null || child.stderr.closed) closed();
  });
}

/** A real `mcp-tasks serve` process (built `dist/`), for tests that kill and restart servers. */
export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Its stderr so far: the banner at once; pino's lines may lag what they report (see {@link ServerProcess.logLine}). */
  log(): string;
  /** Wait (5 s at most) until `pattern` is in its stderr, and return that stderr; rejects quoting it otherwise. */
  logLine(pattern: RegExp | string, timeoutMs?: number): Promise<string>;
  /** SIGKILL, no cleanup: leases stay held until they lapse. */
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Start `node dist/cli/main.js serve …extraArgs` on a port serve chooses (`--port 0`; or on `port`, to restart on the
 * same URL), with `env` added, and wait until it says it serves (its banner, which names the URL: the HTTP handler
 * is in place), optionally under `wrapper`. The helper never picks a free port itself: another test file's process could bind it between the
 * pick and serve's bind (stop 42's CI: "port … is already in use", exit 64).
 */
export async function startServerProcess(
  dataDir: string,
  extraArgs: string[] = [],
  env: Record<string, string> = {},
  port?: number,
  wrapper: string[] = [],
): Promise<ServerProcess> {
  // `wrapper`: a command that ends by exec'ing its arguments (e.g. `unshare -m sh -c '…; exec "$@"'`), so the child
  // signalled below is serve itself.
  const argv = [process.execPath, MAIN, 'serve', '--port', String(port ?? 0), '--data-dir', dataDir, '--log-level', 'warn', ...extraArgs];
  const [command, ...args] = [...wrapper, ...argv] as [string, ...string[]];
  const child = reaped(
    spawn(command, args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...env },
    }),
  );
  let output = '';
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  // serve prints its banner once its HTTP handler is in place (src/cli/serve.ts), with the port it bound.
  await startedLine(child, () => output, SERVING_BANNER, 'server');
  const url = SERVING_BANNER.exec(output)?.[1] as string;
  return {
    url,
    child,
    log: () => output,
    logLine: (pattern, timeoutMs = LOG_LINE_TIMEOUT_MS) => waitForLogLine(child, () => output, pattern, timeoutMs),
    async kill9() {
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * serve's banner line and the URL it serves (`mcp-tasks: serving http://127.0.0.1:PORT/mcp`), whole: up to its line
 * end, so a stderr chunk cut inside the URL does not match.
 */
export const SERVING_BANNER = /mcp-tasks: serving (http:\/\/\S+)\n/;

/**
 * The URL a `serve --port 0` process (any spawn of it whose stderr `output()` collects) names in its banner, once it
 * printed it; rejects when the process exits first or after `timeoutMs`.
 */
export async function bannerUrl(child: ChildProcess, output: () => string, timeoutMs = START_TIMEOUT_MS): Promise<string> {
  await startedLine(child, output, SERVING_BANNER, 'server', timeoutMs);
  return SERVING_BANNER.exec(output())?.[1] as string;
}

/** A real `mcp-tasks worker` process (built `dist/`). */
export interface WorkerProcess {
  child: ChildProcess;
  log(): string;
  /** See {@link ServerProcess.logLine}. */
  logLine(pattern: RegExp | string, timeoutMs?: number): Promise<string>;
  /** SIGKILL, no cleanup: its leases stay held until they lapse. */
  kill9(): Promise<void>;
  /** Send `signal` (default SIGTERM: drain) and wait for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Start `node dist/cli/main.js worker …args` with `env` added, and wait until it says it runs. */
export async function startWorkerProcess(args: string[], env: Record<string, string> = {}): Promise<WorkerProcess> {
  const child = reaped(spawn(process.execPath, [MAIN, 'worker', ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } }));
  let output = '';
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)));
  await startedLine(child, () => output, /mcp-tasks: worker \S+ running/, 'worker');
  return {
    child,
    log: () => output,
    logLine: (pattern, timeoutMs = LOG_LINE_TIMEOUT_MS) => waitForLogLine(child, () => output, pattern, timeoutMs),
    async kill9() {
      child.kill('SIGKILL');
      await exited;
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
