/**
 * Issue 25: the transitions of one batch are ONE set-based statement on PostgreSQL (`SQL.transitions`,
 * `PostgresTransitions`). Each test checks both that the set form ran (statements counted at the driver) and that it
 * gives exactly what the item-by-item form gave: per-item conditions and results, outcomes, `task.ended` entries,
 * `status` events with gap-free seqs in item order, the sequential result for a repeated task id, and the races the
 * row lock settles (with negative controls that show the scenario would catch the lock missing).
 */
import type pg from 'pg';
import { describe, expect, it } from 'vitest';

import type { TransitionRequest } from '../../src/core/ports/rows.js';
import type { TaskOutcome, TaskRecord } from '../../src/core/task.js';
import type { PostgresTaskStore } from '../../src/store/postgres/index.js';
import { SQL } from '../../src/store/postgres/sql.js';
import { transitionItem } from '../../src/store/postgres/transitions.js';
import { newTaskInput } from '../helpers/new-task.js';
import { statementsOf } from '../helpers/pg-statements.js';
import { postgresStoresPerFile } from '../helpers/postgres.js';

const RESULT: TaskOutcome = { kind: 'result', result: { content: [{ type: 'text', text: 'done' }] } };
const ERROR: TaskOutcome = { kind: 'error', error: { code: -32603, message: 'boom', data: { reason: 'runtime_limit' } } };
/** How the set statement's text begins (what `statementsOf` records of it). */
const SET_FORM = 'WITH v AS (SELECT * FROM unnest(';

const pgStores = postgresStoresPerFile();
const clients = pgStores.clients;

const open = (): Promise<PostgresTaskStore> => pgStores.open();

/** The parameter arrays of `SQL.transitions` for these transitions, as the store builds them (for the controls). */
function setParams(items: ReadonlyArray<[string, TransitionRequest]>): unknown[][] {
  const values = items.map(([taskId, request]) => transitionItem(taskId, request).values);
  return (values[0] ?? []).map((_, k) => values.map((v) => v[k]));
}

/** The `task.ended` entries of `taskIds`, in audit order, as `[taskId, outcome, detail]`. */
async function endedEntries(store: PostgresTaskStore, taskIds: readonly string[]): Promise<unknown[]> {
  return (await store.listAudit({ limit: 10_000 }))
    .filter((entry) => entry.kind === 'task.ended' && taskIds.includes(entry.taskId ?? ''))
    .map((entry) => [entry.taskId, entry.outcome, entry.detail]);
}

/** Wait until some backend of the test database waits for a row lock (the statement under test is blocked). */
async function untilSomeoneWaitsForALock(client: pg.Client): Promise<void> {
  for (let i = 0; i < 500; i += 1) {
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if ((rows[0]?.n ?? 0) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('no backend ever waited for the lock');
}

describe('issue 25: the transitions of one batch as one set-based statement', () => {
  it('mixed items in one tick give exactly the per-item results, outcomes, task.ended entries and events (seqs gap-free, in item order)', async () => {
    const store = await open();
    const leased = () => newTaskInput({ leaseOwner: 'i-a', leaseMs: 60_000 });
    const [done, lostLease, terminal, parked, failed, wrongFrom, waiting] = await Promise.all(
      [leased(), leased(), newTaskInput(), leased(), leased(), newTaskInput(), newTaskInput()].map((t) => store.create(t)),
    );
    await store.transition(terminal!.taskId, { to: 'completed', outcome: RESULT, now: Date.now() });
    await store.transition(waiting!.taskId, { to: 'input_required', statusMessage: 'waiting', now: Date.now() });
    const before = await store.lastEventSeq();
    const base = Date.now();
    // Each item its own now, so an event's `at` shows which item it came from.
    const items: Array<[string, TransitionRequest]> = [
      [done!.taskId, { to: 'completed', outcome: RESULT, leaseOwner: 'i-a', releaseLease: true, now: base + 1, endedAudit: {} }],
      [lostLease!.taskId, { to: 'completed', outcome: RESULT, leaseOwner: 'i-b', releaseLease: true, now: base + 2, endedAudit: {} }],
      [terminal!.taskId, { to: 'cancelled', statusMessage: 'too late', now: base + 3 }],
      ['no-such-task', { to: 'cancelled', now: base + 4 }],
      [parked!.taskId, { to: 'input_required', statusMessage: 'need a name', releaseLease: true, now: base + 5 }],
      [
        failed!.taskId,
        { to: 'failed', outcome: ERROR, statusMessage: null, leaseOwner: 'i-a', releaseLease: true, now: base + 6, endedAudit: { reason: 'runtime_limit' } },
      ],
      [wrongFrom!.taskId, { to: 'cancelled', from: ['input_required'], now: base + 7, endedAudit: {} }],
      [waiting!.taskId, { to: 'working', from: ['input_required'], now: base + 8 }],
    ];
    let results: Array<TaskRecord | undefined> = [];
    const sent = await statementsOf(async () => {
      results = await Promise.all(items.map(([taskId, request]) => store.transition(taskId, request)));
    });
    expect(sent).toHaveLength(1);
    expect(sent[0]?.startsWith(SET_FORM)).toBe(true);

    const summary = (r: TaskRecord | undefined) => r && [r.taskId, r.status, r.statusMessage, r.leaseOwner, r.leaseExpiresAt, r.lastUpdatedAt];
    expect(results.map(summary)).toEqual([
      [done!.taskId, 'completed', null, null, null, base + 1],
      undefined,
      undefined,
      undefined,
      [parked!.taskId, 'input_required', 'need a name', null, null, base + 5],
      [failed!.taskId, 'failed', null, null, null, base + 6],
      undefined,
      [waiting!.taskId, 'working', 'waiting', null, null, base + 8],
    ]);
    // The records returned are the rows as stored.
    for (const record of results.filter((r) => r !== undefined)) expect(await store.getUnscoped(record.taskId)).toEqual(record);
    // Items whose condition did not hold changed nothing.
    expect(await store.getUnscoped(lostLease!.taskId)).toEqual(lostLease);
    expect((await store.getUnscoped(terminal!.taskId))?.status).toBe('completed');
    expect(await store.getUnscoped(wrongFrom!.taskId)).toEqual(wrongFrom);

    expect(await store.getOutcome(done!.taskId)).toEqual(RESULT);
    expect(await store.getOutcome(failed!.taskId)).toEqual(ERROR);
    expect(await store.getOutcome(lostLease!.taskId)).toBeUndefined();
    expect(
      await endedEntries(
        store,
        items.map(([taskId]) => taskId),
      ),
    ).toEqual([
      [done!.taskId, 'completed', null],
      [failed!.taskId, 'failed', { reason: 'runtime_limit' }],
    ]);

    const events = await store.readEventsAfter(before, 100);
    expect(events.map((e) => [e.seq, e.taskId, e.kind, e.status, e.at, e.payload])).toEqual([
      [before + 1, done!.taskId, 'status', 'completed', base + 1, { from: 'working', to: 'completed' }],
      [before + 2, parked!.taskId, 'status', 'input_required', base + 5, { from: 'working', to: 'input_required' }],
      [before + 3, failed!.taskId, 'status', 'failed', base + 6, { from: 'working', to: 'failed' }],
      [before + 4, waiting!.taskId, 'status', 'working', base + 8, { from: 'input_required', to: 'working' }],
    ]);
    expect(await store.lastEventSeq()).toBe(before + 4);
    // The payload text is what JSON.stringify writes (the item-by-item form's, and SQLite's).
    const raw = await clients.connect(pgStores.url());
    const { rows } = await raw.query<{ payload: string }>('SELECT payload FROM mcp_tasks.task_events WHERE seq > $1 ORDER BY seq', [before]);
    expect(rows.map((row) => row.payload)).toEqual(events.map((e) => JSON.stringify(e.payload)));

    // Nothing applies: still one statement, and no seq is taken.
    const none = await statementsOf(() => Promise.all(items.slice(0, 4).map(([taskId, request]) => store.transition(taskId, request))));
    expect(none).toHaveLength(1);
    expect(await store.lastEventSeq()).toBe(before + 4);
  });

  it('a task id repeated in one batch gets the sequential result (the later item sees the earlier one); one statement cannot give it (control)', async () => {
    const store = await open();
    const [a, b] = await Promise.all([store.create(newTaskInput()), store.create(newTaskInput())]);
    const now = Date.now();
    // Sequentially all three apply: a parks, a resumes, b completes.
    const items: Array<[string, TransitionRequest]> = [
      [a!.taskId, { to: 'input_required', from: ['working'], statusMessage: 'q', now }],
      [b!.taskId, { to: 'completed', outcome: RESULT, now, endedAudit: {} }],
      [a!.taskId, { to: 'working', from: ['input_required'], statusMessage: null, now: now + 1 }],
    ];

    // Control: the set statement on its own, given the repeated id, reads a's row once and misses the second change.
    const raw = await clients.connect(pgStores.url());
    await raw.query('BEGIN');
    const { rows } = await raw.query<{ task_id: string; status: string }>(SQL.transitions, setParams(items));
    await raw.query('ROLLBACK');
    expect(rows.map((row) => [row.task_id, row.status])).not.toEqual([
      [a!.taskId, 'input_required'],
      [b!.taskId, 'completed'],
      [a!.taskId, 'working'],
    ]);

    const before = await store.lastEventSeq();
    const results = await Promise.all(items.map(([taskId, request]) => store.transition(taskId, request)));
    expect(results.map((r) => r && [r.taskId, r.status, r.statusMessage])).toEqual([
      [a!.taskId, 'input_required', 'q'],
      [b!.taskId, 'completed', null],
      [a!.taskId, 'working', null],
    ]);
    const events = await store.readEventsAfter(before, 100);
    expect(events.map((e) => [e.seq, e.taskId, e.payload])).toEqual([
      [before + 1, a!.taskId, { from: 'working', to: 'input_required' }],
      [before + 2, b!.taskId, { from: 'working', to: 'completed' }],
      [before + 3, a!.taskId, { from: 'input_required', to: 'working' }],
    ]);
    expect(await endedEntries(store, [a!.taskId, b!.taskId])).toEqual([[b!.taskId, 'completed', null]]);
  });

  it('cancels batched while another process commits completions of some of those tasks: only the untouched ones cancel (control: without the row lock all cancel)', async () => {
    const store = await open();
    const tasks = await Promise.all(Array.from({ length: 4 }, () => store.create(newTaskInput())));
    const ids = tasks.map((task) => task.taskId);
    const cancels = ids.map((taskId): [string, TransitionRequest] => [taskId, { to: 'cancelled', now: Date.now() }]);
    const other = await clients.connect(pgStores.url());
    const watcher = await clients.connect(pgStores.url());

    /** The other process's completions of the first two tasks, committed while `cancel` waits for their rows. */
    const race = async <T>(cancel: () => Promise<T>): Promise<T> => {
      await other.query('BEGIN');
      await other.query(`UPDATE mcp_tasks.tasks SET status = 'completed' WHERE task_id = ANY($1::text[])`, [ids.slice(0, 2)]);
      const pending = cancel();
      await untilSomeoneWaitsForALock(watcher);
      await other.query('COMMIT');
      return pending;
    };

    // Control: the same statement without `FOR NO KEY UPDATE` in `cur` judges the status it read before the wait.
    const unlocked = SQL.transitions.replace('ORDER BY t.task_id FOR NO KEY UPDATE', 'ORDER BY t.task_id');
    expect(unlocked).not.toBe(SQL.transitions);
    const broken = await clients.connect(pgStores.url());
    await broken.query('BEGIN');
    const control = await race(() => broken.query<{ task_id: string; from_status: string }>(unlocked, setParams(cancels)));
    await broken.query('ROLLBACK');
    expect(control.rows.map((row) => [row.task_id, row.from_status])).toEqual(ids.map((id) => [id, 'working']));
    await other.query(`UPDATE mcp_tasks.tasks SET status = 'working' WHERE task_id = ANY($1::text[])`, [ids]);

    const before = await store.lastEventSeq();
    let results: Array<TaskRecord | undefined> = [];
    const sent = await statementsOf(async () => {
      results = await race(() => Promise.all(cancels.map(([taskId, request]) => store.transition(taskId, request))));
    });
    expect(sent.filter((text) => text.startsWith(SET_FORM))).toHaveLength(1);
    expect(results.map((r) => r?.status)).toEqual([undefined, undefined, 'cancelled', 'cancelled']);
    expect(await Promise.all(ids.map(async (id) => (await store.getUnscoped(id))?.status))).toEqual(['completed', 'completed', 'cancelled', 'cancelled']);
    const events = await store.readEventsAfter(before, 100);
    expect(events.map((e) => [e.seq, e.taskId, e.payload])).toEqual([
      [before + 1, ids[2], { from: 'working', to: 'cancelled' }],
      [before + 2, ids[3], { from: 'working', to: 'cancelled' }],
    ]);
  });

  it('two processes end the same tasks in opposite orders, batched: exactly one end per task, and no deadlock (rows locked in task-id order)', async () => {
    const [a, b] = await Promise.all([open(), open()]);
    for (let round = 0; round < 8; round += 1) {
      const tasks = await Promise.all(Array.from({ length: 8 }, () => a.create(newTaskInput())));
      const before = await a.lastEventSeq();
      const now = Date.now();
      const [completed, cancelled] = await Promise.all([
        Promise.all(tasks.map((task) => a.transition(task.taskId, { to: 'completed', outcome: RESULT, now, endedAudit: {} }))),
        Promise.all([...tasks].reverse().map((task) => b.transition(task.taskId, { to: 'cancelled', now }))).then((r) => r.reverse()),
      ]);
      const events = await a.readEventsAfter(before, 100);
      for (const [i, task] of tasks.entries()) {
        const winner = completed[i] ?? cancelled[i];
        expect({ round, i, both: completed[i] !== undefined && cancelled[i] !== undefined }).toEqual({ round, i, both: false });
        expect((await a.getUnscoped(task.taskId))?.status).toBe(winner?.status);
        expect(events.filter((e) => e.taskId === task.taskId).map((e) => e.payload)).toEqual([{ from: 'working', to: winner?.status }]);
        expect(await endedEntries(a, [task.taskId])).toEqual(completed[i] ? [[task.taskId, 'completed', null]] : []);
      }
      expect(events.map((e) => e.seq)).toEqual(events.map((_, k) => before + k + 1));
    }
    expect(a.stats().retries + b.stats().retries).toBe(0);
  });
});
