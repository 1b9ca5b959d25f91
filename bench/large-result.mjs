// Peak RSS growth of the API process while it serves a 64 MiB task result with resources/read (issues 10 §2, 23 §5).
//   npm run bench:results            (RESULT_BYTES=… READS=… to change the size and the repetitions)
// Roles are split (serve --no-worker + mcp-tasks worker on one SQLite file), so the API process never held the
// result: it only serves the stored chunks. Same-run figures, each way in a fresh API process:
//   baseline   for each way, tasks/get polls of the same task for as long as that way's read took, on the same path
//              (the SDK path builds a server per request: its own garbage is not the result's);
//   streamed   a plain resources/read over HTTP (the fast path writes the answer chunk by chunk);
//   +_meta     the same with one extra _meta key (which used to send the read to the SDK path, buffered);
//   SDK whole  the whole read on the SDK path (the request made ineligible for the fast path by an extra param):
//              refused with -31004 read_in_chunks, nothing read;
//   SDK chunks every chunk resource read in order on the SDK path (the bounded way the refusal names).
// RSS is sampled from /proc/<pid>/status every 5 ms; growth = peak during the requests − RSS just before them. The
// goal (issue 23 §5): every way below 16 MiB of growth above its same-run baseline — a read must not cost memory in
// proportion to the result. Linux only.
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
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': V2,
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'bench-results', version: '1' },
};

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const rssOf = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

const dataDir = mkdtempSync(join(tmpdir(), 'mcp-bench-results-'));
const port = await freePort();
const url = `http://127.0.0.1:${port}/mcp`;
const common = ['--no-builtins', '--tools', join(root, 'bench/large-result-tools.mjs'), '--data-dir', dataDir, '--log-level', 'warn'];
const children = [];
const start = (args) => {
  const child = spawn(process.execPath, [join(root, 'dist/cli/main.js'), ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(child);
  return child;
};
const stopAll = () => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
};
process.on('exit', stopAll);

let nextId = 1;
async function rpc(method, params, { name, extraMeta, extraParams } = {}) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': V2, 'mcp-method': method };
  if (name) headers['mcp-name'] = name;
  return fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: { ...params, ...extraParams, _meta: { ...ENVELOPE, ...extraMeta } } }),
  });
}
const json = async (response) => {
  const text = await response.text();
  return JSON.parse(
    text.startsWith('{')
      ? text
      : text
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .pop()
          .slice(6),
  );
};

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
  const timer = setInterval(() => {
    peak = Math.max(peak, rssOf(pid));
  }, 5);
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
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return child;
    } catch {
      /* not up yet */
    }
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
if (status !== 'completed')
  throw new Error(`task ended ${status}: ${JSON.stringify((await json(await rpc('tasks/get', { taskId }, { name: taskId }))).result).slice(0, 400)}`);
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
const metaRead = async () => drain(await rpc('resources/read', { uri }, { name: uri, extraMeta: { 'bench/sdk-path': true } }));
const sdkWholeRead = async () => {
  const answer = await json(await rpc('resources/read', { uri }, { name: uri, extraParams: SDK_PATH }));
  return {
    bytes: 0,
    complete: answer.error?.code === -31004,
    tail: JSON.stringify(answer).slice(0, 200),
    chunks: answer.error?.data?.chunks,
    wholeBytes: answer.error?.data?.bytes,
  };
};
let chunkCount;
let wholeBytes;
const sdkChunkedRead = async () => {
  let bytes = 0;
  for (let index = 0; index < chunkCount; index += 1) {
    const chunkUri = `${uri}/chunks/${index}`;
    const answer = await json(await rpc('resources/read', { uri: chunkUri }, { name: chunkUri, extraParams: SDK_PATH }));
    const blob = answer.result?.contents?.[0]?.blob;
    if (typeof blob !== 'string') return { bytes, complete: false, tail: JSON.stringify(answer).slice(0, 200) };
    bytes += Buffer.from(blob, 'base64').length;
  }
  return { bytes, complete: bytes === wholeBytes, tail: '' };
};

/** Each way, and the path its same-run baseline polls on (the SDK path's own per-request cost is not the result's). */
const SDK_PATH = { bench: 'sdk-path' };
const WAYS = [
  ['streamed', streamedRead, {}],
  ['+_meta', metaRead, {}],
  ['SDK whole', sdkWholeRead, SDK_PATH],
  ['SDK chunks', sdkChunkedRead, SDK_PATH],
];
const runs = new Map();
for (const [name, read] of WAYS) {
  const pid = await fresh(read);
  if (name === 'SDK whole') ({ chunks: chunkCount, wholeBytes } = await sdkWholeRead());
  const rounds = [];
  for (let round = 0; round < READS; round += 1) rounds.push(await measured(pid, read));
  runs.set(name, rounds);
}
/**
 * The same-run baseline of a way: tasks/get polls of the task on the way's path (`extraParams`), round by round, for
 * as long as that way's read took. The task is completed, so each poll carries its bounded result (~64 KiB).
 */
async function baselineFor(rounds, extraParams) {
  const pid = await fresh(() => Promise.resolve());
  const polls = [];
  for (const read of rounds) {
    const until = performance.now() + read.ms;
    polls.push(
      await measured(pid, async () => {
        let n = 0;
        while (performance.now() < until) {
          await (await rpc('tasks/get', { taskId }, { name: taskId, extraParams })).arrayBuffer();
          n += 1;
        }
        return { polls: n };
      }),
    );
  }
  return polls;
}
const baselines = new Map();
for (const [name, , path] of WAYS) baselines.set(name, await baselineFor(runs.get(name), path));
for (const [name, rounds] of runs)
  for (const read of rounds) if (!read.outcome.complete) console.log(`${name}: incomplete answer, ends: ${JSON.stringify(read.outcome.tail)}`);

const mib = (bytes) => (bytes / MiB).toFixed(1);
const maxOf = (rounds, pick) => Math.max(...rounds.map(pick));
console.log(`large result: ${mib(RESULT_BYTES)} MiB of text (${chunkCount} chunks), ${READS} rounds, node ${process.version}, ${new Date().toISOString()}`);
console.log(
  'growth of peak RSS per round; in brackets: what was read, how long it took, and the same-run baseline (tasks/get polls as long, on the same path)',
);
console.log(`round  ${WAYS.map(([name]) => name.padEnd(46)).join('')}`);
for (let i = 0; i < READS; i += 1) {
  const cells = WAYS.map(([name]) => {
    const read = runs.get(name)[i];
    const base = baselines.get(name)[i];
    const what =
      name === 'SDK whole'
        ? read.outcome.complete
          ? 'refused -31004'
          : 'NOT REFUSED'
        : `${mib(read.outcome.bytes)} MiB${read.outcome.complete ? '' : ' INCOMPLETE'}`;
    return `+${mib(read.growth).padStart(5)} MiB (${what}, ${read.ms.toFixed(0)} ms; base +${mib(base.growth)})`.padEnd(46);
  });
  console.log(`${String(i + 1).padStart(5)}  ${cells.join('')}`);
}
console.log('max of rounds (goal, issue 23 §5: each way < 16 MiB of growth above its same-run baseline):');
for (const [name] of WAYS) {
  const rounds = runs.get(name);
  const growth = maxOf(rounds, (r) => r.growth);
  const base = maxOf(baselines.get(name), (r) => r.growth);
  console.log(
    `  ${name.padEnd(11)} +${mib(growth).padStart(5)} MiB, same-run baseline +${mib(base).padStart(5)} MiB (difference ${growth - base >= 0 ? '+' : ''}${mib(growth - base)} MiB)  ${growth - base < 16 * MiB ? 'within goal' : 'ABOVE GOAL'}, max latency ${maxOf(rounds, (r) => r.ms).toFixed(0)} ms`,
  );
}
const streamed = runs.get('streamed');
console.log(`throughput streamed: ${(RESULT_BYTES / MiB / (Math.min(...streamed.map((r) => r.ms)) / 1000)).toFixed(0)} MiB/s (best round)`);
process.exit(0);
