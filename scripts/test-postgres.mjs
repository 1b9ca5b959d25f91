#!/usr/bin/env node
// A private, throw-away PostgreSQL cluster for `npm test` and the benchmarks: initdb + pg_ctl into a fresh temp
// directory, a free TCP port on 127.0.0.1, trust authentication for the local `postgres` role. Never the system
// cluster. As root (CI), every server command runs as the `postgres` user, which owns the directory.
//
//   node scripts/test-postgres.mjs start [--state FILE]   start one; print its URL; record it in FILE
//   node scripts/test-postgres.mjs stop  [--state FILE]   stop it and delete its directory
//   node scripts/test-postgres.mjs status [--state FILE]  print the recorded URL and whether it answers
//   node scripts/test-postgres.mjs halt|resume [--state FILE]  stop the server keeping its data / start it again
//                                                             on the same port (outage tests)
//
// FILE defaults to `.pg-test.json` in the repository root; test/helpers/postgres.ts reads it when
// MCP_TASKS_TEST_PG_URL is not set, so `npm run pg:start` once is all a developer needs before `npm test`.
// Server binaries: $PG_BIN, else the newest /usr/lib/postgresql/<version>/bin (Debian), else initdb on PATH.
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { freePort } from './free-port.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const command = args[0];
const stateIndex = args.indexOf('--state');
const stateFile = resolve(stateIndex >= 0 ? args[stateIndex + 1] : join(root, '.pg-test.json'));
const asRoot = process.getuid?.() === 0;

function fail(message) {
  process.stderr.write(`test-postgres: ${message}\n`);
  process.exit(1);
}

/** Directory of initdb/pg_ctl/pg_isready. */
function binDir() {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian).filter((v) => /^\d+$/.test(v) && existsSync(join(debian, v, 'bin', 'initdb')));
    versions.sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(debian, versions[0], 'bin');
  }
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim()) return dirname(which.stdout.trim());
  fail('no PostgreSQL server binaries found: install them (Debian: apt-get install -y postgresql) or set PG_BIN');
}

/** Run a server binary (as `postgres` when we are root; initdb refuses to run as root). */
function run(binary, binArgs, { allowFailure = false } = {}) {
  const path = join(binDir(), binary);
  const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path, ...binArgs]] : [path, binArgs];
  const result = spawnSync(file, argv, { encoding: 'utf8', cwd: tmpdir() });
  if (result.status !== 0 && !allowFailure) {
    fail(`${binary} failed (exit ${result.status}): ${(result.stderr || result.stdout || String(result.error ?? '')).trim()}`);
  }
  return result;
}

function readState() {
  try {
    return JSON.parse(readFileSync(stateFile, 'utf8'));
  } catch {
    return undefined;
  }
}

function answers(state) {
  return run('pg_isready', ['-q', '-h', '127.0.0.1', '-p', String(state.port), '-t', '3'], { allowFailure: true }).status === 0;
}

async function start() {
  const existing = readState();
  if (existing && answers(existing)) {
    process.stdout.write(`${existing.url}\n`);
    process.stderr.write(`test-postgres: already running (${stateFile})\n`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'mcp-tasks-pg-'));
  if (asRoot) {
    const pg = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    if (pg.status !== 0) fail('running as root needs the postgres user (apt-get install -y postgresql creates it)');
    chownSync(dir, Number(pg.stdout), Number(gid.stdout));
  }
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-instructions']);
  // Bind the port only now, as late as possible, to keep the window for a collision small.
  const port = await freePort();
  const options = [
    `-c listen_addresses=127.0.0.1`,
    `-c port=${port}`,
    `-c unix_socket_directories=${dir}`,
    // Parallel test files and benchmark pools each hold a few connections.
    `-c max_connections=300`,
    // Statement counts per round trip in `npm run bench:instances` (issue 25), where the module is installed.
    ...(existsSync(join(binDir(), '..', 'lib', 'pg_stat_statements.so')) ? ['-c shared_preload_libraries=pg_stat_statements'] : []),
    // Durability stays on (fsync, synchronous_commit): the benchmarks measure durable commits.
  ].join(' ');
  run('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', options, 'start']);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  writeFileSync(stateFile, `${JSON.stringify({ url, port, dir, data, options }, null, 2)}\n`);
  process.stdout.write(`${url}\n`);
  process.stderr.write(`test-postgres: started on port ${port} (data ${data}); stop with: node scripts/test-postgres.mjs stop\n`);
}

function stop() {
  const state = readState();
  if (!state) {
    process.stderr.write(`test-postgres: nothing recorded in ${stateFile}\n`);
    return;
  }
  if (existsSync(state.data)) run('pg_ctl', ['-D', state.data, '-m', 'fast', '-w', 'stop'], { allowFailure: true });
  rmSync(state.dir, { recursive: true, force: true });
  unlinkSync(stateFile);
  process.stderr.write(`test-postgres: stopped (port ${state.port})\n`);
}

function status() {
  const state = readState();
  if (!state) fail(`not started (no ${stateFile}); start one with: npm run pg:start`);
  const up = answers(state);
  process.stdout.write(`${state.url} ${up ? 'up' : 'DOWN'}\n`);
  if (!up) process.exit(1);
}

function halt() {
  const state = readState() ?? fail(`not started (no ${stateFile})`);
  run('pg_ctl', ['-D', state.data, '-m', 'fast', '-w', 'stop']);
}

function resume() {
  const state = readState() ?? fail(`not started (no ${stateFile})`);
  run('pg_ctl', ['-D', state.data, '-l', join(state.dir, 'server.log'), '-w', '-t', '60', '-o', state.options, 'start']);
}

if (command === 'start') await start();
else if (command === 'halt') halt();
else if (command === 'resume') resume();
else if (command === 'stop') stop();
else if (command === 'status') status();
else fail('usage: test-postgres.mjs start|stop|status|halt|resume [--state FILE]');
