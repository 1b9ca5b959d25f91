// Preload for the processes a benchmark starts: times every statement each mcp-tasks process runs on SQLite (through
// better-sqlite3's Statement run/get/all and Database exec), by their first 90 characters, and writes at exit
// $SQLITE_TIMES_DIR/<pid>.json: [statement, calls, total µs] rows, slowest total first. The SQLite counterpart of
// statement-counter.mjs: where a round trip's statements spend the event loop (issue 25). The timing wraps each call
// (two hrtime reads and a Map update, about 1 µs), so read the figures against each other, not as absolutes. Usage:
//   mkdir -p /tmp/times && SQLITE_TIMES_DIR=/tmp/times NODE_OPTIONS="--import $PWD/bench/lib/sqlite-statement-timer.mjs" \
//     node bench/run.mjs --only p1 --concurrency 32 --duration 5
//   node bench/lib/sqlite-statement-timer.mjs /tmp/times/<pid>.json      # prints the table, per call and per task
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const dir = process.env.SQLITE_TIMES_DIR;
const report = process.argv[1]?.endsWith('sqlite-statement-timer.mjs') ? process.argv[2] : undefined;

if (report) {
  const rows = JSON.parse(readFileSync(report, 'utf8'));
  // Per task: against the task inserts the process made (one per round trip in P1).
  const tasks = rows.find(([statement]) => statement.startsWith('run INSERT INTO tasks'))?.[1] ?? 0;
  const total = rows.reduce((sum, [, , us]) => sum + us, 0);
  const lines = [`${rows.length} statements, ${(total / 1000).toFixed(0)} ms in all, ${tasks} tasks created`];
  for (const [statement, calls, us] of rows.slice(0, 25)) {
    const perTask = tasks > 0 ? `${(us / tasks).toFixed(1).padStart(7)} µs/task` : '';
    lines.push(
      `${String(calls).padStart(8)} calls ${(us / 1000).toFixed(0).padStart(6)} ms ${(us / calls).toFixed(1).padStart(8)} µs/call ${perTask}  ${statement}`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
} else if (dir && process.argv.some((arg) => arg.endsWith('main.js'))) {
  const Database = createRequire(join(process.cwd(), 'package.json'))('better-sqlite3');
  const times = new Map();
  const time = (key, started) => {
    const entry = times.get(key) ?? [0, 0n];
    entry[0] += 1;
    entry[1] += process.hrtime.bigint() - started;
    times.set(key, entry);
  };
  const probe = new Database(':memory:');
  const Statement = Object.getPrototypeOf(probe.prepare('SELECT 1'));
  probe.close();
  for (const method of ['run', 'get', 'all']) {
    const original = Statement[method];
    Statement[method] = function (...args) {
      const started = process.hrtime.bigint();
      try {
        return original.apply(this, args);
      } finally {
        time(`${method} ${this.source.replace(/\s+/g, ' ').slice(0, 90)}`, started);
      }
    };
  }
  const exec = Database.prototype.exec;
  Database.prototype.exec = function (sql) {
    const started = process.hrtime.bigint();
    try {
      return exec.call(this, sql);
    } finally {
      time(`exec ${sql.replace(/\s+/g, ' ').slice(0, 90)}`, started);
    }
  };
  const write = () => {
    const rows = [...times].map(([key, [calls, ns]]) => [key, calls, Number(ns) / 1000]).sort((a, b) => b[2] - a[2]);
    writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify(rows));
  };
  process.on('exit', write);
  for (const signal of ['SIGTERM', 'SIGINT']) process.prependListener(signal, write);
}
