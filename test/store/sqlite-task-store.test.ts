import { statSync } from 'node:fs';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { newTaskId } from '../../src/core/ids.js';
import type { TaskEvent } from '../../src/core/store.js';
import type { StoreError } from '../../src/core/store-error.js';
import type { NewTask } from '../../src/core/task.js';
import { openSqliteTaskStore, type SqliteTaskStore, type SqliteTaskStoreOptions } from '../../src/store/sqlite/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { expectStoreError } from '../../src/testing/store-contract.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const T0 = Date.UTC(2026, 0, 1);

function task(overrides: Partial<NewTask> = {}): NewTask {
  return {
    taskId: newTaskId(),
    ownerKey: 'anonymous',
    generation: 'v1',
    protocolVersion: '2025-11-25',
    toolName: 'echo',
    arguments: {},
    clientCapabilities: {},
    progressToken: null,
    statusMessage: null,
    createdAt: T0,
    ttlMs: 60_000,
    pollIntervalMs: 500,
    leaseOwner: null,
    leaseMs: null,
    ...overrides,
  };
}

/** The clock of every store the tests open (leases and expiry sweeps are judged on it); back at T0 for each test. */
const clock = new FakeClock(T0);

let temp: ReturnType<typeof makeTempDir>;
let path: string;
const opened: SqliteTaskStore[] = [];
const raws: Database.Database[] = [];

/** A store on the shared test file, closed after the test. */
function open(options: Partial<SqliteTaskStoreOptions> = {}): SqliteTaskStore {
  const store = openSqliteTaskStore({ path, clock, ...options });
  opened.push(store);
  return store;
}
/** An independent raw connection on the same file: sees exactly what is committed. */
function observer(): Database.Database {
  const db = new Database(path);
  db.pragma('busy_timeout = 5000');
  raws.push(db);
  return db;
}

beforeEach(() => {
  clock.set(T0);
  temp = makeTempDir();
  path = join(temp.dir, 'tasks.db');
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
  for (const db of raws.splice(0)) db.close();
  temp.remove();
});

describe('SqliteTaskStore connections', () => {
  it('every connection reports journal_mode=wal and synchronous=1 (NORMAL: the store fsyncs the log itself, see wal-sync.test.ts)', () => {
    const stores = [open(), open(), open({ path: join(temp.dir, 'other', 'deeper', 'b.db') })];
    for (const store of stores) {
      expect(store.pragmas()).toEqual({ journalMode: 'wal', synchronous: 1, foreignKeys: true, busyTimeout: 5000, autoVacuum: 2 });
    }
  });

  it('retention gives space back: expired tasks take their events along, and compact() shrinks the file (incremental vacuum)', async () => {
    const store = open();
    const big = 'x'.repeat(20_000);
    for (let i = 0; i < 200; i += 1) await store.create(task({ ttlMs: 1_000, arguments: { big } }));
    const db = observer();
    const pages = () => (db.prepare('PRAGMA page_count').get() as { page_count: number }).page_count;
    const before = pages();
    clock.set(T0 + 1_000);
    expect(await store.expireDue(500)).toHaveLength(200);
    expect(db.prepare("SELECT COUNT(*) AS n FROM task_events WHERE kind <> 'expired'").get()).toEqual({ n: 0 });
    await store.compact();
    db.pragma('wal_checkpoint(TRUNCATE)');
    expect(pages()).toBeLessThan(before / 2);
  });

  it('a new database and its WAL are readable by the owner only (task arguments and results may be confidential)', async () => {
    const store = open({ path: join(temp.dir, 'private', 'tasks.db') });
    await store.create(task());
    for (const file of ['tasks.db', 'tasks.db-wal']) expect(statSync(join(temp.dir, 'private', file)).mode & 0o777, file).toBe(0o600);
    expect(statSync(join(temp.dir, 'private')).mode & 0o777).toBe(0o700);
  });
});

describe('group commit', () => {
  it('shares commits between concurrent creates and resolves each only once its row is committed', async () => {
    const store = open();
    const peek = observer().prepare('SELECT status FROM tasks WHERE task_id = ?');
    const before = store.stats().commits;
    const seenAtResolution = await Promise.all(
      Array.from({ length: 64 }, () =>
        store.create(task()).then((record) => ({
          commits: store.stats().commits - before,
          row: peek.get(record.taskId) as { status: string } | undefined,
        })),
      ),
    );
    const commits = store.stats().commits - before;
    expect(commits).toBeLessThan(64);
    for (const seen of seenAtResolution) {
      expect(seen.commits).toBeGreaterThanOrEqual(1);
      expect(seen.row).toEqual({ status: 'working' });
    }
  });

  it('flushes a full batch at once: maxBatchSize 8 turns 64 creates into 8 commits', async () => {
    const store = open({ maxBatchSize: 8 });
    await Promise.all(Array.from({ length: 64 }, () => store.create(task())));
    expect(store.stats()).toEqual({ commits: 8, operations: 64 });
  });

  it('discardUnservedResultChunks of a cancelled task without chunks (every cancel calls it) makes no write; with chunks, one', async () => {
    const store = open();
    const plain = await store.create(task());
    const large = await store.create(task());
    expect(await store.putResultChunks(large.taskId, [new Uint8Array([1, 2, 3])])).toBe(true);
    for (const { taskId } of [plain, large]) await store.transition(taskId, { to: 'cancelled', now: T0 });
    const before = store.stats().commits;
    expect(await store.discardUnservedResultChunks(plain.taskId)).toBe(0);
    expect(store.stats().commits - before).toBe(0);
    // Control: with chunks to delete, the delete is a write.
    expect(await store.discardUnservedResultChunks(large.taskId)).toBe(1);
    expect(store.stats().commits - before).toBe(1);
  });

  it('rolls back only the failing operation of a batch (savepoint), leaving no orphan event', async () => {
    const store = open();
    const start = await store.lastEventSeq();
    const duplicate = task();
    const inputs = [task(), duplicate, task(), { ...task(), taskId: duplicate.taskId }, task()];
    const settled = await Promise.allSettled(inputs.map((t) => store.create(t)));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const error = await expectStoreError(Promise.reject((settled[3] as PromiseRejectedResult).reason), 'fault');
    expect((error.cause as { code?: string }).code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
    expect(store.stats().commits).toBe(1);
    // The duplicate's `created` event was inserted before its row failed; the savepoint took it back.
    const events = await store.readEventsAfter(start, 100);
    expect(events.map((e) => e.seq)).toEqual([start + 1, start + 2, start + 3, start + 4]);
    expect(events.filter((e) => e.taskId === duplicate.taskId)).toHaveLength(1);
  });

  it('a throwing listener neither hides the commit from other listeners nor fails the write', async () => {
    const store = open();
    const heard: TaskEvent[] = [];
    store.onEvent(() => {
      throw new Error('listener bug');
    });
    store.onEvent((event) => heard.push(event));
    const record = await store.create(task());
    expect(heard.map((e) => [e.taskId, e.kind])).toEqual([[record.taskId, 'created']]);
  });
});

describe('input requests', () => {
  const ask = (key: string) => ({ key, request: { method: 'elicitation/create', params: { message: key } } });
  async function parked(store: SqliteTaskStore, keys: string[]) {
    const { taskId } = await store.create(task({ leaseOwner: 'i-a', leaseMs: 30_000 }));
    await store.requestInput(taskId, keys.map(ask), { leaseOwner: 'i-a', statusMessage: 'waiting', now: T0 + 1 });
    return taskId;
  }

  it('refuses to park with no request (it could never resume) before writing anything', async () => {
    const store = open();
    const { taskId } = await store.create(task({ leaseOwner: 'i-a', leaseMs: 30_000 }));
    const start = await store.lastEventSeq();
    await expectStoreError(store.requestInput(taskId, [], { leaseOwner: 'i-a', statusMessage: null, now: T0 }), 'invalid');
    expect((await store.getUnscoped(taskId))?.status).toBe('working');
    expect(await store.lastEventSeq()).toBe(start);
  });

  it('an answer that changes no request writes nothing, not even its statusMessage (the wait is not restarted)', async () => {
    const store = open();
    const taskId = await parked(store, ['a', 'b']);
    await store.answerInput(taskId, { answers: [{ key: 'a', response: {} }], retire: [], add: [], now: T0 + 2 });
    const before = await store.getUnscoped(taskId);
    const again = { answers: [{ key: 'a', response: { late: true } }], retire: [], add: [], statusMessage: 'late', now: T0 + 9 };
    expect(await store.answerInput(taskId, again)).toEqual({ accepted: [], task: before });
    expect(await store.getUnscoped(taskId)).toEqual(before);
    expect(before).toMatchObject({ statusMessage: 'waiting', lastUpdatedAt: T0 + 2 });
  });

  it('a reused key rolls back only its own operation of a shared batch', async () => {
    const store = open();
    const taskId = await parked(store, ['a']);
    const start = await store.lastEventSeq();
    const commits = store.stats().commits;
    const settled = await Promise.allSettled([
      store.create(task()),
      store.answerInput(taskId, { answers: [{ key: 'a', response: {} }], retire: [], add: [ask('a')], now: T0 + 2 }),
      store.create(task()),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(((settled[1] as PromiseRejectedResult).reason as StoreError).message).toMatch(/key "a" was already used/);
    expect(store.stats().commits).toBe(commits + 1);
    expect((await store.listInputRequests(taskId)).map((r) => r.state)).toEqual(['pending']);
    expect((await store.readEventsAfter(start, 10)).map((e) => [e.seq, e.kind])).toEqual([
      [start + 1, 'created'],
      [start + 2, 'created'],
    ]);
  });
});

describe('durability and faults', () => {
  it('close() commits queued writes; a new store on the file sees them and the events', async () => {
    const first = openSqliteTaskStore({ path });
    const pending = Array.from({ length: 5 }, () => first.create(task()));
    await first.close();
    const ids = (await Promise.all(pending)).map((r) => r.taskId);
    const second = open();
    for (const id of ids) expect(await second.getUnscoped(id)).toBeDefined();
    expect((await second.readEventsAfter(0, 100)).map((e) => e.taskId)).toEqual(ids);
  });

  it('another store on the file tails committed events through readEventsAfter', async () => {
    const writer = open();
    const tail = open();
    const from = await tail.lastEventSeq();
    const record = await writer.create(task());
    await writer.transition(record.taskId, { to: 'cancelled', now: T0 + 1 });
    expect((await tail.readEventsAfter(from, 10)).map((e) => [e.kind, e.status])).toEqual([
      ['created', 'working'],
      ['status', 'cancelled'],
    ]);
    expect(await tail.lastEventSeq()).toBe(from + 2);
  });

  it('a write blocked past busy_timeout rejects the batch as unavailable; the store recovers afterwards', async () => {
    const store = open({ busyTimeoutMs: 50 });
    const blocker = observer();
    blocker.exec('BEGIN IMMEDIATE');
    const error = await expectStoreError(store.create(task()), 'unavailable');
    expect((error.cause as { code?: string }).code).toMatch(/^SQLITE_BUSY/);
    blocker.exec('ROLLBACK');
    await expect(store.create(task())).resolves.toMatchObject({ status: 'working' });
    expect(store.stats().commits).toBe(1);
  });

  it('reads and writes after close() reject as a fault with the driver error as cause', async () => {
    const store = open();
    await store.close();
    const read = await expectStoreError(store.getUnscoped(newTaskId()), 'fault');
    expect(read.cause).toBeInstanceOf(Error);
    await expectStoreError(store.create(task()), 'fault');
  });

  it('expiry deletes the input requests of a task too (cascade) and keeps the expired event', async () => {
    const store = open();
    const record = await store.create(task({ ttlMs: 10 }));
    observer().prepare("INSERT INTO input_requests (task_id, key, request, state, created_at) VALUES (?, 'k', '{}', 'pending', ?)").run(record.taskId, T0);
    await store.putStep(record.taskId, 'step', { ok: true });
    clock.set(T0 + 10);
    expect(await store.expireDue(10)).toEqual([record.taskId]);
    const db = observer();
    for (const table of ['tasks', 'task_outcomes', 'input_requests', 'task_steps']) {
      expect(db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get()).toEqual({ n: 0 });
    }
    expect(db.prepare("SELECT task_id FROM task_events WHERE kind = 'expired'").all()).toEqual([{ task_id: record.taskId }]);
  });

  it('claimLapsed from two stores on one file never hands out a task twice', async () => {
    const a = open();
    const b = open();
    const ids = (await Promise.all(Array.from({ length: 40 }, () => a.create(task())))).map((r) => r.taskId);
    const claims = await Promise.all([a.claimLapsed('i-a', 30_000, 25), b.claimLapsed('i-b', 30_000, 25)]);
    const claimed = claims.flat().map((t) => t.taskId);
    expect(claimed).toHaveLength(40);
    expect(new Set(claimed)).toEqual(new Set(ids));
  });
});
