// Peak RSS growth of the API process while it serves a 64 MiB task result with resources/read (issue 10 §2).
//   npm run bench:results            (RESULT_BYTES=… READS=… to change the size and the repetitions)
// Roles are split (serve --no-worker + mcp-tasks worker on one SQLite file), so the API process never held the
// result: it only streams the stored chunks. Same-run figures: a baseline of tasks/get polls of the same task for
// as long as one read takes, the streamed read (HTTP fast path) and the same read on the SDK path (buffered, the
// request made ineligible for the fast path by one extra _meta key). RSS is sampled from /proc/<pid>/status every
// 5 ms; growth = peak during the requests − RSS just before them. Linux only.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const MiB = 1024 * 1024;
const RESULT_BYTES = Number(process.env.RESULT_BYTES ?? 64 * MiB - 4096);
const READS = Number(process.env.READS ?? 3);
const V2 = '2026-07-28';
const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': V2, 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } }, 'io.modelcontextprotocol/clientInfo': { name: 'bench-results', version: '1' } };

const freePort = () => new Promise((resolve) => { const s = createServer().listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); }); });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const rssOf = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

const dataDir = mkdtempSync(join(tmpdir(), 'mcp-bench-results-'));
const port = await freePort();
const url = `http://127.0.0.1:${port}/mcp`;
const common = ['--no-builtins', '--tools', join(root, 'bench/large-result-tools.mjs'), '--data-dir', dataDir, '--log-level', 'warn'];
const children = [];
const start = (args) => { const child = spawn(process.execPath, [join(root, 'dist/cli/main.js'), ...args], { stdio: ['ignore', 'ignore', 'inherit'] }); children.push(child); return child; };
const stopAll = () => { for (const child of children) child.kill('SIGKILL'); rmSync(dataDir, { recursive: true, force: true }); };
process.on('exit', stopAll);

let nextId = 1;
async function rpc(method, params, { name, extraMeta } = {}) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': V2, 'mcp-method': method };
  if (name) headers['mcp-name'] = name;
  return fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: { ...ENVELOPE, ...extraMeta } } }) });
}
const json = async (response) => { const text = await response.text(); return JSON.parse(text.startsWith('{') ? text : text.split('\n').filter((l) => l.startsWith('data: ')).pop().slice(6)); };

/** Read a response body to its end without keeping it: bytes, and whether it ends like a complete result. */
async function drain(response) {
  let bytes = 0;
  let tail = '';
  for await (const chunk of response.body) {
    bytes += chunk.byteLength;
    tail = (tail + Buffer.from(chunk).toString('latin1')).slice(-200);
  }
  return { bytes, complete: /"resultType":"complete"/.test(tail) && tail.trimEnd().endsWith('}'), tail };
}

/** Run `work` while sampling the API process's RSS; growth = peak − RSS before. */
async function measured(pid, work) {
  global.gc?.();
  await sleep(200);
  const before = rssOf(pid);
  let peak = before;
  const timer = setInterval(() => { peak = Math.max(peak, rssOf(pid)); }, 5);
  const t0 = performance.now();
  const outcome = await work();
  const ms = performance.now() - t0;
  clearInterval(timer);
  peak = Math.max(peak, rssOf(pid));
  return { before, peak, growth: peak - before, ms, outcome };
}

/** Start an API process (no worker) and wait until it answers. */
async function startApi() {
  const child = start(['serve', '--no-worker', '--port', String(port), ...common]);
  for (let i = 0; ; i += 1) {
    try { if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return child; } catch { /* not up yet */ }
    if (i > 200) throw new Error('server did not start');
    await sleep(50);
  }
}

let api = await startApi();
const worker = start(['worker', ...common]);

const created = await json(await rpc('tools/call', { name: 'big_result', arguments: { bytes: RESULT_BYTES } }, { name: 'big_result' }));
const taskId = created.result?.taskId;
if (!taskId) throw new Error(`no task: ${JSON.stringify(created).slice(0, 300)}`);
let status;
for (let i = 0; i < 600 && status !== 'completed' && status !== 'failed'; i += 1) {
  await sleep(100);
  status = (await json(await rpc('tasks/get', { taskId }, { name: taskId }))).result?.status;
}
if (status !== 'completed') throw new Error(`task ended ${status}: ${JSON.stringify((await json(await rpc('tasks/get', { taskId }, { name: taskId }))).result).slice(0, 400)}`);
worker.kill('SIGKILL');
const uri = `mcp-tasks://tasks/${taskId}/result`;

/** A fresh API process per way of reading: a heap grown by one way would hide the growth of the other. */
async function fresh(warmUp) {
  api.kill('SIGKILL');
  await new Promise((resolve) => api.once('exit', resolve));
  api = await startApi();
  // Warm-up: polls, then one request of the kind measured, so lazily loaded code is in place before the figures.
  for (let i = 0; i < 20; i += 1) await (await rpc('tasks/get', { taskId }, { name: taskId })).arrayBuffer();
  await warmUp();
  return api.pid;
}
const streamedRead = async () => drain(await rpc('resources/read', { uri }, { name: uri }));
const bufferedRead = async () => drain(await rpc('resources/read', { uri }, { name: uri, extraMeta: { 'bench/sdk-path': true } }));

const streamReads = [];
const pollRuns = [];
const bufferedReads = [];
let pid = await fresh(streamedRead);
for (let round = 0; round < READS; round += 1) streamReads.push(await measured(pid, streamedRead));
pid = await fresh(() => Promise.resolve());
for (let round = 0; round < READS; round += 1) {
  const until = performance.now() + streamReads[round].ms;
  pollRuns.push(await measured(pid, async () => {
    let n = 0;
    while (performance.now() < until) { await (await rpc('tasks/get', { taskId }, { name: taskId })).arrayBuffer(); n += 1; }
    return { polls: n };
  }));
}
pid = await fresh(bufferedRead);
for (let round = 0; round < READS; round += 1) bufferedReads.push(await measured(pid, bufferedRead));
const rows = streamReads.map((streamed, i) => ({ streamed, polls: pollRuns[i], buffered: bufferedReads[i] }));
for (const row of rows) for (const read of [row.streamed, row.buffered]) if (!read.outcome.complete) console.log(`incomplete answer, ends: ${JSON.stringify(read.outcome.tail)}`);

const mib = (bytes) => (bytes / MiB).toFixed(1);
const max = (pick) => Math.max(...rows.map(pick));
console.log(`large result: ${mib(RESULT_BYTES)} MiB of text, ${READS} rounds, API process pid ${api.pid}, node ${process.version}`);
console.log('round  baseline tasks/get (polls)   streamed resources/read (MiB body, ms)   SDK path buffered (ms)');
rows.forEach((row, i) => console.log(`${String(i + 1).padStart(5)}  +${mib(row.polls.growth).padStart(6)} MiB (${row.polls.outcome.polls})        +${mib(row.streamed.growth).padStart(6)} MiB (${mib(row.streamed.outcome.bytes)}, ${row.streamed.ms.toFixed(0)} ms${row.streamed.outcome.complete ? '' : ', INCOMPLETE'})          +${mib(row.buffered.growth).padStart(6)} MiB (${row.buffered.ms.toFixed(0)} ms${row.buffered.outcome.complete ? '' : ', INCOMPLETE'})`));
const streamedMax = max((r) => r.streamed.growth);
const baselineMax = max((r) => r.polls.growth);
const bufferedMax = max((r) => r.buffered.growth);
console.log(`peak RSS growth while serving (max of rounds): streamed +${mib(streamedMax)} MiB (goal < 16 MiB), baseline +${mib(baselineMax)} MiB, buffered SDK path +${mib(bufferedMax)} MiB`);
console.log(`ratios: streamed − baseline = +${mib(streamedMax - baselineMax)} MiB; streamed / buffered = ${(streamedMax / Math.max(1, bufferedMax)).toFixed(3)}`);
console.log(`throughput streamed: ${(RESULT_BYTES / MiB / (Math.min(...rows.map((r) => r.streamed.ms)) / 1000)).toFixed(0)} MiB/s (best round), max latency ${max((r) => r.streamed.ms).toFixed(0)} ms`);
process.exit(0);
