// Child processes of the benchmark. Every measured server runs in its own process so that the load generator (the
// driver process) never shares an event loop with it: on a 2-core machine the server gets one core, the driver the
// other, and the server's CPU time is read from its own `process.cpuUsage()` over IPC (see probe.mjs).
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';

import { HttpConnection } from './http-client.mjs';

const PROBE = new URL('./probe.mjs', import.meta.url).href;

/** A free TCP port on loopback. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves when `child` exits; the exit code (or signal name). */
function exited(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode ?? child.signalCode);
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
}

/** A server process under measurement. */
export class ServerChild {
  #child;
  #log = '';
  #nextProbe = 1;
  #waiting = new Map();

  constructor(name, child, url) {
    this.name = name;
    this.url = url;
    this.#child = child;
    child.stderr.on('data', (chunk) => {
      // Keep the tail only: a chatty server must not grow the driver's memory.
      this.#log = (this.#log + chunk).slice(-8000);
    });
    child.on('message', (message) => {
      const waiter = this.#waiting.get(message?.probeId);
      this.#waiting.delete(message?.probeId);
      waiter?.resolve(message);
    });
    // A server that dies mid-run must fail the run, not leave it waiting for an answer.
    child.on('exit', (code, signal) => {
      for (const waiter of this.#waiting.values()) waiter.reject(new Error(`${name} exited (${code ?? signal}):\n${this.#log}`));
      this.#waiting.clear();
    });
  }

  get log() {
    return this.#log;
  }

  /**
   * `{cpu: process.cpuUsage(), memory: process.memoryUsage(), loop: {p50Ms, p99Ms, maxMs}}` of the server process;
   * `loop` is its event-loop delay since the last `{resetLoopDelay: true}` sample (the start of a measured window).
   */
  usage({ resetLoopDelay = false } = {}) {
    return this.#ask({ probe: 'usage', resetLoopDelay });
  }

  /** The same after forcing full collections (the server runs with `--expose-gc`). */
  gc() {
    return this.#ask({ probe: 'gc' });
  }

  #ask(question) {
    const probeId = this.#nextProbe++;
    return new Promise((resolve, reject) => {
      this.#waiting.set(probeId, { resolve, reject });
      this.#child.send({ ...question, probeId }, (error) => error && reject(error));
    });
  }

  /** SIGTERM, then SIGKILL after 10 s. Our server exits cleanly on SIGTERM, which also writes a `--cpu-prof` profile. */
  async stop() {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    this.#child.kill('SIGTERM');
    let timer;
    const timeout = new Promise((resolve) => (timer = setTimeout(resolve, 10_000, 'timeout')));
    const outcome = await Promise.race([exited(this.#child), timeout]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      this.#child.kill('SIGKILL');
      await exited(this.#child);
    }
  }
}

/**
 * Start `node --expose-gc --import probe.mjs [nodeArgs] script ...args(port)` and wait until it answers HTTP on
 * `http://127.0.0.1:<port>/mcp` (any status but 503 counts as up: our `serve` binds its port before its store is
 * open and answers 503 until then).
 */
export async function startServer({ name, script, args, nodeArgs = [], cwd }) {
  const port = await freePort();
  const child = spawn(process.execPath, ['--expose-gc', '--import', PROBE, ...nodeArgs, script, ...args(port)], {
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    cwd,
  });
  const server = new ServerChild(name, child, `http://127.0.0.1:${port}/mcp`);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited early (${child.exitCode}):\n${server.log}`);
    const connection = new HttpConnection(`http://127.0.0.1:${port}`);
    try {
      const answer = await connection.request('POST', '/mcp', { 'content-type': 'application/json' }, '{}');
      if (answer.status !== 503) return server;
      if (Date.now() > deadline) throw new Error('still answering 503');
      await delay(50);
    } catch {
      if (Date.now() > deadline) {
        await server.stop();
        throw new Error(`${name} did not start:\n${server.log}`);
      }
      await delay(50);
    } finally {
      connection.close();
    }
  }
}

/**
 * Run an in-process measurement script (`node --expose-gc script '<json options>'`) in its own process and return
 * the JSON it prints as its last stdout line. Separate processes keep one measurement's heap and SQLite caches out
 * of the next one.
 */
export async function runMeasurement(script, options, { cwd } = {}) {
  const child = spawn(process.execPath, ['--expose-gc', script, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'pipe'], cwd });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr = (stderr + chunk).slice(-8000)));
  const code = await exited(child);
  if (code !== 0) throw new Error(`${script} failed (${code}):\n${stderr}`);
  const last = stdout.trim().split('\n').pop();
  return JSON.parse(last);
}
