import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { postModern } from './wire.js';

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

/** A real `mcp-tasks serve` process (built `dist/`), for tests that kill and restart servers. */
export interface ServerProcess {
  url: string;
  child: ChildProcess;
  log(): string;
  /** SIGKILL, no cleanup: leases stay held until they lapse. */
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Start `node dist/cli/main.js serve …extraArgs` on a free port (or `port`, to restart on the same URL), with `env`
 * added, and wait until it answers.
 */
export async function startServerProcess(dataDir: string, extraArgs: string[] = [], env: Record<string, string> = {}, port?: number): Promise<ServerProcess> {
  port ??= await freePort();
  const child = spawn(process.execPath, [MAIN, 'serve', '--port', String(port), '--data-dir', dataDir, '--log-level', 'warn', ...extraArgs], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
  });
  let output = '';
  child.stderr?.on('data', (chunk) => (output += chunk));
  const url = `http://127.0.0.1:${port}/mcp`;
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}):\n${output}`);
    try {
      // 401: up, and authenticating (the probe has no token).
      const { status } = await postModern(url, 'server/discover');
      if (status === 200 || status === 401) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      // Never leave a half-started server behind: it would hold its port and store for the rest of the run.
      child.kill('SIGKILL');
      throw new Error(`server did not start:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    child,
    log: () => output,
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

/** A real `mcp-tasks worker` process (built `dist/`). */
export interface WorkerProcess {
  child: ChildProcess;
  log(): string;
  /** SIGKILL, no cleanup: its leases stay held until they lapse. */
  kill9(): Promise<void>;
  /** Send `signal` (default SIGTERM: drain) and wait for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Start `node dist/cli/main.js worker …args` with `env` added, and wait until it says it runs. */
export async function startWorkerProcess(args: string[], env: Record<string, string> = {}): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [MAIN, 'worker', ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  let output = '';
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)));
  const deadline = Date.now() + 20_000;
  while (!/mcp-tasks: worker \S+ running/.test(output)) {
    if (child.exitCode !== null) throw new Error(`worker exited early (${child.exitCode}):\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`worker did not start:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    child,
    log: () => output,
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
