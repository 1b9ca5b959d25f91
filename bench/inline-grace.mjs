#!/usr/bin/env node
// The 2026-07-28 inline grace (issue 27 §5), `npm run bench:grace`: latency of short tools as a declaring client
// (Claude Code's loop) sees it — from `tools/call` until it holds the result — with `serve --inline-grace-ms 1000`
// (the default) against `--inline-grace-ms 0` (every call a task) in the same run. Without a result inline the
// client follows the task as Claude Code does: `tasks/get` at once, then after each answered hint. Each mode: a
// closed loop of CLIENTS clients for SECONDS s per tool, counting until the last started call ends. Prints p50 /
// p99 / max ms, calls/s, tasks/get per call, the share answered inline (each one a model turn saved: the model
// gets the result with the call instead of a placeholder and a later turn), and the ratio of the p50s.
// Usage: npm run bench:grace [-- SECONDS CLIENTS]; writes bench/results/<date>-inline-grace.md.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { startServer } from './lib/child.mjs';
import { ourServer } from './lib/context.mjs';
import { ModernClient, TERMINAL } from './lib/mcp.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const SECONDS = Number(process.argv[2] ?? 6);
const CLIENTS = Number(process.argv[3] ?? 8);
const TOOLS = [
  { key: 'noop', tool: { name: 'noop', arguments: {} } },
  { key: 'sleep_ms 50', tool: { name: 'sleep_ms', arguments: { ms: 50 } } },
  { key: 'sleep_ms 1500 (beyond the grace)', tool: { name: 'sleep_ms', arguments: { ms: 1500 } } },
];
const MODES = [
  { key: 'grace 1000 ms', args: ['--inline-grace-ms', '1000'] },
  { key: 'grace 0 (always a task)', args: ['--inline-grace-ms', '0'] },
];

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const percentile = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]);

/** One call as the client sees it: ms until the result, polls, whether it came inline. */
async function oneCall(client, tool) {
  const started = performance.now();
  const answer = await client.call('tools/call', tool);
  if (answer.resultType !== 'task') return { ms: performance.now() - started, polls: 0, inline: true };
  let polls = 0;
  let task = answer;
  for (let first = true; !TERMINAL.has(task.status); first = false) {
    if (!first) await sleep(task.pollIntervalMs + 5);
    task = await client.call('tasks/get', { taskId: answer.taskId });
    polls += 1;
  }
  return { ms: performance.now() - started, polls, inline: false };
}

async function measure(url, tool) {
  const samples = [];
  let errors = 0;
  const deadline = performance.now() + SECONDS * 1000;
  const startedAt = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      const client = new ModernClient(url);
      try {
        while (performance.now() < deadline) {
          try {
            samples.push(await oneCall(client, tool));
          } catch {
            errors += 1;
          }
        }
      } finally {
        client.close();
      }
    }),
  );
  const elapsedS = (performance.now() - startedAt) / 1000;
  const sorted = samples.map((sample) => sample.ms).sort((a, b) => a - b);
  return {
    calls: samples.length,
    callsPerSecond: samples.length / elapsedS,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.at(-1) ?? NaN,
    pollsPerCall: samples.reduce((sum, sample) => sum + sample.polls, 0) / Math.max(1, samples.length),
    inlineShare: samples.filter((sample) => sample.inline).length / Math.max(1, samples.length),
    errors,
  };
}

const results = [];
for (const mode of MODES) {
  const dataDir = mkdtempSync(join(tmpdir(), 'mcp-tasks-grace-'));
  const server = await startServer({ ...ourServer(dataDir, ['--concurrency', String(CLIENTS), ...mode.args]), name: `mcp-tasks ${mode.key}`, cwd: ROOT });
  try {
    for (const { key, tool } of TOOLS) {
      const figures = await measure(server.url, tool);
      results.push({ mode: mode.key, tool: key, ...figures });
      console.log(
        `${mode.key} · ${key}: p50 ${figures.p50Ms.toFixed(1)} ms, p99 ${figures.p99Ms.toFixed(1)} ms, max ${figures.maxMs.toFixed(1)} ms, ${figures.callsPerSecond.toFixed(1)} calls/s, inline ${(figures.inlineShare * 100).toFixed(0)} %, ${figures.errors} errors`,
      );
    }
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const fmt = (value, digits = 1) =>
  Number.isFinite(value) ? value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : 'n/a';
const rows = TOOLS.map(({ key }) => {
  const [graced, plain] = MODES.map((mode) => results.find((result) => result.mode === mode.key && result.tool === key));
  return (
    `| ${key} | ${fmt(graced.p50Ms)} / ${fmt(graced.p99Ms)} / **${fmt(graced.maxMs)}** | ${fmt(graced.inlineShare * 100, 0)} % | ${fmt(graced.pollsPerCall, 2)} | ` +
    `${fmt(plain.p50Ms)} / ${fmt(plain.p99Ms)} / **${fmt(plain.maxMs)}** | ${fmt(plain.pollsPerCall, 2)} | **${fmt(plain.p50Ms / graced.p50Ms, 2)}×** | ${graced.errors + plain.errors} |`
  );
});
const date = new Date().toISOString().slice(0, 10);
const { execFileSync } = await import('node:child_process');
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
const text = `# Inline grace on 2026-07-28 (issue 27 §5), \`npm run bench:grace\`, ${date}

Commit ${commit}, Node ${process.version}, ${CLIENTS} declaring clients per run, ${SECONDS} s per tool and mode, one
\`serve\` per mode on SQLite (\`--concurrency ${CLIENTS}\`); a call ends when the client holds the result (inline, or
after following the task: \`tasks/get\` at once, then after each hint + 5 ms, as Claude Code does).

| tool | grace 1 s: p50 / p99 / **max** ms | answered inline (model turns saved) | tasks/get per call | grace 0: p50 / p99 / **max** ms | tasks/get per call | p50 ratio (0 ÷ 1 s) | errors |
|---|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}
`;
const out = join(ROOT, 'bench/results', `${date}-inline-grace.md`);
writeFileSync(out, text);
console.log(`\n${text}\nwritten: ${out}`);
