import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { TaskEventFeed } from '../../src/core/event-feed.js';
import { silentLogger } from '../../src/core/logger.js';
import type { TaskEvent, TaskStore } from '../../src/core/store.js';
import { openPostgresTaskStore, type PostgresTaskStore } from '../../src/store/postgres/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { createTestDatabase, rawClients, type TestDatabase } from '../helpers/postgres.js';

// Cross-process wake-ups (issue 11 item 4): a commit on one instance reaches the event feed of another through
// LISTEN/NOTIFY without waiting for the poll, and a dropped LISTEN connection (pg_terminate_backend) loses nothing.
// The feeds here poll once a minute, so anything that arrives within seconds arrived by the push.

const NO_POLL_MS = 60_000;
let database: TestDatabase;
const stores: PostgresTaskStore[] = [];
const feeds: TaskEventFeed[] = [];
const clients = rawClients();

beforeAll(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  for (const feed of feeds.splice(0)) feed.close();
  await clients.endAll();
  await Promise.all(stores.splice(0).map((store) => store.close()));
});
afterAll(async () => {
  await database?.drop();
});

async function open(applicationName = 'mcp-tasks'): Promise<PostgresTaskStore> {
  const store = await openPostgresTaskStore({ url: database.url, applicationName });
  stores.push(store);
  return store;
}

/** A feed on `store` polling every `pollMs`, recording every event it delivers. */
async function follow(store: TaskStore, pollMs: number): Promise<TaskEvent[]> {
  const feed = new TaskEventFeed(store, silentLogger);
  feeds.push(feed);
  const seen: TaskEvent[] = [];
  feed.subscribeAll((event) => seen.push(event));
  await feed.start(pollMs);
  return seen;
}

async function within(ms: number, check: () => boolean | Promise<boolean>): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return check();
}

/** Backends of this test's database with `application_name`. */
async function backends(applicationName: string): Promise<number[]> {
  const admin = await clients.connect(database.url);
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1', [
    applicationName,
  ]);
  return rows.map((row) => row.pid);
}

/** The listen connection of the feed on `applicationName` once it is up. */
async function listenBackend(applicationName: string): Promise<number> {
  let pids: number[] = [];
  expect(await within(5_000, async () => (pids = await backends(`${applicationName}-listen`)).length === 1)).toBe(true);
  return pids[0] as number;
}

describe('PostgreSQL wake-ups across instances (LISTEN mcp_tasks_feed)', () => {
  it('a create committed by instance A reaches the feed of instance B at once, without its poll', async () => {
    const [a, b] = [await open('wake-a'), await open('wake-b')];
    const seen = await follow(b, NO_POLL_MS);
    await listenBackend('wake-b');
    const task = await a.create(newTaskInput());
    expect(await within(2_000, () => seen.some((event) => event.taskId === task.taskId && event.kind === 'created'))).toBe(true);
    const cancelled = await a.transition(task.taskId, { to: 'cancelled', now: Date.now() });
    expect(cancelled?.status).toBe('cancelled');
    expect(await within(2_000, () => seen.some((event) => event.taskId === task.taskId && event.kind === 'status' && event.status === 'cancelled'))).toBe(true);
  });

  it('negative control: the same feed without the push sees nothing before its poll', async () => {
    const [a, b] = [await open('wake-a'), await open('wake-b')];
    // The store as a reader that cannot watch commits (SQLite's shape): only the poll is left.
    const pollOnly: TaskStore = new Proxy(b, { get: (target, key) => (key === 'watchCommits' ? undefined : (Reflect.get(target, key, target) as unknown)) });
    const seen = await follow(pollOnly, NO_POLL_MS);
    const task = await a.create(newTaskInput());
    expect(await within(1_000, () => seen.some((event) => event.taskId === task.taskId))).toBe(false);
  });

  it('pg_terminate_backend of the LISTEN connection: events committed meanwhile arrive, and the listener comes back', async () => {
    const [a, b] = [await open('wake-a'), await open('wake-b')];
    const seen = await follow(b, NO_POLL_MS);
    const first = await listenBackend('wake-b');
    const admin = await clients.connect(database.url);
    await admin.query('SELECT pg_terminate_backend($1)', [first]);
    // Committed while nobody listens: its notification is lost; the reconnect's catch-up must deliver it.
    const duringGap = await a.create(newTaskInput());
    await a.transition(duringGap.taskId, { to: 'cancelled', now: Date.now() });
    expect(await within(10_000, () => seen.some((event) => event.taskId === duringGap.taskId && event.kind === 'status' && event.status === 'cancelled'))).toBe(
      true,
    );
    const second = await listenBackend('wake-b');
    expect(second).not.toBe(first);
    // Listening again: a later commit arrives by the push (the poll is a minute away).
    const after = await a.create(newTaskInput());
    expect(await within(2_000, () => seen.some((event) => event.taskId === after.taskId))).toBe(true);
  });

  it('a listener killed over and over loses no event, with the poll as the fallback', async () => {
    const [a, b] = [await open('wake-a'), await open('wake-b')];
    const seen = await follow(b, 200);
    await listenBackend('wake-b');
    const admin = await clients.connect(database.url);
    let killing = true;
    const killer = (async () => {
      while (killing) {
        await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'wake-b-listen'");
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
    })();
    const ids: string[] = [];
    for (let i = 0; i < 30; i += 1) {
      ids.push((await a.create(newTaskInput())).taskId);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    killing = false;
    await killer;
    expect(await within(5_000, () => ids.every((id) => seen.some((event) => event.taskId === id && event.kind === 'created')))).toBe(true);
    // Delivered once each, in seq order.
    const seqs = seen.map((event) => event.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
  });

  it("issue 25: the notification carries the commit's events, so instance B delivers A's create and cancel without reading the feed", async () => {
    const { a, seen, reads } = await listeningWithReadsCounted();
    const task = await a.create(newTaskInput());
    await a.transition(task.taskId, { to: 'cancelled', now: Date.now() });
    expect(await within(2_000, () => seen.some((event) => event.taskId === task.taskId && event.kind === 'status' && event.status === 'cancelled'))).toBe(true);
    expect(seen.filter((event) => event.taskId === task.taskId).map((event) => event.kind)).toEqual(['created', 'status']);
    expect(reads.count).toBe(0);
  });

  it('issue 25 negative control: a commit whose events exceed a notification (8000 bytes) is announced by its seq alone and arrives by a read', async () => {
    const { a, seen, reads } = await listeningWithReadsCounted();
    const task = await a.create(newTaskInput());
    await within(2_000, () => seen.some((event) => event.taskId === task.taskId));
    expect(reads.count).toBe(0);
    // One event with a 9 KB payload, appended the way the store appends (the feed counter moves, the trigger notifies).
    const raw = await clients.connect(database.url);
    await raw.query(
      `WITH f AS (UPDATE mcp_tasks.task_feed SET last_seq = last_seq + 1 RETURNING last_seq - 1 AS base)
       INSERT INTO mcp_tasks.task_events (seq, task_id, kind, status, at, payload) SELECT f.base + 1, $1, 'message', 'working', $2, $3 FROM f`,
      [task.taskId, Date.now(), JSON.stringify({ note: 'x'.repeat(9_000) })],
    );
    expect(await within(2_000, () => seen.some((event) => event.taskId === task.taskId && event.kind === 'message'))).toBe(true);
    expect(reads.count).toBeGreaterThan(0);
  });
});

/**
 * Instance A, and instance B's feed (no poll) listening, with B's reads of the feed counted from now on (the
 * listener's catch-up read after it connected is not part of what is measured).
 */
async function listeningWithReadsCounted(): Promise<{ a: PostgresTaskStore; seen: TaskEvent[]; reads: { count: number } }> {
  const [a, b] = [await open('wake-a'), await open('wake-b')];
  const { store: counted, reads } = countingReads(b);
  const seen = await follow(counted, NO_POLL_MS);
  await listenBackend('wake-b');
  await new Promise((resolve) => setTimeout(resolve, 200));
  reads.count = 0;
  return { a, seen, reads };
}

/** `store` with its `readEventsAfter` calls counted in `reads.count`. */
function countingReads(store: PostgresTaskStore): { store: TaskStore; reads: { count: number } } {
  const reads = { count: 0 };
  const counted: TaskStore = new Proxy(store, {
    get: (target, key) => {
      const value = Reflect.get(target, key, target) as unknown;
      if (key === 'readEventsAfter') {
        return (afterSeq: number, limit: number) => {
          reads.count += 1;
          return target.readEventsAfter(afterSeq, limit);
        };
      }
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: counted, reads };
}
