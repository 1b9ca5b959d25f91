// Statement forms of the SQLite store's hot writes (issue 25): µs per operation of the form the store uses now and of
// the forms it replaced, on one connection with the store's schema and settings, the table pre-filled with `--rows`
// ended tasks. Each round inserts fresh `working` tasks for every form, runs the forms in a random order (so drift,
// caches and the table's growth fall on all of them alike) and commits; a form's time is its statements only.
//   transition: the completion of one task (UPDATE … RETURNING the row);
//   claim: starting 3 unleased tasks (the store's claim of a batch, RETURNING the rows).
// Usage: npm run build && node bench/sqlite-statements.mjs [--rows 100000] [--rounds 3000]
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import Database from 'better-sqlite3';

import { openSqliteTaskStore } from '../dist/store/sqlite/index.js';
import { SQL } from '../dist/store/sqlite/sql.js';

const { values } = parseArgs({ options: { rows: { type: 'string', default: '100000' }, rounds: { type: 'string', default: '3000' } } });
const ROWS = Number(values.rows);
const ROUNDS = Number(values.rounds);
const CLAIMED = 3;

const dir = mkdtempSync(join(tmpdir(), 'sqlite-statements-'));
const path = join(dir, 'tasks.db');
await openSqliteTaskStore({ path }).close(); // the schema, as the store migrates it
const db = new Database(path);
db.pragma('synchronous = NORMAL'); // the store's setting (its log is fsynced off the loop, not by these statements)

const COLUMNS = SQL.getUnscoped.match(/SELECT ([\s\S]*) FROM/)[1];
const insert = db.prepare(SQL.insertTask);
const insertNames = [...SQL.insertTask.matchAll(/@(\w+)/g)].map((match) => match[1]);
let seq = 1;
function insertWorking(leased = false) {
  const params = Object.fromEntries(insertNames.map((name) => [name, null]));
  Object.assign(params, {
    taskId: randomBytes(16).toString('hex'),
    ownerKey: 'owner',
    generation: 'v1',
    protocolVersion: '2025-11-25',
    toolName: 'noop',
    arguments: '{}',
    clientCapabilities: '{}',
    createdAt: Date.now(),
    ttlMs: 3_600_000,
    pollIntervalMs: 1000,
    expiresAt: Date.now() + 3_600_000,
    seq: seq++,
    attempt: 0,
    ...(leased ? { leaseOwner: 'holder', leaseExpiresAt: Date.now() + 60_000 } : {}),
  });
  insert.run(params);
  return params.taskId;
}
const endAll = db.prepare("UPDATE tasks SET status = 'completed', lease_owner = NULL, lease_expires_at = NULL WHERE status = 'working'");

db.exec('BEGIN');
for (let i = 0; i < ROWS; i++) insertWorking();
endAll.run();
db.exec('COMMIT');

/** The completion's parameters, for a form that names them (better-sqlite3 refuses unused named parameters). */
const completion = (taskId) => ({ taskId, to: 'completed', setMessage: 0, statusMessage: null, releaseLease: 1, leaseOwner: null, now: Date.now() });
const OLD_TRANSITION = SQL.transition.replace(/AND \(\(status = 'working'[^\n]*\n/, 'AND status IN (SELECT value FROM json_each(@from))\n');
const TRANSITIONS = {
  'two source flags (now)': { sql: SQL.transition, params: (id) => ({ ...completion(id), fromWorking: 1, fromInputRequired: 1 }) },
  'status IN (SELECT … json_each(@from)) (before 6b463e1)': {
    sql: OLD_TRANSITION,
    params: (id) => ({ ...completion(id), from: '["working","input_required"]' }),
  },
  'status IN (@a, @b)': {
    sql: SQL.transition.replace(/AND \(\(status = 'working'[^\n]*\n/, 'AND status IN (@a, @b)\n'),
    params: (id) => ({ ...completion(id), a: 'working', b: 'input_required' }),
  },
};

const claimParams = () => ({ leaseOwner: 'worker', now: Date.now(), leaseExpiresAt: Date.now() + 30_000 });
const candidates = db.prepare(SQL.runnableCandidates);
const claimOne = db.prepare(SQL.claimRunnable);
const oldClaim = db.prepare(`UPDATE tasks SET attempt = attempt + 1, lease_owner = @leaseOwner, lease_expires_at = @leaseExpiresAt
    WHERE task_id IN (SELECT task_id FROM tasks
      WHERE status = 'working' AND lease_expires_at IS NULL AND lease_owner IS NULL AND (expires_at IS NULL OR expires_at > @now)
      ORDER BY seq LIMIT @limit)
    RETURNING ${COLUMNS}`);
const CLAIMS = {
  'candidates, then one UPDATE … RETURNING each (now)': () => {
    const { now, ...rest } = claimParams();
    return candidates.all({ now, limit: 16 }).map(({ task_id: taskId }) => claimOne.get({ taskId, now, ...rest }));
  },
  'UPDATE … WHERE task_id IN (SELECT … LIMIT) RETURNING (before 6b463e1)': () => oldClaim.all({ ...claimParams(), limit: 16 }),
};

const forms = [
  ...Object.entries(TRANSITIONS).map(([name, { sql, params }]) => {
    const statement = db.prepare(sql);
    return { kind: 'transition', name, prepare: () => insertWorking(true), run: (id) => statement.get(params(id)), ops: 1 };
  }),
  ...Object.entries(CLAIMS).map(([name, claim]) => ({
    kind: 'claim',
    name,
    prepare: () => Array.from({ length: CLAIMED }, insertWorking),
    run: () => {
      if (claim().length !== CLAIMED) throw new Error(`${name} claimed the wrong number of tasks`);
    },
    ops: 1,
    alone: true,
  })),
];
const spent = forms.map(() => 0n);

for (let round = 0; round < ROUNDS; round++) {
  db.exec('BEGIN IMMEDIATE');
  const order = forms.map((_, index) => index).sort(() => Math.random() - 0.5);
  // Transitions work on their own fresh rows, leased (so no claim takes them); a claim takes every unleased task, so
  // each claim runs on its own rows: inserted right before it and ended right after (outside the timing).
  const prepared = forms.map((form) => (form.alone ? undefined : form.prepare()));
  for (const index of order) {
    const form = forms[index];
    const input = form.alone ? form.prepare() : prepared[index];
    const started = process.hrtime.bigint();
    form.run(input);
    spent[index] += process.hrtime.bigint() - started;
    if (form.alone) endAll.run();
  }
  endAll.run();
  db.exec('COMMIT');
}

process.stdout.write(`SQLite ${db.prepare('SELECT sqlite_version() AS v').get().v}, ${ROWS} ended tasks, ${ROUNDS} rounds (Node ${process.version})\n`);
for (const [index, form] of forms.entries()) {
  const perOp = Number(spent[index]) / 1000 / ROUNDS / form.ops;
  const what = form.kind === 'claim' ? `claim of ${CLAIMED}` : 'transition';
  process.stdout.write(`${what.padEnd(12)} ${perOp.toFixed(1).padStart(7)} µs  ${form.name}\n`);
}
db.close();
rmSync(dir, { recursive: true, force: true });
