// Baseline: bare durable SQLite inserts, the physical floor under every durable create. better-sqlite3 with WAL and
// synchronous=FULL (each commit fsyncs the WAL), a table with a primary key and a row of a task's size.
// Run by the driver: node --expose-gc bench/inproc/sqlite-baseline.mjs '{"dir", "warmupMs", "durationMs", "batch"}'
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import Database from 'better-sqlite3';

import { latencySummary } from '../lib/load.mjs';

const options = JSON.parse(process.argv[2]);
const db = new Database(join(options.dir, 'baseline.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.exec('CREATE TABLE rows (id TEXT PRIMARY KEY, owner TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL)');
const insert = db.prepare('INSERT INTO rows (id, owner, body, created_at) VALUES (?, ?, ?, ?)');
// About what a task row carries (tool, arguments, capabilities, times).
const body = JSON.stringify({ tool: 'noop', arguments: {}, clientCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } }, pad: 'x'.repeat(200) });
const row = () => [randomBytes(16).toString('base64url'), 'anonymous', body, Date.now()];
const insertBatch = db.transaction((count) => {
  for (let i = 0; i < count; i += 1) insert.run(...row());
});

/** Repeat `commit` (one transaction of `rows` rows) for the warm-up, then measure for the window. */
function measure(rows, commit) {
  const warmupEnd = performance.now() + options.warmupMs;
  while (performance.now() < warmupEnd) commit();
  const latencies = [];
  const cpu = process.cpuUsage();
  const started = performance.now();
  const end = started + options.durationMs;
  let commits = 0;
  for (let now = started; now < end;) {
    commit();
    const after = performance.now();
    latencies.push(after - now);
    now = after;
    commits += 1;
  }
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return {
    commitsPerSecond: commits / seconds,
    rowsPerSecond: (commits * rows) / seconds,
    ...latencySummary(latencies),
    cpuUsPerRow: (used.user + used.system) / (commits * rows),
  };
}

const singleRow = measure(1, () => insert.run(...row()));
const batched = measure(options.batch, () => insertBatch(options.batch));
db.close();
process.stdout.write(`${JSON.stringify({ singleRow, batched })}\n`);
