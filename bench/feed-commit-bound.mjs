#!/usr/bin/env node
// Issue 25: how many event-appending commits per second one PostgreSQL server takes, with the feed's two
// cluster-wide serialisation points and without them, same run, same server.
//
// Every transaction inserts one row (as an event append does) and commits durably (synchronous_commit on, as the
// store runs). Variants, each a closed loop of C connections for D seconds, counted until the last started commit ends:
//   baseline      — the row's key from a sequence: concurrent commits share WAL flushes (group commit);
//   counter       — plus `UPDATE … SET last_seq = last_seq + 1` on one row, as `task_feed` does today: its row lock is
//                   held until COMMIT, through the WAL flush, so commits queue one behind the other;
//   notify        — plus `pg_notify` inside the transaction, as the feed's trigger does: PostgreSQL serialises the
//                   commits of notifying transactions on one lock too;
//   counter+notify — today's design (counter and trigger NOTIFY in the same transaction);
//   notify-after  — the baseline, then the NOTIFY in a separate transaction (synchronous_commit off) after COMMIT.
// Prints commits/s, the ratio to the baseline, and commit latency p50 / p99 / max per variant.
//
//   node bench/feed-commit-bound.mjs [--clients 1,8,32] [--duration 4] [--pg URL]
//   (the URL defaults to MCP_TASKS_BENCH_PG_URL, else the cluster of `npm run pg:start`). Uses a scratch schema
//   `feed_bound_bench`, dropped at the end.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import pg from 'pg';

import { latencySummary } from './lib/load.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const CLIENTS = String(flag('clients', '1,8,32')).split(',').map(Number);
const DURATION_MS = Number(flag('duration', 4)) * 1000;
const PG_URL = flag('pg', process.env.MCP_TASKS_BENCH_PG_URL ?? JSON.parse(readFileSync(join(ROOT, '.pg-test.json'), 'utf8')).url);
const S = 'feed_bound_bench';

const VARIANTS = {
  baseline: { counter: false, notify: 'none' },
  counter: { counter: true, notify: 'none' },
  notify: { counter: false, notify: 'inside' },
  'counter+notify': { counter: true, notify: 'inside' },
  'notify-after': { counter: false, notify: 'after' },
};

async function connect() {
  const client = new pg.Client({ connectionString: PG_URL, application_name: 'feed-commit-bound' });
  await client.connect();
  return client;
}

async function setup() {
  const admin = await connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${S} CASCADE; CREATE SCHEMA ${S};
    CREATE SEQUENCE ${S}.seq;
    CREATE TABLE ${S}.counter (id boolean PRIMARY KEY, last_seq bigint NOT NULL); INSERT INTO ${S}.counter VALUES (true, 0);
    CREATE TABLE ${S}.rows (id bigint PRIMARY KEY, body text NOT NULL);`);
  const [{ synchronous_commit: sync }] = (await admin.query('SHOW synchronous_commit')).rows;
  const [{ fsync }] = (await admin.query('SHOW fsync')).rows;
  await admin.end();
  return { sync, fsync };
}

/** One closed loop; every started commit is waited for, so the count includes the slowest. */
async function run(variant, clients) {
  const { counter, notify } = VARIANTS[variant];
  const conns = await Promise.all(Array.from({ length: clients }, connect));
  const sides = notify === 'after' ? await Promise.all(Array.from({ length: clients }, connect)) : [];
  const latencies = [];
  const started = performance.now();
  const end = started + DURATION_MS;
  await Promise.all(
    conns.map(async (c, i) => {
      while (performance.now() < end) {
        const t0 = performance.now();
        await c.query('BEGIN');
        await c.query(`INSERT INTO ${S}.rows (id, body) VALUES (nextval('${S}.seq'), 'x')`);
        if (notify === 'inside') await c.query(`SELECT pg_notify('feed_bound_bench', 'x')`);
        if (counter) await c.query(`UPDATE ${S}.counter SET last_seq = last_seq + 1`);
        await c.query('COMMIT');
        if (notify === 'after') await sides[i].query(`BEGIN; SET LOCAL synchronous_commit = off; SELECT pg_notify('feed_bound_bench', 'x'); COMMIT`);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await Promise.all([...conns, ...sides].map((c) => c.end()));
  return { perSecond: latencies.length / elapsed, ...latencySummary(latencies) };
}

const settings = await setup();
const f = (n, d = 0) => (n === null || n === undefined ? 'n/a' : n.toFixed(d));
console.log(`Event-appending commits on one PostgreSQL (synchronous_commit ${settings.sync}, fsync ${settings.fsync}; ${DURATION_MS / 1000} s per run)`);
console.log('| connections | variant | commits/s | × baseline | commit p50 / p99 / max ms |\n|---:|---|---:|---:|---|');
try {
  for (const clients of CLIENTS) {
    let base;
    for (const variant of Object.keys(VARIANTS)) {
      const r = await run(variant, clients);
      base ??= r.perSecond;
      console.log(`| ${clients} | ${variant} | ${f(r.perSecond)} | ×${f(r.perSecond / base, 2)} | ${f(r.p50Ms, 1)} / ${f(r.p99Ms, 1)} / ${f(r.maxMs, 1)} |`);
    }
  }
} finally {
  const admin = await connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${S} CASCADE`);
  await admin.end();
}
