#!/usr/bin/env node
// The overhead of `serve --upstream` (issue 28), `npm run bench:upstream`: the same call of the real
// @modelcontextprotocol/server-everything (pinned in tools/upstream-servers; `echo`, and a 1 s long-running operation),
// made directly by the official SDK client over stdio — the baseline, the same run — and through the gateway: inline
// (a 2026-07-28 declaring client, answered within the inline grace) and as a task (`--inline-grace-ms 0`: a durable
// task, followed with tasks/get as Claude Code follows it). Each mode: a closed loop of CLIENTS clients for SECONDS s,
// counting until the last started call ends. A native `noop` tool (bench/tools.mjs) in the same gateway process
// separates what forwarding costs from what a durable call costs in any mcp-tasks tool. Prints p50 / p99 / max ms,
// calls/s and the ratio of each p50 to the direct baseline's. Usage: npm run bench:upstream [-- SECONDS CLIENTS]; writes
// bench/results/<date>-upstream-overhead.md.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { startServer } from './lib/child.mjs';
import { OUR_CLI } from './lib/context.mjs';
import { latencySummary } from './lib/load.mjs';
import { ModernClient, TERMINAL } from './lib/mcp.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const SECONDS = Number(process.argv[2] ?? 6);
const CLIENTS = Number(process.argv[3] ?? 8);
const EVERYTHING = join(ROOT, 'tools/upstream-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const CALLS = [
  { key: 'echo', name: 'echo', arguments: { message: 'hi' } },
  { key: 'long-running operation, 1 s', name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 2 } },
];

if (!existsSync(EVERYTHING)) {
  console.error('server-everything is not installed: npm ci --prefix tools/upstream-servers');
  process.exit(1);
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** CLIENTS loops of `one()` for SECONDS s; every call started in the window counts, until the last one ends. */
async function closedLoop(one) {
  const samples = [];
  let errors = 0;
  const deadline = performance.now() + SECONDS * 1000;
  const startedAt = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, index) => {
      while (performance.now() < deadline) {
        const started = performance.now();
        try {
          await one(index);
          samples.push(performance.now() - started);
        } catch {
          errors += 1;
        }
      }
    }),
  );
  const elapsedS = (performance.now() - startedAt) / 1000;
  const { p50Ms, p99Ms, maxMs } = latencySummary(samples);
  // No sample (every call failed): NaN, which the report prints as n/a.
  return { calls: samples.length, callsPerSecond: samples.length / elapsedS, p50Ms: p50Ms ?? NaN, p99Ms: p99Ms ?? NaN, maxMs: maxMs ?? NaN, errors };
}

/** The baseline: the official client straight to the upstream over stdio, one connection as the gateway has. */
async function direct(call) {
  const client = new Client({ name: 'bench-direct', version: '0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], stderr: 'ignore' }));
  try {
    await client.listTools();
    return await closedLoop(async () => {
      const result = await client.callTool({ name: call.name, arguments: call.arguments }, { timeout: 60_000 });
      if (result.isError) throw new Error('isError');
    });
  } finally {
    await client.close();
  }
}

/** Through the gateway: one declaring client per loop; a task is followed until terminal (tasks/get, then after each hint). */
async function gateway(url, call, name = `everything_${call.name}`) {
  const clients = Array.from({ length: CLIENTS }, () => new ModernClient(url));
  try {
    return await closedLoop(async (index) => {
      const client = clients[index];
      const answer = await client.call('tools/call', { name, arguments: call.arguments });
      if (answer.resultType !== 'task') return;
      let task = answer;
      for (let first = true; !TERMINAL.has(task.status); first = false) {
        if (!first) await sleep(task.pollIntervalMs + 5);
        task = await client.call('tasks/get', { taskId: answer.taskId });
      }
      if (task.status !== 'completed') throw new Error(task.status);
    });
  } finally {
    for (const client of clients) client.close();
  }
}

const MODES = [
  { key: 'gateway, inline (grace 1 s)', args: [] },
  { key: 'gateway, task (grace 0)', args: ['--inline-grace-ms', '0'] },
];

const results = [];
for (const call of CALLS) {
  const figures = await direct(call);
  results.push({ mode: 'direct (baseline)', call: call.key, ...figures });
  console.log(`direct · ${call.key}: p50 ${figures.p50Ms.toFixed(1)} ms, max ${figures.maxMs.toFixed(1)} ms, ${figures.callsPerSecond.toFixed(1)} calls/s`);
}
for (const mode of MODES) {
  const dataDir = mkdtempSync(join(tmpdir(), 'mcp-tasks-upstream-bench-'));
  const server = await startServer({
    name: `mcp-tasks ${mode.key}`,
    script: OUR_CLI,
    args: (port) => [
      'serve',
      '--port',
      String(port),
      '--data-dir',
      dataDir,
      '--no-builtins',
      '--tools',
      join(ROOT, 'bench/tools.mjs'),
      '--log-level',
      'warn',
      '--concurrency',
      String(CLIENTS),
      '--upstream',
      `everything=stdio:'${process.execPath}' '${EVERYTHING}' stdio`,
      ...mode.args,
    ],
    cwd: ROOT,
  });
  try {
    const native = await gateway(server.url, { arguments: {} }, 'noop');
    results.push({ mode: mode.key, call: 'native noop (no upstream)', ...native });
    console.log(`${mode.key} · native noop: p50 ${native.p50Ms.toFixed(1)} ms, ${native.callsPerSecond.toFixed(1)} calls/s`);
    for (const call of CALLS) {
      const figures = await gateway(server.url, call);
      results.push({ mode: mode.key, call: call.key, ...figures });
      console.log(
        `${mode.key} · ${call.key}: p50 ${figures.p50Ms.toFixed(1)} ms, max ${figures.maxMs.toFixed(1)} ms, ${figures.callsPerSecond.toFixed(1)} calls/s, ${figures.errors} errors`,
      );
    }
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const fmt = (value, digits = 1) =>
  Number.isFinite(value) ? value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : 'n/a';
const rows = results.map((result) => {
  const base = results.find((other) => other.mode === 'direct (baseline)' && other.call === result.call);
  const ratio = base ? `**${fmt(result.p50Ms / base.p50Ms, 2)}×**` : '—';
  return `| ${result.call} | ${result.mode} | ${fmt(result.p50Ms)} / ${fmt(result.p99Ms)} / **${fmt(result.maxMs)}** | ${fmt(result.callsPerSecond)} | ${ratio} | ${result.errors} |`;
});
const date = new Date().toISOString().slice(0, 10);
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
const text = `# Overhead of serve --upstream (issue 28), \`npm run bench:upstream\`, ${date}

Commit ${commit}, Node ${process.version}, ${CLIENTS} clients per run, ${SECONDS} s per call and mode; the upstream is
server-everything 2026.8.31 over stdio. Baseline: the official client (2.4) straight to it over stdio, one connection.
Gateway: one \`serve --upstream\` per mode on SQLite (\`--concurrency ${CLIENTS}\`), declaring 2026-07-28 clients over
HTTP; a task is followed with \`tasks/get\` at once, then after each hint + 5 ms. A call ends when the client holds the
result; calls/s counts every call started in the window until the last one ended. \`native noop\` is a tool of the
gateway itself (bench/tools.mjs), no upstream: what any durable mcp-tasks call costs on this machine.
Load average at the start: ${loadavg()
  .map((value) => value.toFixed(1))
  .join(', ')} on ${cpus().length} cores.

| call | mode | p50 / p99 / **max** ms | calls/s | p50 ÷ baseline p50 | errors |
|---|---|---:|---:|---:|---:|
${rows.join('\n')}
`;
const out = join(ROOT, 'bench/results', `${date}-upstream-overhead.md`);
writeFileSync(out, text);
console.log(`\n${text}\nwritten: ${out}`);
