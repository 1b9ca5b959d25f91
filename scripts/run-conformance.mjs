#!/usr/bin/env node
// Runs the official MCP conformance suite's tasks scenarios against our fixture server, one scenario per
// invocation, and judges each checks.json itself: any FAILURE or SKIPPED check, or a missing file, fails the run.
// The suite needs Node 22, so it runs with the `node` package installed in tools/conformance (the project stays
// on Node 20). Usage: node scripts/run-conformance.mjs [--scenario name ...] [--keep-results]
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { freePort } from './free-port.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const toolsDir = join(root, 'tools', 'conformance');
const pinned = JSON.parse(readFileSync(join(toolsDir, 'package.json'), 'utf8')).devDependencies;
const suiteEntry = join(toolsDir, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const node22 = join(toolsDir, 'node_modules', 'node', 'bin', 'node');

/** The scenarios this project must pass; `tasks-status-notifications` is a stub the suite always skips. */
export const SCENARIOS = [
  'tasks-lifecycle',
  'tasks-capability-negotiation',
  'tasks-wire-fields',
  'tasks-request-state-removal',
  'tasks-request-headers',
  'tasks-required-task-error',
  'tasks-mrtr-input',
  'tasks-dispatch-and-envelope',
  'tasks-mrtr-composition',
];

const args = process.argv.slice(2);
const chosen = args.flatMap((arg, index) => (args[index - 1] === '--scenario' ? [arg] : []));
const scenarios = chosen.length > 0 ? chosen : SCENARIOS;
const keepResults = args.includes('--keep-results');

function installedVersion(pkg) {
  try {
    return JSON.parse(readFileSync(join(toolsDir, 'node_modules', ...pkg.split('/'), 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

function ensureInstalled() {
  const current = installedVersion('@modelcontextprotocol/conformance') === pinned['@modelcontextprotocol/conformance'] && existsSync(node22);
  if (current) return;
  console.log(`conformance: installing tools/conformance (npm ci)…`);
  const result = spawnSync('npm', ['ci', '--prefix', toolsDir, '--no-audit', '--no-fund'], { stdio: 'inherit' });
  if (result.status !== 0) throw new Error('npm ci --prefix tools/conformance failed');
}

async function waitForServer(url, child) {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`fixture server exited with code ${child.exitCode}`);
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'server/discover',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 0,
          method: 'server/discover',
          params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
        }),
      });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('fixture server did not start within 20 s');
}

function runScenario(url, scenario, outDir) {
  return new Promise((resolveRun) => {
    const child = spawn(node22, [suiteEntry, 'server', '--url', url, '--scenario', scenario, '-o', outDir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('close', (code) => resolveRun({ code, output }));
  });
}

function findChecks(outDir) {
  if (!existsSync(outDir)) return undefined;
  for (const entry of readdirSync(outDir, { withFileTypes: true })) {
    const candidate = join(outDir, entry.name, 'checks.json');
    if (entry.isDirectory() && existsSync(candidate)) return JSON.parse(readFileSync(candidate, 'utf8'));
  }
  return undefined;
}

async function main() {
  if (!existsSync(join(root, 'dist', 'cli', 'main.js'))) {
    if (spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' }).status !== 0) throw new Error('build failed');
  }
  ensureInstalled();
  const work = mkdtempSync(join(tmpdir(), 'mcp-tasks-conformance-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/mcp`;
  const server = spawn(
    process.execPath,
    [
      join(root, 'dist', 'cli', 'main.js'),
      'serve',
      '--no-builtins',
      '--fixtures',
      'conformance',
      '--port',
      String(port),
      '--data-dir',
      join(work, 'data'),
      '--log-level',
      'warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let serverLog = '';
  server.stderr.on('data', (chunk) => (serverLog += chunk));
  let passed = 0;
  let failed = 0;
  const summary = [];
  try {
    await waitForServer(url, server);
    for (const scenario of scenarios) {
      const outDir = join(work, 'results', scenario);
      const { code, output } = await runScenario(url, scenario, outDir);
      const checks = findChecks(outDir);
      if (!checks) {
        failed += 1;
        summary.push({ scenario, ok: false, problems: [`no checks.json written (exit ${code})`] });
        console.log(`✗ ${scenario}: no checks.json (exit ${code})\n${output}`);
        continue;
      }
      const bad = checks.filter((check) => check.status === 'FAILURE' || check.status === 'SKIPPED');
      const good = checks.filter((check) => check.status === 'SUCCESS');
      passed += good.length;
      failed += bad.length;
      if (checks.length === 0) failed += 1;
      const ok = bad.length === 0 && checks.length > 0 && code === 0;
      if (!ok && bad.length === 0) failed += 1;
      summary.push({
        scenario,
        ok,
        checks: checks.length,
        problems: bad.map((check) => `${check.status} ${check.id}: ${check.errorMessage ?? check.description}`),
      });
      console.log(`${ok ? '✓' : '✗'} ${scenario}: ${good.length} passed, ${bad.length} failed or skipped, ${checks.length - good.length - bad.length} other`);
      for (const check of bad) console.log(`    ${check.status} ${check.id}: ${check.errorMessage ?? ''}`);
      if (!ok && bad.length === 0) console.log(output);
    }
  } finally {
    server.kill('SIGTERM');
    if (!keepResults) rmSync(work, { recursive: true, force: true });
    else console.log(`results kept in ${work}`);
  }
  if (process.env.CONFORMANCE_SUMMARY) writeFileSync(process.env.CONFORMANCE_SUMMARY, JSON.stringify({ passed, failed, summary }, null, 2));
  console.log(`conformance: ${passed} passed, ${failed} failed`);
  if (failed > 0 || passed === 0) {
    if (serverLog) console.log(`fixture server log:\n${serverLog}`);
    process.exit(1);
  }
}

main().catch((error) => {
  console.error(`conformance: ${error.message}`);
  if (process.env.CONFORMANCE_SUMMARY) writeFileSync(process.env.CONFORMANCE_SUMMARY, JSON.stringify({ passed: 0, failed: 1, error: error.message }));
  process.exit(1);
});
