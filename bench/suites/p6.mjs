// P6: durable creates on PostgreSQL through the TaskStore port (32 creators by default: the highest concurrency)
// against single-row INSERT commits/s on the same server in the same run, plus the port with batching turned off
// (one create per transaction) to show what group commit contributes. Needs a PostgreSQL server: the one
// MCP_TASKS_TEST_PG_URL names, else the one `npm run pg:start` recorded; without either it is skipped, loudly.
// Each run gets a fresh database with synchronous_commit on (durable commits), dropped afterwards.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import pg from 'pg';

import { loadFigure } from '../lib/context.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The PostgreSQL server of the tests, or `undefined`. */
export function benchPostgresUrl() {
  if (process.env.MCP_TASKS_TEST_PG_URL) return process.env.MCP_TASKS_TEST_PG_URL;
  try {
    return JSON.parse(readFileSync(join(ROOT, '.pg-test.json'), 'utf8')).url;
  } catch {
    return undefined;
  }
}

async function admin(url, sql) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A fresh database on the server of `url`, durable commits; returns its URL and a drop function. */
async function freshDatabase(url) {
  const name = `mcp_tasks_bench_${randomBytes(5).toString('hex')}`;
  await admin(url, `CREATE DATABASE ${name} TEMPLATE template0`);
  await admin(url, `ALTER DATABASE ${name} SET synchronous_commit = on`);
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return { url: parsed.toString(), drop: () => admin(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

export async function p6(ctx) {
  const url = benchPostgresUrl();
  if (!url) {
    process.stderr.write('   P6 skipped: no PostgreSQL server (start one with `npm run pg:start`, or set MCP_TASKS_TEST_PG_URL)\n');
    return;
  }
  const clients = ctx.concurrencyHigh;
  const timing = { warmupMs: ctx.options.warmupMs, durationMs: ctx.options.durationMs };
  const withMaxMs = (result) => ({ maxMs: result.maxMs });

  const baselineDb = await freshDatabase(url);
  try {
    const baseline = await ctx.measure('pg-baseline', { ...timing, url: baselineDb.url, clients });
    ctx.record(
      `baseline.pg.singleRow.c${clients}`,
      loadFigure(`PostgreSQL single-row INSERT commits, ${clients} connections`, 'commits/s', baseline, withMaxMs(baseline)),
    );
  } finally {
    await baselineDb.drop();
  }

  const storeDb = await freshDatabase(url);
  try {
    const store = await ctx.measure('pg-store-creates', { ...timing, url: storeDb.url, clients });
    ctx.record(
      `p6.store.c${clients}`,
      loadFigure(`P6 durable creates at the TaskStore port on PostgreSQL, ${clients} creators (in-process)`, 'creates/s', store, {
        operationsPerCommit: store.operationsPerCommit,
        ...withMaxMs(store),
      }),
    );
  } finally {
    await storeDb.drop();
  }

  const unbatchedDb = await freshDatabase(url);
  try {
    const unbatched = await ctx.measure('pg-store-creates', { ...timing, url: unbatchedDb.url, clients, maxBatchSize: 1 });
    ctx.record(
      `p6.storeUnbatched.c${clients}`,
      loadFigure(`P6 the same with batching off (one create per transaction, ${clients} in flight)`, 'creates/s', unbatched, {
        operationsPerCommit: unbatched.operationsPerCommit,
        ...withMaxMs(unbatched),
      }),
    );
  } finally {
    await unbatchedDb.drop();
  }
}
