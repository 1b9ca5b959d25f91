/**
 * Review 37: attacks on the PostgreSQL group commit's one-statement units (`PostgresBatcher.runAlone`).
 */
import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';

import type { TaskEvent } from '../../src/core/ports/feed.js';
import type { PostgresTaskStore } from '../../src/store/postgres/index.js';
import { SQL } from '../../src/store/postgres/sql.js';
import { newTaskInput } from '../helpers/new-task.js';
import { postgresStoresPerFile } from '../helpers/postgres.js';

const pgStores = postgresStoresPerFile();
const clients = pgStores.clients;

const open = (): Promise<PostgresTaskStore> => pgStores.open();

function textOf(args: unknown[]): string {
  return typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string }).text);
}

/** Fail the first statement whose text is `sql` with `error` (before it reaches the server). */
function failOnce(sql: string, error: Error): void {
  const query = pg.Client.prototype.query;
  let failed = false;
  vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    if (!failed && textOf(args) === sql) {
      failed = true;
      return Promise.reject(error) as never;
    }
    return (query as (...a: unknown[]) => unknown).apply(this, args) as never;
  });
}

function sqlError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('review 37: a one-statement unit that fails AFTER its autocommit', () => {
  it('a create whose one-statement form committed is neither re-run nor rejected when a follow-up read of the same unit fails', async () => {
    const store = await open();
    const events: TaskEvent[] = [];
    store.onEvent((event) => events.push(event));
    const committed = newTaskInput();
    // A v1 create that requires a session that has no record: skipped by the INSERT, then `settleInserted` asks
    // whether the session exists (a second statement, after the first one committed).
    const gone = newTaskInput({ generation: 'v1', protocolVersion: '2025-11-25', sessionId: 'no-such-session', requireSession: true });
    failOnce(SQL.sessionExists, sqlError('XX000', 'injected: internal error on the follow-up read'));
    const [a, b] = await Promise.allSettled([store.create(committed), store.create(gone)]);
    // The task row, its created event and its audit are in the database: the create committed.
    expect(await store.getUnscoped(committed.taskId)).toBeDefined();
    // ...so its caller must be told so, not get an error (and retry into a second task).
    expect(a.status).toBe('fulfilled');
    expect(b.status).toBe('rejected');
    // Its created event is in the feed; local subscribers must see it exactly once.
    const stored = (await store.readEventsAfter(0, 100)).filter((e) => e.taskId === committed.taskId);
    expect(stored.map((e) => e.kind)).toEqual(['created']);
    expect(events.filter((e) => e.taskId === committed.taskId).map((e) => e.seq)).toEqual(stored.map((e) => e.seq));
  });

  it('a connection lost after a create unit committed does not reject that committed create (only the unit that did not run)', async () => {
    const store = await open();
    const events: TaskEvent[] = [];
    store.onEvent((event) => events.push(event));
    const committed = newTaskInput();
    const gone = newTaskInput({ generation: 'v1', protocolVersion: '2025-11-25', sessionId: 'no-such-session', requireSession: true });
    failOnce(SQL.sessionExists, new Error('Connection terminated unexpectedly'));
    const [a] = await Promise.allSettled([store.create(committed), store.create(gone)]);
    expect(await store.getUnscoped(committed.taskId)).toBeDefined();
    const stored = (await store.readEventsAfter(0, 100)).filter((e) => e.taskId === committed.taskId);
    expect(stored).toHaveLength(1);
    // The event committed with its seq; this instance never publishes it.
    expect(events.filter((e) => e.taskId === committed.taskId)).toHaveLength(1);
    expect(a.status).toBe('fulfilled');
  });
});

async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 300; i += 1) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never: ${what}`);
}

async function lockWaiters(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
  );
  return rows[0]?.n ?? 0;
}

describe('review 37: local publication order with two batches in flight', () => {
  it('a batch whose first unit committed early is published before a later batch that waited for it', async () => {
    const store = await pgStores.open({ maxInFlightBatches: 2 });
    const [a, b, c, d] = await Promise.all([0, 1, 2, 3].map(() => store.create(newTaskInput())));
    const published: number[] = [];
    store.onEvent((event) => published.push(event.seq));
    const raw1 = await clients.connect(pgStores.url());
    const raw2 = await clients.connect(pgStores.url());
    const watch = await clients.connect(pgStores.url());
    await raw1.query('BEGIN');
    await raw1.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR UPDATE', [b!.taskId]);
    await raw2.query('BEGIN');
    await raw2.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR UPDATE', [d!.taskId]);
    const now = Date.now();
    // Batch X: A's cancel (one autocommit statement, commits at once), then a message write on B (waits for raw1).
    const x = Promise.all([store.transition(a!.taskId, { to: 'cancelled', now }), store.writeStatusMessages([{ taskId: b!.taskId, statusMessage: 'x', now }])]);
    await until(async () => (await store.getUnscoped(a!.taskId))?.status === 'cancelled', 'X committed its first unit');
    await until(async () => (await lockWaiters(watch)) === 1, 'X waits for B');
    // Batch Y: C's cancel commits (after A's) and finishes while X still runs: it waits for X.
    const y = store.transition(c!.taskId, { to: 'cancelled', now });
    await until(async () => (await store.getUnscoped(c!.taskId))?.status === 'cancelled', 'Y committed');
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Batch Z: starts in Y's slot and waits for raw2.
    const z = store.writeStatusMessages([{ taskId: d!.taskId, statusMessage: 'z', now }]);
    await until(async () => (await lockWaiters(watch)) === 2, 'Z waits for D');
    await raw1.query('COMMIT'); // X finishes while Z runs
    await until(async () => (await store.getUnscoped(b!.taskId))?.statusMessage === 'x', 'X committed its second unit');
    await new Promise((resolve) => setTimeout(resolve, 100));
    await raw2.query('COMMIT');
    await Promise.all([x, y, z]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(published).toHaveLength(4);
    expect(published).toEqual([...published].sort((p, q) => p - q));
  });
});
