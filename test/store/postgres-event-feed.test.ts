import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import type { TaskEvent } from '../../src/core/store.js';
import { openPostgresTaskStore, type PostgresTaskStore } from '../../src/store/postgres/index.js';
import { SQL } from '../../src/store/postgres/sql.js';
import { newTaskInput } from '../helpers/new-task.js';
import { createTestDatabase, rawClients, type TestDatabase } from '../helpers/postgres.js';

// The event feed on PostgreSQL: a tail that moves its cursor to the last seq it read must never skip an event
// that commits later (a lost cancel or wake-up). A sequence gives neither gap-free nor commit-ordered numbers;
// the store's feed counter does. Two connections commit out of order in each test.

let database: TestDatabase;
const stores: PostgresTaskStore[] = [];
const clients = rawClients();

beforeAll(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  await clients.endAll();
  await Promise.all(stores.splice(0).map((store) => store.close()));
});
afterAll(async () => {
  await database?.drop();
});

async function open(): Promise<PostgresTaskStore> {
  const store = await openPostgresTaskStore({ url: database.url });
  stores.push(store);
  return store;
}

const raw = (): Promise<pg.Client> => clients.connect(database.url);

/** Poll `check` every 10 ms until it holds (a test that hangs fails by the test timeout instead). */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('event feed', () => {
  it('negative control: a naive tail over a sequence loses an event that commits after a later one', async () => {
    const [late, early, tail] = await Promise.all([raw(), raw(), raw()]);
    await tail.query('CREATE TABLE naive_events (seq bigserial PRIMARY KEY, task_id text NOT NULL)');
    await late.query('BEGIN');
    const lateSeq = (await late.query<{ seq: string }>("INSERT INTO naive_events (task_id) VALUES ('late') RETURNING seq")).rows[0]!.seq;
    const earlySeq = (await early.query<{ seq: string }>("INSERT INTO naive_events (task_id) VALUES ('early') RETURNING seq")).rows[0]!.seq;
    expect(Number(lateSeq)).toBeLessThan(Number(earlySeq));

    const seen: string[] = [];
    let cursor = 0;
    const read = async () => {
      const { rows } = await tail.query<{ seq: string; task_id: string }>('SELECT seq, task_id FROM naive_events WHERE seq > $1 ORDER BY seq', [cursor]);
      for (const row of rows) {
        seen.push(row.task_id);
        cursor = Number(row.seq);
      }
    };
    await read();
    await late.query('COMMIT');
    await read();

    // The event is committed, yet the tail never delivered it: its seq was below the cursor when it appeared.
    expect(seen).toEqual(['early']);
    expect((await tail.query('SELECT task_id FROM naive_events ORDER BY seq')).rows.map((r) => r.task_id)).toEqual(['late', 'early']);
  });

  it("the store's feed statement from two connections: the later one cannot take a seq before the earlier commits, and a rollback leaves no gap", async () => {
    await open(); // migrates the schema
    const [c1, c2, tail, watcher] = await Promise.all([raw(), raw(), raw(), raw()]);
    const append = (client: pg.Client, taskId: string) =>
      client.query<{ seq: string }>(SQL.appendEvents, [1, [taskId], ['status'], ['cancelled'], [Date.now()], [null]]).then((r) => Number(r.rows[0]!.seq));
    const committedSeqs = async () => (await tail.query<{ seq: string }>('SELECT seq FROM mcp_tasks.task_events ORDER BY seq')).rows.map((r) => Number(r.seq));
    const waiting = async () =>
      (await watcher.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rows.length > 0;

    // c1 takes a seq and stays open; c2 tries to append (and commit) meanwhile: it waits for c1.
    await c1.query('BEGIN');
    const s1 = await append(c1, 'one');
    await c2.query('BEGIN');
    const second = append(c2, 'two');
    await until(waiting);
    expect(await committedSeqs()).toEqual([]);
    await c1.query('COMMIT');
    const s2 = await second;
    await c2.query('COMMIT');
    expect([s1, s2]).toEqual([1, 2]);
    expect(await committedSeqs()).toEqual([1, 2]);

    // A transaction that took a seq and rolled back hands the same seq to the next one: still no gap.
    await c1.query('BEGIN');
    expect(await append(c1, 'three')).toBe(3);
    await c2.query('BEGIN');
    const next = append(c2, 'four');
    await until(waiting);
    await c1.query('ROLLBACK');
    expect(await next).toBe(3);
    await c2.query('COMMIT');
    expect(await committedSeqs()).toEqual([1, 2, 3]);
  });

  it('a batch that wrote first and commits last gets the later seqs, so a tail loses nothing (cancel of a running task)', async () => {
    const [first, second, reader] = await Promise.all([open(), open(), open()]);
    const x = await first.create(newTaskInput());
    const y = await first.create(newTaskInput());
    const z = await first.create(newTaskInput());
    const cursor0 = await reader.lastEventSeq();
    const watcher = await raw();

    // Hold y's row: `first`'s batch writes x's cancel, then waits for y inside the same open transaction.
    const holder = await raw();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR UPDATE', [y.taskId]);
    const cancel = (taskId: string, store: PostgresTaskStore) => store.transition(taskId, { to: 'cancelled', releaseLease: true, now: Date.now() });
    const slow = Promise.all([cancel(x.taskId, first), cancel(y.taskId, first)]);
    await until(async () => {
      const { rows } = await watcher.query(
        "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'mcp-tasks' AND wait_event_type = 'Lock'",
      );
      return rows.length > 0;
    });

    // Another instance commits an event while that transaction (holding x's cancel) is still open.
    await cancel(z.taskId, second);
    const before = await reader.readEventsAfter(cursor0, 100);
    expect(before.map((e) => [e.taskId, e.kind, e.status])).toEqual([[z.taskId, 'status', 'cancelled']]);
    const cursor = before.at(-1)!.seq;

    await holder.query('COMMIT');
    expect((await slow).map((r) => r?.status)).toEqual(['cancelled', 'cancelled']);
    const after = await reader.readEventsAfter(cursor, 100);
    expect(after.map((e) => [e.taskId, e.status])).toEqual([
      [x.taskId, 'cancelled'],
      [y.taskId, 'cancelled'],
    ]);
    // Gap-free and in commit order: the late commit's events come after the cursor, none below it.
    expect([...before, ...after].map((e) => e.seq)).toEqual([cursor0 + 1, cursor0 + 2, cursor0 + 3]);
    expect(await reader.lastEventSeq()).toBe(cursor0 + 3);
  });

  it('a tail running while two instances commit concurrently sees every event once, in seq order, with no gap', async () => {
    const [a, b, reader] = await Promise.all([open(), open(), open()]);
    const tasks = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? a : b).create(newTaskInput())));
    const start = await reader.lastEventSeq();
    let writing = true;
    let written = 0;
    const writer = async (store: PostgresTaskStore, mine: typeof tasks) => {
      for (let round = 0; round < 40; round += 1) {
        const picked = mine.filter((_, i) => (i + round) % 3 !== 0);
        written += picked.length;
        await Promise.all(picked.map((t) => store.writeStatusMessages([{ taskId: t.taskId, statusMessage: `${round}`, now: Date.now() }])));
      }
    };
    const delivered: TaskEvent[] = [];
    const tail = (async () => {
      let cursor = start;
      for (;;) {
        const done = !writing;
        const events = await reader.readEventsAfter(cursor, 1_000);
        for (const event of events) {
          delivered.push(event);
          cursor = event.seq;
        }
        if (done && events.length === 0) return;
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    await Promise.all([
      writer(
        a,
        tasks.filter((_, i) => i % 2 === 0),
      ),
      writer(
        b,
        tasks.filter((_, i) => i % 2 === 1),
      ),
    ]);
    writing = false;
    await tail;

    const committed = await reader.readEventsAfter(start, 100_000);
    expect(committed.length).toBe(written);
    expect(delivered.map((e) => e.seq)).toEqual(committed.map((e) => e.seq));
    expect(committed.map((e) => e.seq)).toEqual(Array.from({ length: committed.length }, (_, i) => start + 1 + i));
  });
});
