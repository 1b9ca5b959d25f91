/**
 * Review 37: faults in later units of a batch whose leading units committed as one-statement forms.
 */
import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';

import type { TaskEvent } from '../../src/core/ports/feed.js';
import type { TaskOutcome } from '../../src/core/task.js';
import type { PostgresTaskStore } from '../../src/store/postgres/index.js';
import { SQL } from '../../src/store/postgres/sql.js';
import { newTaskInput } from '../helpers/new-task.js';
import { postgresStoresPerFile } from '../helpers/postgres.js';

const RESULT: TaskOutcome = { kind: 'result', result: { content: [{ type: 'text', text: 'done' }] } };
const pgStores = postgresStoresPerFile();

async function open(): Promise<{ store: PostgresTaskStore; published: TaskEvent[] }> {
  const store = await pgStores.open();
  const published: TaskEvent[] = [];
  store.onEvent((event) => published.push(event));
  return { store, published };
}

function textOf(args: unknown[]): string {
  return typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string }).text);
}

/** Fail the first `times` statements whose text is `sql` with `error`; count every statement sent. */
function failing(sql: string, error: () => Error, times = 1): { sent: string[] } {
  const query = pg.Client.prototype.query;
  const sent: string[] = [];
  let left = times;
  vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    const text = textOf(args);
    sent.push(text);
    if (left > 0 && text === sql) {
      left -= 1;
      return Promise.reject(error()) as never;
    }
    return (query as (...a: unknown[]) => unknown).apply(this, args) as never;
  });
  return { sent };
}

const coded = (code: string, message: string) => () => Object.assign(new Error(message), { code });

describe('review 37: a later unit of a batch fails after earlier units committed', () => {
  it('connection lost at the second one-statement unit: the committed create stands and is published; the transition fails unavailable', async () => {
    const { store, published } = await open();
    const target = await store.create(newTaskInput());
    const fresh = newTaskInput();
    failing(SQL.transitionsAlone, () => new Error('Connection terminated unexpectedly'));
    const [created, moved] = await Promise.allSettled([store.create(fresh), store.transition(target.taskId, { to: 'cancelled', now: Date.now() })]);
    expect(created.status).toBe('fulfilled');
    expect(moved.status).toBe('rejected');
    expect((moved as PromiseRejectedResult).reason).toMatchObject({ code: 'unavailable' });
    expect(published.filter((e) => e.taskId === fresh.taskId).map((e) => e.kind)).toEqual(['created']);
    expect((await store.getUnscoped(target.taskId))?.status).toBe('working');
    // The store still works (the broken client was not handed out again).
    expect(await store.transition(target.taskId, { to: 'cancelled', now: Date.now() })).toMatchObject({ status: 'cancelled' });
  });

  it('a SQL error in the second one-statement unit runs that unit in the transaction; the committed create is not run again', async () => {
    const { store, published } = await open();
    const target = await store.create(newTaskInput({ leaseOwner: 'w', leaseMs: 60_000 }));
    const fresh = newTaskInput();
    const { sent } = failing(SQL.transitionsAlone, coded('XX000', 'injected'));
    const [created, moved] = await Promise.all([
      store.create(fresh),
      store.transition(target.taskId, { to: 'completed', outcome: RESULT, leaseOwner: 'w', releaseLease: true, now: Date.now(), endedAudit: {} }),
    ]);
    expect(created.taskId).toBe(fresh.taskId);
    expect(moved?.status).toBe('completed');
    expect(sent.filter((t) => t === SQL.createTasksAlone || t === SQL.insertTasks)).toHaveLength(1);
    const events = await store.readEventsAfter(0, 100);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(published.map((e) => e.seq)).toEqual(events.map((e) => e.seq));
    expect((await store.listAudit({ limit: 100 })).filter((e) => e.kind === 'task.ended')).toHaveLength(1);
  });

  it('a deadlock in the transaction after a committed one-statement unit retries only the transaction', async () => {
    const { store, published } = await open();
    const target = await store.create(newTaskInput());
    const fresh = newTaskInput();
    const { sent } = failing(SQL.writeMessages, coded('40P01', 'deadlock detected'));
    await Promise.all([store.create(fresh), store.writeStatusMessages([{ taskId: target.taskId, statusMessage: 'hi', now: Date.now() }])]);
    expect(sent.filter((t) => t === SQL.createTasksAlone || t === SQL.insertTasks)).toHaveLength(1);
    expect(sent.filter((t) => t === SQL.writeMessages)).toHaveLength(2);
    expect((await store.getUnscoped(target.taskId))?.statusMessage).toBe('hi');
    const events = await store.readEventsAfter(0, 100);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(published.map((e) => [e.seq, e.kind])).toEqual(events.map((e) => [e.seq, e.kind]));
  });

  it('a transition whose statusMessage the server refuses (NUL) rejects alone; its batch mates apply, in item order', async () => {
    const { store, published } = await open();
    const [t1, t2, t3] = await Promise.all([0, 1, 2].map(() => store.create(newTaskInput())));
    const now = Date.now();
    const results = await Promise.allSettled([
      store.transition(t1!.taskId, { to: 'cancelled', statusMessage: 'ok "quoted" \\ back', now }),
      store.transition(t2!.taskId, { to: 'cancelled', statusMessage: 'bad \u0000 nul', now }),
      store.transition(t3!.taskId, { to: 'cancelled', statusMessage: '{"a",b}', now }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await store.getUnscoped(t1!.taskId))?.statusMessage).toBe('ok "quoted" \\ back');
    expect((await store.getUnscoped(t3!.taskId))?.statusMessage).toBe('{"a",b}');
    expect((await store.getUnscoped(t2!.taskId))?.status).toBe('working');
    expect(published.filter((e) => e.kind === 'status').map((e) => e.taskId)).toEqual([t1!.taskId, t3!.taskId]);
  });
});
