// tasks/get latency while a tool blocks its loop (issue 11 item 2): `mcp-tasks serve` with the isolated executor
// (default) against `--executor in-process` in the same run. Each mode: one busy_loop task spins for BLOCK_MS; a
// client sends tasks/get back to back (one at a time) until the task completes. Prints p50 / p99 / max latency and
// the count, for each mode, and the ratio of the maxima. Usage: npm run bench:blocking [-- BLOCK_MS]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const MAIN = join(ROOT, 'dist/cli/main.js');
const TOOLS = join(ROOT, 'test/fixtures/blocking-tools.mjs');
const BLOCK_MS = Number(process.argv[2] ?? 3000);

const freePort = () =>
  new Promise((ok) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
  });

let id = 0;
async function post(url, method, params) {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(params.taskId ? { 'mcp-name': params.taskId } : { 'mcp-name': params.name }),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: ++id,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
          'io.modelcontextprotocol/clientInfo': { name: 'bench-blocking', version: '0' },
        },
      },
    }),
  });
  const text = await response.text();
  const line = text.startsWith('{')
    ? text
    : text
        .split('\n')
        .find((l) => l.startsWith('data: '))
        ?.slice(6);
  return JSON.parse(line ?? '{}');
}

async function run(mode) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-blocking-'));
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [MAIN, 'serve', '--port', String(port), '--data-dir', dir, '--no-builtins', '--tools', TOOLS, '--executor', mode, '--log-level', 'warn'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const url = `http://127.0.0.1:${port}/mcp`;
  for (;;) {
    try {
      if ((await fetch(url.replace('/mcp', '/healthz'))).status < 500) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const created = await post(url, 'tools/call', { name: 'busy_loop', arguments: { log: join(dir, 'log'), ms: BLOCK_MS, delayMs: 100 } });
  const taskId = created.result?.taskId;
  if (!taskId) throw new Error(`no task: ${JSON.stringify(created)}`);
  const latencies = [];
  for (;;) {
    const started = performance.now();
    const got = await post(url, 'tasks/get', { taskId });
    latencies.push(performance.now() - started);
    if (got.result?.status !== 'working') break;
    // Polls faster than the server's hint are throttled by design: wait the hint, so only the answer is timed.
    await new Promise((r) => setTimeout(r, Number(got.result?.pollInterval ?? got.result?.pollIntervalMs ?? 100)));
  }
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return { mode, count: latencies.length, p50: at(0.5), p99: at(0.99), max: latencies.at(-1) };
}

const results = [];
for (const mode of ['isolated', 'in-process']) results.push(await run(mode));
console.log(`tasks/get while a tool busy-loops ${BLOCK_MS} ms (one at a time at the server's poll interval, until it completes)`);
for (const r of results)
  console.log(
    `  ${r.mode.padEnd(10)}  ${String(r.count).padStart(5)} gets  p50 ${r.p50.toFixed(1)} ms  p99 ${r.p99.toFixed(1)} ms  max ${r.max.toFixed(1)} ms`,
  );
console.log(`  max latency in-process / isolated: ${(results[1].max / results[0].max).toFixed(1)}×`);
