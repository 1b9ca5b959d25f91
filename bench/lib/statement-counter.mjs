// Preload for the processes a benchmark starts: counts the statements each mcp-tasks process sends to PostgreSQL
// (through `pg`'s Client.query), by their first 110 characters, and writes them at exit to
// $STATEMENT_COUNTS_DIR/<role>-<pid>.json (role: `worker` when the command line has `worker`, else `api`). The split
// by process role that pg_stat_statements cannot give. Usage:
//   mkdir -p /tmp/counts && STATEMENT_COUNTS_DIR=/tmp/counts NODE_OPTIONS="--import $PWD/bench/lib/statement-counter.mjs" \
//     node bench/several-instances.mjs --only 1+1 --duration 5 --cancels 0
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const dir = process.env.STATEMENT_COUNTS_DIR;
if (dir && process.argv.some((arg) => arg.endsWith('main.js'))) {
  const pg = createRequire(import.meta.url)('pg');
  const counts = new Map();
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, ...rest) {
    const text = typeof config === 'string' ? config : (config?.text ?? config?.name ?? '?');
    const key = String(text).replace(/\s+/g, ' ').slice(0, 110);
    counts.set(key, (counts.get(key) ?? 0) + 1);
    return query.call(this, config, ...rest);
  };
  const role = process.argv.includes('worker') ? 'worker' : 'api';
  const write = () => writeFileSync(`${dir}/${role}-${process.pid}.json`, JSON.stringify([...counts].sort((a, b) => b[1] - a[1])));
  process.on('exit', write);
  for (const signal of ['SIGTERM', 'SIGINT']) process.prependListener(signal, write);
}
