/**
 * Issue 25: what a PostgreSQL round trip costs in statements, counted at the driver (every `query` a pooled client
 * sends), so a change that adds a round trip to a hot path fails here instead of only showing in `bench:instances`.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

import type { AuditEntry } from '../../src/core/ledger.js';
import { openPostgresTaskStore, type PostgresTaskStore } from '../../src/store/postgres/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { statementsOf } from '../helpers/pg-statements.js';
import { createTestDatabase, lockWaiter, type TestDatabase } from '../helpers/postgres.js';

let database: TestDatabase;
let store: PostgresTaskStore | undefined;
type TaskRecordOf = Awaited<ReturnType<PostgresTaskStore['create']>>;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  vi.restoreAllMocks();
  await store?.close();
  store = undefined;
});
afterAll(async () => {
  await database?.drop();
});

const entry = (tool: string): AuditEntry => ({
  at: Date.now(),
  kind: 'call',
  ownerKey: 'alice',
  scopes: null,
  tool,
  taskId: null,
  argumentsDigest: null,
  outcome: 'task working',
  detail: null,
});

describe('PostgreSQL statements per operation (issue 25)', () => {
  it('parameterised statements are prepared: parsed once per connection, then only bound and run', async () => {
    store = await openPostgresTaskStore({ url: database.url, poolSize: 1 });
    const task = await store.create(newTaskInput());
    // pg sends a Parse message only for a statement its connection has not prepared under that name.
    const parsed: string[] = [];
    const parse = (pg as unknown as { Connection: { prototype: { parse: (...a: unknown[]) => unknown } } }).Connection.prototype.parse;
    vi.spyOn(
      (pg as unknown as { Connection: { prototype: object } }).Connection.prototype as { parse: (...a: unknown[]) => unknown },
      'parse',
    ).mockImplementation(function (this: unknown, ...args: unknown[]) {
      parsed.push(String((args[0] as { text?: string }).text).slice(0, 40));
      return parse.apply(this, args);
    });
    for (let i = 0; i < 5; i++) expect(await store.getUnscoped(task.taskId)).toMatchObject({ taskId: task.taskId });
    vi.restoreAllMocks();
    // Unnamed, each of the five reads would be parsed (and planned) again.
    expect(parsed).toHaveLength(1);
  });

  it('issue 25: requestor reads issued in one turn of the event loop are one statement (64 reads at most); reads in turns of their own are one each (control)', async () => {
    store = await openPostgresTaskStore({ url: database.url });
    const tasks = await Promise.all(Array.from({ length: 70 }, () => store!.create(newTaskInput())));
    const scope = { ownerKey: 'anonymous' };
    const read = (i: number) => store!.getWithOutcome(tasks[i]!.taskId, scope, 1_000);
    let answers: unknown[] = [];
    const together = await statementsOf(async () => {
      answers = await Promise.all([0, 1, 2, 3, 4].map(read));
    });
    expect(together).toHaveLength(1);
    expect(together[0]).toMatch(/^SELECT q\.ord/);
    expect(answers.map((a) => (a as { record: { taskId: string } }).record.taskId)).toEqual(tasks.slice(0, 5).map((t) => t.taskId));
    const control = await statementsOf(async () => {
      for (const i of [0, 1, 2]) await read(i);
    });
    expect(control).toHaveLength(3);
    expect(control.every((text) => text.startsWith('SELECT t.task_id'))).toBe(true);
    const many = await statementsOf(() => Promise.all(tasks.map((_, i) => read(i))));
    expect(many).toHaveLength(2);
  });

  it.each([
    ['the default (one batch in flight): the writes issued meanwhile go together in the next batch', undefined, 2],
    ['control, two batches in flight: the second write goes at once in the other, the third alone after it', 2, 3],
  ])('issue 25: writes issued while a batch is in flight — %s', async (_name, maxInFlightBatches, statements) => {
    store = await openPostgresTaskStore({ url: database.url, ...(maxInFlightBatches ? { maxInFlightBatches } : {}) });
    const [locked, b, c] = (await Promise.all([0, 1, 2].map(() => store!.create(newTaskInput())))) as [TaskRecordOf, TaskRecordOf, TaskRecordOf];
    const complete = (taskId: string) => store!.transition(taskId, { to: 'completed', now: Date.now(), outcome: { kind: 'result', result: { content: [] } } });
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR UPDATE', [locked.taskId]);
      const sent = await statementsOf(async () => {
        // The first batch waits for the row lock: it stays in flight until the holder lets go.
        const first = complete(locked.taskId);
        await lockWaiter(holder, 'the first write');
        const second = complete(b.taskId);
        await new Promise((resolve) => setTimeout(resolve, 50));
        const third = complete(c.taskId);
        await new Promise((resolve) => setTimeout(resolve, 50));
        await holder.query('ROLLBACK');
        expect((await Promise.all([first, second, third])).map((record) => record?.status)).toEqual(['completed', 'completed', 'completed']);
      });
      expect(sent.filter((text) => text.startsWith('WITH v AS'))).toHaveLength(statements);
    } finally {
      await holder.end();
    }
  });

  it('an audit append on its own batch is one autocommit INSERT, not BEGIN, INSERT, COMMIT', async () => {
    store = await openPostgresTaskStore({ url: database.url });
    await store.appendAudit([entry('warm-up')]);
    const sent = await statementsOf(() => store!.appendAudit([entry('a'), entry('b')]));
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/^INSERT INTO mcp_tasks\.audit_log/);
  });

  it('audit appends issued together share one INSERT, in order; beside a create each kind is one autocommit statement', async () => {
    store = await openPostgresTaskStore({ url: database.url });
    const alone = await statementsOf(() => Promise.all(['a', 'b', 'c'].map((tool) => store!.appendAudit([entry(tool)]))));
    expect(alone.filter((text) => text.startsWith('INSERT INTO mcp_tasks.audit_log'))).toHaveLength(1);
    // Issue 25: BEGIN, the create, the audit INSERT, the feed statement and COMMIT were five statements.
    const mixed = await statementsOf(() => Promise.all([store!.create(newTaskInput()), store!.appendAudit([entry('d')])]));
    expect(mixed).toHaveLength(2);
    expect(mixed[1]).toMatch(/^INSERT INTO mcp_tasks\.audit_log/);
    expect((await store.listAudit({ limit: 100 })).slice(-4).map((e) => e.tool)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('a run completing and the claim of the next one, issued together, are two statements with their events in seq order (issue 25)', async () => {
    const published: Array<{ seq: number; kind: string }> = [];
    store = await openPostgresTaskStore({ url: database.url });
    store.onEvent((event) => published.push({ seq: event.seq, kind: event.kind }));
    // The earlier tests' tasks of this database are runnable too: take them out of the way.
    await store.claimRunnable('w-0', 30_000, 1000);
    const running = await store.create(newTaskInput());
    await store.claimRunnable('w-1', 30_000, 1);
    const next = await store.create(newTaskInput());
    const before = await store.lastEventSeq();
    published.length = 0;
    let claimed: Awaited<ReturnType<PostgresTaskStore['claimRunnable']>> = [];
    const sent = await statementsOf(async () => {
      const [, taken] = await Promise.all([
        store!.transition(running.taskId, {
          to: 'completed',
          now: Date.now(),
          leaseOwner: 'w-1',
          releaseLease: true,
          outcome: { kind: 'result', result: { content: [] } },
        }),
        store!.claimRunnable('w-1', 30_000, 1),
      ]);
      claimed = taken;
    });
    expect(sent).toHaveLength(2);
    expect(sent).not.toContain('BEGIN');
    expect(claimed.map((task) => task.taskId)).toEqual([next.taskId]);
    expect(published).toEqual([
      { seq: before + 1, kind: 'status' },
      { seq: before + 2, kind: 'attempt' },
    ]);
    expect((await store.readEventsAfter(before, 10)).map((e) => [e.seq, e.taskId, e.kind])).toEqual([
      [before + 1, running.taskId, 'status'],
      [before + 2, next.taskId, 'attempt'],
    ]);
  });

  it('a batch keeps queue order: the kinds before the first without a one-statement form run alone, the rest in one transaction', async () => {
    store = await openPostgresTaskStore({ url: database.url });
    const task = await store.create(newTaskInput());
    await store.appendAudit([entry('warm-up')]);
    const sent = await statementsOf(() =>
      Promise.all([store!.appendAudit([entry('first')]), store!.writeStatusMessages([{ taskId: task.taskId, statusMessage: 'half way', now: Date.now() }])]),
    );
    expect(sent[0]).toMatch(/^INSERT INTO mcp_tasks\.audit_log/);
    expect(sent[1]).toBe('BEGIN');
    expect(sent.at(-1)).toBe('COMMIT');
    expect((await store.getUnscoped(task.taskId))?.statusMessage).toBe('half way');
  });

  it('a kind that fails on its own after others committed alone fails alone; what committed stands (negative control for the split)', async () => {
    store = await openPostgresTaskStore({ url: database.url });
    const existing = await store.create(newTaskInput());
    const results = await Promise.allSettled([store.appendAudit([entry('kept')]), store.create({ ...newTaskInput(), taskId: existing.taskId })]);
    expect(results[0].status).toBe('fulfilled');
    expect(results[1].status).toBe('rejected');
    expect((await store.listAudit({ limit: 1000 })).some((e) => e.tool === 'kept')).toBe(true);
  });

  it('a create on its own batch is one statement (rows, steps and events with the feed counter)', async () => {
    store = await openPostgresTaskStore({ url: database.url });
    await store.create(newTaskInput());
    const sent = await statementsOf(() => store!.create(newTaskInput()));
    expect(sent).toHaveLength(1);
  });

  it("a create with its request's call entry is still one statement, the entry in it (issue 25: the audit INSERT was a write of its own)", async () => {
    store = await openPostgresTaskStore({ url: database.url });
    await store.create(newTaskInput());
    const task = newTaskInput();
    const sent = await statementsOf(() => store!.create({ ...task, audit: { ...entry('created'), taskId: task.taskId } }));
    expect(sent).toHaveLength(1);
    expect((await store.listAudit({ limit: 1000 })).filter((e) => e.taskId === task.taskId).map((e) => e.tool)).toEqual(['created']);
  });

  it('a transition on its own batch (a run completing, a cancel) is one statement, and its event has the seq the feed reports', async () => {
    store = await openPostgresTaskStore({ url: database.url });
    const task = await store.create(newTaskInput());
    const before = await store.lastEventSeq();
    let done: Awaited<ReturnType<PostgresTaskStore['transition']>>;
    const sent = await statementsOf(async () => {
      done = await store!.transition(task.taskId, { to: 'completed', now: Date.now(), outcome: { kind: 'result', result: { content: [] } } });
    });
    expect(sent).toHaveLength(1);
    expect(done!.status).toBe('completed');
    const events = await store.readEventsAfter(before, 10);
    expect(events.map((e) => [e.seq, e.taskId, e.kind, e.status, e.payload])).toEqual([
      [before + 1, task.taskId, 'status', 'completed', { from: 'working', to: 'completed' }],
    ]);
    expect(await store.lastEventSeq()).toBe(before + 1);
    // Refused (already terminal): nothing written, no seq taken.
    expect(await store.transition(task.taskId, { to: 'cancelled', now: Date.now() })).toBeUndefined();
    expect(await store.lastEventSeq()).toBe(before + 1);
  });

  it('issue 25: N transitions of distinct tasks in one batch (a worker completing several runs) are ONE statement with N events', async () => {
    store = await openPostgresTaskStore({ url: database.url });
    const tasks = await Promise.all(Array.from({ length: 6 }, () => store!.create(newTaskInput())));
    const before = await store.lastEventSeq();
    let done: Array<Awaited<ReturnType<PostgresTaskStore['transition']>>> = [];
    const sent = await statementsOf(async () => {
      done = await Promise.all(
        tasks.map((task) => store!.transition(task.taskId, { to: 'completed', now: Date.now(), outcome: { kind: 'result', result: { content: [] } } })),
      );
    });
    // Per-item statements would be BEGIN, 6 transitions, the feed append, COMMIT.
    expect(sent).toHaveLength(1);
    expect(done.map((record) => record?.status)).toEqual(tasks.map(() => 'completed'));
    const events = await store.readEventsAfter(before, 100);
    expect(events.map((e) => [e.seq, e.taskId, e.kind, e.payload])).toEqual(
      tasks.map((task, i) => [before + i + 1, task.taskId, 'status', { from: 'working', to: 'completed' }]),
    );
    expect(await store.lastEventSeq()).toBe(before + tasks.length);
  });

  it('issue 25: a task id repeated in one batch has no one-statement form: the batch runs in a transaction, one set statement per run of distinct ids', async () => {
    store = await openPostgresTaskStore({ url: database.url });
    const [a, b, c] = await Promise.all([0, 1, 2].map(() => store!.create(newTaskInput())));
    const before = await store.lastEventSeq();
    const now = Date.now();
    let done: Array<Awaited<ReturnType<PostgresTaskStore['transition']>>> = [];
    const sent = await statementsOf(async () => {
      done = await Promise.all([
        store!.transition(a!.taskId, { to: 'cancelled', now }),
        store!.transition(b!.taskId, { to: 'completed', now, outcome: { kind: 'result', result: { content: [] } } }),
        // The run's completion queued behind the cancel of its task: it must see `cancelled` and not apply.
        store!.transition(a!.taskId, { to: 'completed', now, outcome: { kind: 'result', result: { content: [] } } }),
        store!.transition(c!.taskId, { to: 'failed', now, outcome: { kind: 'error', error: { code: -32603, message: 'x' } } }),
      ]);
    });
    expect(sent.map((text) => text.slice(0, 10))).toEqual(['BEGIN', 'WITH v AS ', 'WITH v AS ', 'WITH f AS ', 'COMMIT']);
    expect(done.map((record) => record?.status)).toEqual(['cancelled', 'completed', undefined, 'failed']);
    expect(await store.getOutcome(a!.taskId)).toBeUndefined();
    const events = await store.readEventsAfter(before, 100);
    expect(events.map((e) => [e.seq, e.taskId, e.payload])).toEqual([
      [before + 1, a!.taskId, { from: 'working', to: 'cancelled' }],
      [before + 2, b!.taskId, { from: 'working', to: 'completed' }],
      [before + 3, c!.taskId, { from: 'working', to: 'failed' }],
    ]);
  });

  it.each([
    ["one worker's claims in one batch are one statement: the oldest tasks, handed out in queue order", ['w-1', 'w-1', 'w-1'], 1],
    ['control, claims of different workers in one batch: one transaction, the same hand-out', ['w-1', 'w-2', 'w-1'], 6],
  ])('issue 25: %s', async (_name, holders, statements) => {
    store = await openPostgresTaskStore({ url: database.url });
    await store.claimRunnable('w-0', 30_000, 1000);
    const created: Array<Awaited<ReturnType<PostgresTaskStore['create']>>> = [];
    for (let i = 0; i < 6; i++) created.push(await store.create(newTaskInput()));
    const before = await store.lastEventSeq();
    let claimed: Array<Awaited<ReturnType<PostgresTaskStore['claimRunnable']>>> = [];
    const sent = await statementsOf(async () => {
      claimed = await Promise.all(holders.map((holder, i) => store!.claimRunnable(holder, 30_000, [2, 1, 10][i]!)));
    });
    expect(sent).toHaveLength(statements);
    const ids = created.map((task) => task.taskId);
    expect(claimed.map((tasks) => tasks.map((task) => [task.taskId, task.leaseOwner]))).toEqual([
      [
        [ids[0], holders[0]],
        [ids[1], holders[0]],
      ],
      [[ids[2], holders[1]]],
      ids.slice(3).map((id) => [id, holders[2]]),
    ]);
    const events = await store.readEventsAfter(before, 100);
    expect(events.map((e) => [e.seq, e.taskId, e.kind])).toEqual(ids.map((id, i) => [before + i + 1, id, 'attempt']));
  });

  it('a claim on its own batch (a worker woken by a create) is one statement, with an attempt event per task in seq order', async () => {
    store = await openPostgresTaskStore({ url: database.url });
    const created = [await store.create(newTaskInput()), await store.create(newTaskInput())];
    const before = await store.lastEventSeq();
    let claimed: Awaited<ReturnType<PostgresTaskStore['claimRunnable']>> = [];
    const sent = await statementsOf(async () => {
      claimed = await store!.claimRunnable('w-1', 30_000, 10);
    });
    expect(sent).toHaveLength(1);
    const mine = claimed.filter((task) => created.some((c) => c.taskId === task.taskId));
    expect(mine.map((task) => [task.taskId, task.attempt, task.leaseOwner])).toEqual(created.map((c) => [c.taskId, 1, 'w-1']));
    const events = (await store.readEventsAfter(before, 100)).filter((e) => created.some((c) => c.taskId === e.taskId));
    expect(events.map((e) => [e.taskId, e.kind, e.payload])).toEqual(created.map((c) => [c.taskId, 'attempt', { attempt: 1, leaseOwner: 'w-1' }]));
    // Nothing left to claim: still one statement, and no seq taken.
    const last = await store.lastEventSeq();
    const empty = await statementsOf(() => store!.claimRunnable('w-1', 30_000, 10));
    expect(empty).toHaveLength(1);
    expect(await store.lastEventSeq()).toBe(last);
  });
});
