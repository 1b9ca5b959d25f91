#!/usr/bin/env node
// P7 (issue 11): round trips/s with 2 API + 2 worker processes against 1 API + 1 worker on the same PostgreSQL
// server, CPU per round trip (user+system of every mcp-tasks process, from /proc), pick-up latency create → tool
// start, and cancel → abort latency across processes. Closed loop, C clients, D seconds; counting goes on until the last
// started round trip ends, and the maximum latency is shown. Each configuration gets a fresh database.
// A round trip is on v1 (2025-11-25): a task-augmented `tools/call` on one API process, then the blocking
// `tasks/result` of the same session on the other (sessions live in the store), so no poll interval enters it.
//
//   npm run build && node bench/several-instances.mjs [--duration 8] [--warmup 10] [--clients 16] [--cancels 50]
//     [--pg URL] [--only 1+1|2+2|graphile|serve|sdk] [--profile DIR] [--waits] [--executor isolated|in-process] [--node-arg FLAG]...
//   (the URL defaults to MCP_TASKS_BENCH_PG_URL, else the cluster of `npm run pg:start`). --profile writes a V8 CPU
//   profile per process under DIR/<deployment>/<role> and prints where each role's time goes. --waits samples what
//   the PostgreSQL backends wait on (row locks, WAL flush) during the counted seconds.
import { execFileSync, fork, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

import pg from 'pg';

import { profilesMarkdown, summariseProfiles } from './lib/profile.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const MAIN = join(ROOT, 'dist/cli/main.js');
const TOOLS = join(ROOT, 'bench/instances/tools.mjs');
const ANCHOR = join(ROOT, 'bench/anchors/graphile-worker');
const REFERENCE = join(ROOT, 'bench/servers/reference-sdk132.mjs');
const USAGE = `usage: node bench/several-instances.mjs [--duration 8] [--warmup 10] [--clients 16] [--cancels 50] [--pg URL]
  [--only 1+1|2+2|graphile|serve|sdk] [--profile DIR] [--waits] [--executor isolated|in-process] [--node-arg FLAG]...`;
/** Strict: an unknown or misspelt option is an error, not a full run with the defaults (issue 25, stop 40). */
function options() {
  try {
    const { values } = parseArgs({
      options: {
        duration: { type: 'string', default: '8' },
        warmup: { type: 'string', default: '10' },
        clients: { type: 'string', default: '16' },
        cancels: { type: 'string', default: '50' },
        pg: { type: 'string' },
        only: { type: 'string' },
        profile: { type: 'string' },
        waits: { type: 'boolean', default: false },
        executor: { type: 'string', default: 'isolated' },
        'node-arg': { type: 'string', multiple: true, default: [] },
        help: { type: 'boolean', default: false },
      },
    });
    if (values.help) {
      console.log(USAGE);
      process.exit(0);
    }
    for (const name of ['duration', 'clients']) if (!(Number(values[name]) > 0)) throw new Error(`--${name}: not a positive number: ${values[name]}`);
    if (!(Number(values.warmup) >= 0)) throw new Error(`--warmup: not a number of seconds: ${values.warmup}`);
    if (!Number.isInteger(Number(values.cancels)) || Number(values.cancels) < 0) throw new Error(`--cancels: not a count: ${values.cancels}`);
    if (values.only !== undefined && !['1+1', '2+2', 'graphile', 'serve', 'sdk'].includes(values.only))
      throw new Error(`--only: unknown deployment ${values.only}`);
    if (!['isolated', 'in-process'].includes(values.executor)) throw new Error(`--executor: isolated or in-process, not ${values.executor}`);
    return values;
  } catch (error) {
    console.error(`${error.message}\n${USAGE}`);
    process.exit(2);
  }
}
const OPTIONS = options();
const DURATION_S = Number(OPTIONS.duration);
/**
 * Seconds of the same closed loop run before counting starts, the same for every deployment (the anchor included).
 * 10 by default: after 1 s (the default until 2026-12-07) V8 was still compiling our hot paths — its compiler threads
 * took a quarter of each process's CPU in seconds 3–7 — and CPU per round trip fell from 3.1 to 2.3 ms after 3–5 s and
 * to 1.7–1.9 after 10 s; a long-running server is in that steady state. `--warmup 1` repeats the earlier figures.
 */
const WARMUP_S = Number(OPTIONS.warmup);
const CLIENTS = Number(OPTIONS.clients);
const CANCELS = Number(OPTIONS.cancels);
/** The cluster `npm run pg:start` started, read only when neither --pg nor MCP_TASKS_BENCH_PG_URL names one. */
function startedCluster() {
  try {
    return JSON.parse(readFileSync(join(ROOT, '.pg-test.json'), 'utf8')).url;
  } catch (error) {
    console.error(`no PostgreSQL to run against (${error.message}): pass --pg URL, set MCP_TASKS_BENCH_PG_URL, or run npm run pg:start`);
    process.exit(1);
  }
}
const PG_URL = OPTIONS.pg ?? process.env.MCP_TASKS_BENCH_PG_URL ?? startedCluster();
const ONLY = OPTIONS.only;
const PROFILE_DIR = OPTIONS.profile;
/** The workers' executor (`isolated`, the default, or `in-process`): what the thread hand-off costs per run. */
const EXECUTOR = OPTIONS.executor;
/** The flags of a process that runs the benchmark's tools (a worker, or `serve` with its embedded worker). */
const RUNS_TOOLS = ['--no-builtins', '--tools', TOOLS, '--concurrency', '32', '--executor', EXECUTOR];
const SECRET = randomBytes(24).toString('hex');
const CLK_TCK = 100;

const pause = (ms) => new Promise((r) => setTimeout(r, ms));
const freePort = () =>
  new Promise((res) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });

function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return 0;
  }
}

async function admin(sql) {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function withDatabase(url, name) {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

function start(kind, argv, ready, profileDir) {
  // --node-arg passes V8 diagnostics (e.g. --log-deopt --logfile=…) to every process of ours.
  const nodeArgs = [...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []), ...OPTIONS['node-arg']];
  const child = spawn(process.execPath, [...nodeArgs, MAIN, kind, ...argv], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, MCP_TASKS_SECRET: SECRET },
  });
  let output = '';
  child.stderr.on('data', (c) => (output += c));
  return new Promise((res, rej) => {
    const timer = setInterval(() => {
      if (ready.test(output)) {
        clearInterval(timer);
        res({ child, stop: () => new Promise((done) => (child.exitCode !== null ? done() : (child.once('exit', done), child.kill('SIGTERM')))) });
      } else if (child.exitCode !== null) {
        clearInterval(timer);
        rej(new Error(`${kind} exited: ${output}`));
      }
    }, 20);
  });
}

/** Pids of the PostgreSQL backends serving `database` now (the pools keep theirs for the whole run). */
async function backendPids(database) {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [database]);
    return rows.map((r) => r.pid);
  } finally {
    await client.end();
  }
}

/**
 * Statements run on `database` since the last reset, when the server loads pg_stat_statements (`npm run pg:start`
 * does where the module is installed); `undefined` otherwise. `reset` clears that database's counters first.
 */
async function statements(database, reset) {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const { rows: preload } = await client.query('SHOW shared_preload_libraries');
    if (!String(preload[0]?.shared_preload_libraries ?? '').includes('pg_stat_statements')) return undefined;
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const dbid = 'SELECT oid FROM pg_database WHERE datname = $1';
    if (reset) {
      await client.query(`SELECT pg_stat_statements_reset(0, (${dbid}), 0)`, [database]);
      return [];
    }
    const { rows } = await client.query(
      `SELECT calls::int, plans::int AS plans, rows::int, total_exec_time AS ms, shared_blks_hit + shared_blks_read AS buffers, regexp_replace(query, '\\s+', ' ', 'g') AS query FROM pg_stat_statements
        WHERE dbid = (${dbid}) ORDER BY calls DESC`,
      [database],
    );
    return rows;
  } finally {
    await client.end();
  }
}

/**
 * `--waits`: what the PostgreSQL backends of `database` are doing while the load runs, sampled from
 * `pg_stat_activity` every 10 ms on a connection of its own (idle backends left out). Returns a function that stops
 * the sampling and gives the average number of backends per state at any moment: `running`, a wait event
 * (`Lock:transactionid` — a row lock such as the feed counter's, `IO:WALSync` — a commit's WAL flush, …), or
 * `idle in transaction` (the backend waits for its client, our process, to send the next statement).
 */
async function waitSampler(database) {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  const counts = new Map();
  let samples = 0;
  let stopped = false;
  const sampling = (async () => {
    while (!stopped) {
      const { rows } = await client.query(
        `SELECT state, wait_event_type AS type, wait_event AS event FROM pg_stat_activity
          WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND state <> 'idle'`,
        [database],
      );
      samples += 1;
      for (const row of rows) {
        const key = row.state === 'active' ? (row.type ? `${row.type}:${row.event}` : 'running') : row.state;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  return async () => {
    stopped = true;
    await sampling;
    await client.end();
    return { samples, average: [...counts].map(([key, n]) => [key, n / samples]).sort((a, b) => b[1] - a[1]) };
  };
}

let rpcId = 0;
async function rpc(url, method, params) {
  const name = method === 'tools/call' ? params.name : params.taskId;
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: ++rpcId,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'p7', version: '0' },
        },
      },
    }),
  });
  const text = await response.text();
  const line = text.startsWith('{')
    ? text
    : text
        .split('\n')
        .find((l) => l.startsWith('data: {'))
        ?.slice(6);
  return JSON.parse(line ?? '{}');
}

/** A raw 2025-11-25 session opened on `url`; `call(url, method, params)` posts to any instance with its id. */
async function v1Session(url) {
  const init = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'p7', version: '0' } },
    }),
  });
  const sessionId = init.headers.get('mcp-session-id');
  await init.text();
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-session-id': sessionId,
    'mcp-protocol-version': '2025-11-25',
  };
  await (await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  let id = 1;
  return async (target, method, params) => {
    const response = await fetch(target, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method, params }) });
    const text = await response.text();
    const line = text.startsWith('{')
      ? text
      : text
          .split('\n')
          .find((l) => l.startsWith('data: {'))
          ?.slice(6);
    return JSON.parse(line ?? '{}');
  };
}

const pct = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]);

async function deployment(apis, workers, profileDir) {
  const name = `mcp_tasks_p7_${randomBytes(4).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = withDatabase(PG_URL, name);
  const dir = mkdtempSync(join(tmpdir(), 'mcp-tasks-p7-'));
  const procs = [];
  const urls = [];
  for (let i = 0; i < apis; i += 1) {
    const port = await freePort();
    procs.push(
      await start(
        'serve',
        [
          '--no-worker',
          '--port',
          String(port),
          '--data-dir',
          join(dir, `api-${i}`),
          '--store',
          url,
          '--no-builtins',
          '--tools',
          TOOLS,
          '--log-level',
          'warn',
          '--instance-id',
          `api-${i}`,
        ],
        /serving http/,
        profileDir && join(profileDir, `api-${i}`),
      ),
    );
    urls.push(`http://127.0.0.1:${port}/mcp`);
  }
  for (let i = 0; i < workers; i += 1) {
    procs.push(
      await start(
        'worker',
        ['--data-dir', join(dir, `w-${i}`), '--store', url, ...RUNS_TOOLS, '--log-level', 'info', '--instance-id', `w-${i}`],
        /worker \S+ running/,
        profileDir && join(profileDir, `worker-${i}`),
      ),
    );
  }
  return {
    urls,
    dir,
    database: name,
    pids: procs.map((p) => p.child.pid),
    roles: procs.map((p, i) => (i < apis ? 'api' : 'worker')),
    async close() {
      await Promise.all(procs.map((p) => p.stop()));
      rmSync(dir, { recursive: true, force: true });
      await admin(`DROP DATABASE ${name} WITH (FORCE)`);
    },
  };
}

/**
 * One `serve` process with both roles (API and worker) on `store`: a fresh PostgreSQL database (`'postgres'`) or its
 * own SQLite file (`'sqlite'`). Issue 25's P7a compares the two: `serve` on PostgreSQL ≥ 0.8× `serve` on SQLite.
 */
async function serveDeployment(store, profileDir) {
  const name = store === 'postgres' ? `mcp_tasks_p7_${randomBytes(4).toString('hex')}` : undefined;
  if (name) await admin(`CREATE DATABASE ${name}`);
  const dir = mkdtempSync(join(tmpdir(), 'mcp-tasks-p7-'));
  const port = await freePort();
  const proc = await start(
    'serve',
    ['--port', String(port), '--data-dir', join(dir, 'serve'), ...(name ? ['--store', withDatabase(PG_URL, name)] : []), ...RUNS_TOOLS, '--log-level', 'warn'],
    /serving http/,
    profileDir,
  );
  return {
    urls: [`http://127.0.0.1:${port}/mcp`],
    dir,
    database: name,
    pids: [proc.child.pid],
    roles: ['api'],
    async close() {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
      if (name) await admin(`DROP DATABASE ${name} WITH (FORCE)`);
    },
  };
}

async function roundTrips(d) {
  const latencies = [];
  const pickups = [];
  let stopAt = 0;
  const loop = async (client) => {
    const home = client % d.urls.length;
    const call = await v1Session(d.urls[home]);
    while (Date.now() < stopAt) {
      const sent = Date.now();
      const created = await call(d.urls[home], 'tools/call', { name: d.tool ?? 'p7_echo', arguments: {}, task: {} });
      const taskId = created.result?.task?.taskId;
      if (!taskId) throw new Error(`create failed: ${JSON.stringify(created)}`);
      const result = await call(d.urls[(home + 1) % d.urls.length], 'tasks/result', { taskId });
      const startedAt = Number(result.result?.content?.[0]?.text);
      if (!Number.isFinite(startedAt)) throw new Error(`unexpected ${JSON.stringify(result)}`);
      pickups.push(startedAt - sent);
      latencies.push(Date.now() - sent);
    }
  };
  // Warm-up, discarded.
  stopAt = Date.now() + WARMUP_S * 1000;
  await Promise.all(Array.from({ length: CLIENTS }, (_, client) => loop(client)));
  latencies.length = 0;
  pickups.length = 0;
  return measured(d, latencies, pickups, async () => {
    stopAt = Date.now() + DURATION_S * 1000;
    await Promise.all(Array.from({ length: CLIENTS }, (_, client) => loop(client)));
  });
}

/**
 * Runs `load` (the measured closed loop, which fills `latencies` and `pickups`) and reports the figures of the
 * deployment `d`: CPU per round trip by role (its processes' pids and roles) and of the PostgreSQL backends of
 * `d.database`, statements per round trip, OS threads per process at the end, and the latency percentiles.
 */
async function measured(d, latencies, pickups, load) {
  const backends = d.database ? await backendPids(d.database) : [];
  const sample = () => ({
    api: d.pids.filter((_, i) => d.roles[i] === 'api').reduce((sum, pid) => sum + cpuMs(pid), 0),
    worker: d.pids.filter((_, i) => d.roles[i] === 'worker').reduce((sum, pid) => sum + cpuMs(pid), 0),
    postgres: backends.reduce((sum, pid) => sum + cpuMs(pid), 0),
  });
  if (d.database) await statements(d.database, true);
  const stopWaits = OPTIONS.waits && d.database ? await waitSampler(d.database) : undefined;
  const cpu0 = sample();
  const t0 = Date.now();
  await load();
  const elapsed = (Date.now() - t0) / 1000;
  const cpu1 = sample();
  const waits = await stopWaits?.();
  // OS threads per process at the end (libuv, V8 and the executor's tool threads): the worker's pool growth shows here.
  const threads = d.pids.map((pid, i) => `${d.roles[i]} ${/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]}`).join(', ');
  const ran = d.database && (await statements(d.database, false));
  const cpu = cpu1.api + cpu1.worker - cpu0.api - cpu0.worker;
  const n = latencies.length;
  const sorted = [...latencies].sort((a, b) => a - b);
  const picks = [...pickups].sort((a, b) => a - b);
  return {
    roundTrips: latencies.length,
    perSecond: latencies.length / elapsed,
    cpuMsPerRoundTrip: cpu / n,
    threads,
    waits,
    apiCpuMs: (cpu1.api - cpu0.api) / n,
    workerCpuMs: (cpu1.worker - cpu0.worker) / n,
    postgresCpuMs: (cpu1.postgres - cpu0.postgres) / n,
    statements: ran && {
      perRoundTrip: ran.reduce((sum, r) => sum + r.calls, 0) / n,
      execMsPerRoundTrip: ran.reduce((sum, r) => sum + r.ms, 0) / n,
      top: ran.slice(0, 14).map((r) => ({
        calls: r.calls / n,
        rowsPerCall: r.rows / r.calls,
        buffersPerCall: Number(r.buffers) / r.calls,
        plansPerCall: r.plans / r.calls,
        meanMs: r.ms / r.calls,
        query: r.query.slice(0, 90),
      })),
    },
    p50: pct(sorted, 50),
    p99: pct(sorted, 99),
    max: sorted.at(-1),
    pickupP50: pct(picks, 50),
    pickupP99: pct(picks, 99),
    pickupMax: picks.at(-1),
  };
}

async function cancels(d) {
  const log = join(d.dir, 'cancel.log');
  const latencies = [];
  const read = () => {
    try {
      return readFileSync(log, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    } catch {
      return [];
    }
  };
  for (let i = 0; i < CANCELS; i += 1) {
    const id = `c${i}`;
    const created = await rpc(d.urls[i % d.urls.length], 'tools/call', { name: 'p7_wait', arguments: { log, id } });
    const taskId = created.result?.taskId;
    while (!read().some((n) => n.id === id && n.event === 'start')) await pause(2);
    const sent = Date.now();
    await rpc(d.urls[(i + 1) % d.urls.length], 'tasks/cancel', { taskId });
    let abort;
    while (!(abort = read().find((n) => n.id === id && n.event === 'abort'))) await pause(1);
    latencies.push(abort.at - sent);
  }
  const sorted = latencies.sort((a, b) => a - b);
  return { cancels: sorted.length, p50: pct(sorted, 50), p99: pct(sorted, 99), max: sorted.at(-1) };
}

/**
 * The SDK 1.32.2 reference (bench/servers/reference-sdk132.mjs: its `InMemoryTaskStore`, one process, nothing
 * durable) under the same closed loop — issue 25's P7a: 1 API + 1 worker on PostgreSQL ≥ 1.0× it. Its `p7_echo`
 * answers the time its task was created, so its pick-up is in-process (not comparable with a hand-off to a worker).
 */
async function referenceDeployment() {
  const port = await freePort();
  const child = spawn(process.execPath, [REFERENCE, String(port)], { stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}/mcp`;
  for (let i = 0; ; i += 1) {
    if (child.exitCode !== null) throw new Error(`the SDK reference exited with ${child.exitCode}`);
    const up = await fetch(url, { method: 'GET' }).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (i > 500) throw new Error('the SDK reference did not listen within 10 s');
    await pause(20);
  }
  return {
    urls: [url],
    tool: 'p7_echo',
    pids: [child.pid],
    roles: ['api'],
    close: () => new Promise((done) => (child.exitCode !== null ? done() : (child.once('exit', done), child.kill('SIGTERM')))),
  };
}

/** graphile-worker's runner and adder on a fresh database (the anchor); its packages installed on first use. */
async function graphileDeployment() {
  if (!existsSync(join(ANCHOR, 'node_modules/graphile-worker'))) {
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--prefix', ANCHOR], { stdio: 'inherit' });
  }
  const name = `mcp_tasks_p7_gw_${randomBytes(4).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = withDatabase(PG_URL, name);
  const spawnChild = (file, argv) => {
    const child = fork(join(ANCHOR, file), argv, { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], env: { ...process.env, NO_LOG_SUCCESS: '1' } });
    return new Promise((res, rej) => {
      child.once('message', (m) => (m.ready ? res(child) : rej(new Error(`${file}: ${JSON.stringify(m)}`))));
      child.once('exit', (code) => rej(new Error(`${file} exited with ${code}`)));
    });
  };
  // The adder migrates the schema first, so the runner finds it.
  const adder = await spawnChild('adder.mjs', [url]);
  const worker = await spawnChild('worker.mjs', [url, '32']);
  return {
    url,
    database: name,
    adder,
    worker,
    pids: [adder.pid, worker.pid],
    roles: ['api', 'worker'],
    async close() {
      await Promise.all([adder, worker].map((child) => new Promise((done) => (child.once('exit', done), child.disconnect()))));
      await admin(`DROP DATABASE ${name} WITH (FORCE)`);
    },
  };
}

/** The closed loop of `roundTrips` on graphile-worker: add a job, wait for its success; counted until the queue is empty. */
async function graphileRoundTrips(d) {
  const waiting = new Map();
  d.worker.on('message', (m) => {
    const waiter = waiting.get(m.id);
    waiting.delete(m.id);
    waiter?.(m.startedAt);
  });
  d.adder.on('message', (m) => {
    if (m.failed) throw new Error(`addJob failed: ${m.error}`);
  });
  let next = 0;
  const latencies = [];
  const pickups = [];
  let stopAt = 0;
  const loop = async () => {
    while (Date.now() < stopAt) {
      const id = `j${next++}`;
      const sent = Date.now();
      const done = new Promise((res) => waiting.set(id, res));
      d.adder.send({ id });
      const startedAt = await done;
      pickups.push(startedAt - sent);
      latencies.push(Date.now() - sent);
    }
  };
  const drained = async () => {
    const client = new pg.Client({ connectionString: d.url });
    await client.connect();
    try {
      while (Number((await client.query('SELECT count(*) AS n FROM graphile_worker._private_jobs')).rows[0].n) > 0) await pause(2);
    } finally {
      await client.end();
    }
  };
  stopAt = Date.now() + WARMUP_S * 1000;
  await Promise.all(Array.from({ length: CLIENTS }, loop));
  await drained();
  latencies.length = 0;
  pickups.length = 0;
  return measured(d, latencies, pickups, async () => {
    stopAt = Date.now() + DURATION_S * 1000;
    await Promise.all(Array.from({ length: CLIENTS }, loop));
    await drained();
  });
}

const results = {};
const ANCHOR_LABEL = 'graphile-worker 0.17 (anchor)';
if (!ONLY || ONLY === 'graphile') {
  const d = await graphileDeployment();
  try {
    results[ANCHOR_LABEL] = await graphileRoundTrips(d);
  } finally {
    await d.close();
  }
}
const REFERENCE_LABEL = 'SDK 1.32 reference (in memory, one process)';
if (!ONLY || ONLY === 'sdk') {
  const d = await referenceDeployment();
  try {
    results[REFERENCE_LABEL] = await roundTrips(d);
  } finally {
    await d.close();
  }
}
for (const [label, apis, workers] of [
  ['1 API + 1 worker', 1, 1],
  ['2 API + 2 workers', 2, 2],
]) {
  if (ONLY && ONLY !== `${apis}+${workers}`) continue;
  const profileDir = PROFILE_DIR && join(resolve(PROFILE_DIR), `${apis}+${workers}`);
  const d = await deployment(apis, workers, profileDir);
  try {
    results[label] = { ...(await roundTrips(d)), ...(CANCELS > 0 ? { cancel: await cancels(d) } : {}) };
  } finally {
    await d.close();
  }
  if (profileDir) {
    for (const role of readdirSync(profileDir).sort()) {
      console.log(`\n# ${label}: ${role}${profilesMarkdown(summariseProfiles(join(profileDir, role)))}`);
    }
  }
}
for (const [label, store] of [
  ['serve on PostgreSQL (API and worker in one process)', 'postgres'],
  ['serve on SQLite (API and worker in one process)', 'sqlite'],
]) {
  if (ONLY && ONLY !== 'serve') continue;
  const profileDir = PROFILE_DIR && join(resolve(PROFILE_DIR), `serve-${store}`);
  const d = await serveDeployment(store, profileDir);
  try {
    results[label] = await roundTrips(d);
  } finally {
    await d.close();
  }
  if (profileDir) console.log(`\n# ${label}${profilesMarkdown(summariseProfiles(profileDir))}`);
}
const one = results['1 API + 1 worker'];
const two = results['2 API + 2 workers'];
const anchor = results[ANCHOR_LABEL];
const reference = results[REFERENCE_LABEL];
const f = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
console.log(`P7 several instances on one PostgreSQL (${CLIENTS} clients, ${DURATION_S} s after ${WARMUP_S} s of warm-up, cancels ${CANCELS})`);
console.log(
  '| deployment | round trips | rt/s | CPU ms/rt (API + worker = ours; PostgreSQL) | statements/rt | rt p50 / p99 / max ms | pick-up p50 / p99 / max ms | cancel→abort p50 / p99 / max ms |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const [label, r] of Object.entries(results)) {
  const cpu = `${f(r.apiCpuMs, 2)} + ${f(r.workerCpuMs, 2)} = **${f(r.cpuMsPerRoundTrip, 2)}**; ${f(r.postgresCpuMs, 2)}`;
  console.log(
    `| ${label} | ${r.roundTrips} | ${f(r.perSecond)} | ${cpu} | ${r.statements ? f(r.statements.perRoundTrip) : 'n/a'} | ${r.p50} / ${r.p99} / ${r.max} | ${r.pickupP50} / ${r.pickupP99} / ${r.pickupMax} | ${r.cancel ? `${r.cancel.p50} / ${r.cancel.p99} / ${r.cancel.max}` : 'n/a'} |`,
  );
}
for (const [label, r] of Object.entries(results)) {
  console.log(`\n${label}: OS threads per process at the end: ${r.threads}`);
  if (r.waits)
    console.log(
      `\n${label}: PostgreSQL backends not idle, on average at any moment (${r.waits.samples} samples of pg_stat_activity, 10 ms apart): ${r.waits.average.map(([key, n]) => `${key} ${f(n, 2)}`).join(', ')}`,
    );
  if (!r.statements) {
    console.log(`\n${label}: no statement counts (the server does not load pg_stat_statements; \`npm run pg:start\` does where it is installed)`);
    continue;
  }
  console.log(`\n${label}: statements per round trip (pg_stat_statements; ${f(r.statements.execMsPerRoundTrip, 2)} ms of execution per round trip)`);
  // Buffers per call (shared hits + reads) show a plan that walks more rows than it returns.
  console.log('| per rt | rows per call | buffers per call | plans per call | mean ms | statement |\n|---:|---:|---:|---:|---:|---|');
  for (const t of r.statements.top)
    console.log(
      `| ${f(t.calls, 2)} | ${f(t.rowsPerCall, 2)} | ${f(t.buffersPerCall, 1)} | ${f(t.plansPerCall, 2)} | ${f(t.meanMs, 2)} | \`${t.query.replaceAll('|', '\\|')}\` |`,
    );
}
if (one && two)
  console.log(
    `ratio 2+2 / 1+1: round trips/s ×${f(two.perSecond / one.perSecond, 2)}, CPU per round trip ×${f(two.cpuMsPerRoundTrip / one.cpuMsPerRoundTrip, 2)}`,
  );
const servePg = results['serve on PostgreSQL (API and worker in one process)'];
const serveSqlite = results['serve on SQLite (API and worker in one process)'];
if (servePg && serveSqlite)
  // Issue 25's P7a: serve on PostgreSQL ≥ 0.8× serve on SQLite.
  console.log(
    `ratio serve on PostgreSQL / serve on SQLite: round trips/s ×${f(servePg.perSecond / serveSqlite.perSecond, 2)} (goal ≥ 0.8), CPU per round trip (ours) ×${f(servePg.cpuMsPerRoundTrip / serveSqlite.cpuMsPerRoundTrip, 2)}, (ours + PostgreSQL) ×${f((servePg.cpuMsPerRoundTrip + servePg.postgresCpuMs) / serveSqlite.cpuMsPerRoundTrip, 2)}`,
  );
if (one && reference)
  // Issue 25's P7a: 1 API + 1 worker on PostgreSQL ≥ 1.0× the SDK in-memory reference, our CPU ≤ 1.5 ms per round trip.
  console.log(
    `ratio 1+1 / SDK reference: round trips/s ×${f(one.perSecond / reference.perSecond, 2)} (goal ≥ 1.0), CPU per round trip (ours) ${f(one.cpuMsPerRoundTrip, 2)} ms (goal ≤ 1.5) against the reference's ${f(reference.cpuMsPerRoundTrip, 2)}`,
  );
if (one && anchor)
  // Issue 25's anchor goals: pick-up within 1.5× of graphile-worker's add → start, round trips/s within 2× of its jobs/s.
  console.log(
    `ratio 1+1 / graphile-worker: round trips/s ×${f(one.perSecond / anchor.perSecond, 2)} (goal ≥ 0.5), pick-up p50 ×${f(one.pickupP50 / anchor.pickupP50, 2)} p99 ×${f(one.pickupP99 / anchor.pickupP99, 2)} (goal ≤ 1.5), CPU per round trip (ours + PostgreSQL) ×${f((one.cpuMsPerRoundTrip + one.postgresCpuMs) / (anchor.cpuMsPerRoundTrip + anchor.postgresCpuMs), 2)}`,
  );
