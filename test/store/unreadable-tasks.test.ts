/**
 * Tasks whose stored arguments this process cannot decode — encrypted with a key it is not configured with (dropped
 * from `MCP_TASKS_ENCRYPTION_KEYS_OLD` too early), or altered: every read and write answers them with `arguments` `{}`
 * and `unreadableArguments` set (issue 25's notes, stop 40). Before, the decoding error failed whatever touched the
 * row: a claim (on SQLite and in a PostgreSQL transaction it rolled back and the same row came first again at every
 * claim, so one such task at the head of the queue stopped every worker; PostgreSQL's one-statement claim left the
 * others it took leased and never run), a transition after it applied (inside a batch's transaction rolling back
 * every write of the batch), a list page, and the sweeper's list of tasks waiting for input.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import type { TaskStore } from '../../src/core/store.js';
import type { TaskRecord } from '../../src/core/task.js';
import { AesGcmFieldCipher } from '../../src/store/field-cipher.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { postgresStoresPerFile } from '../helpers/postgres.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const pgStores = postgresStoresPerFile();

/** Two stores on one database, as two processes open it: `writer` encrypts with a key `reader` does not have. */
type OpenPair = () => Promise<{ writer: TaskStore; reader: TaskStore }>;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const sqlitePair: OpenPair = async () => {
  const temp = makeTempDir();
  const path = join(temp.dir, 'tasks.db');
  const writer = openSqliteTaskStore({ path, encryption: new AesGcmFieldCipher(randomBytes(32)) });
  const reader = openSqliteTaskStore({ path, encryption: new AesGcmFieldCipher(randomBytes(32)) });
  cleanups.push(
    () => temp.remove(),
    () => writer.close(),
    () => reader.close(),
  );
  return { writer, reader };
};

const postgresPair: OpenPair = async () => ({
  writer: await pgStores.open({ encryption: new AesGcmFieldCipher(randomBytes(32)) }),
  reader: await pgStores.open({ encryption: new AesGcmFieldCipher(randomBytes(32)) }),
});

const ids = (tasks: TaskRecord[]): string[] => tasks.map((task) => task.taskId);
/** What a reader sees of each task's arguments: the error's first words when it cannot decode them. */
const argumentsSeen = (tasks: TaskRecord[]): unknown[] => tasks.map((task) => task.unreadableArguments?.slice(0, 27) ?? task.arguments);
const UNREADABLE = 'cannot decrypt task data: k';

describe.each([
  ['SQLite', sqlitePair],
  ['PostgreSQL', postgresPair],
])('%s: a task the store cannot decode is read and written as unreadable, beside the others', (_name, pair) => {
  it('claimRunnable: the unreadable head of the queue comes with its error and leased; the tasks behind it are decoded', async () => {
    const { writer, reader } = await pair();
    const poison = newTaskInput({ arguments: { secret: 'written with a key the reader lacks' } });
    await writer.create(poison);
    const behind = [newTaskInput({ arguments: { n: 1 } }), newTaskInput({ arguments: { n: 2 } })];
    for (const task of behind) await reader.create(task);

    const claimed = await reader.claimRunnable('reader', 60_000, 3);
    expect(ids(claimed)).toEqual([poison.taskId, ...behind.map((task) => task.taskId)]);
    const [head] = claimed;
    expect(head?.unreadableArguments).toMatch(/^cannot decrypt task data: key id \S+ is not configured/);
    expect(head).toMatchObject({ arguments: {}, attempt: 1, leaseOwner: 'reader', status: 'working', toolName: poison.toolName });
    // Negative control: the readable ones carry their arguments and no `unreadableArguments`.
    expect(argumentsSeen(claimed)).toEqual([UNREADABLE, { n: 1 }, { n: 2 }]);
    expect(claimed.slice(1).map((task) => 'unreadableArguments' in task)).toEqual([false, false]);
    // Every one of them is leased to the reader (as stored; the writer reads its own row): its worker decides what
    // becomes of the unreadable one.
    expect((await writer.getUnscoped(poison.taskId))?.leaseOwner).toBe('reader');
    for (const task of behind) expect((await reader.getUnscoped(task.taskId))?.leaseOwner).toBe('reader');
  });

  it('claimRunnable of one slot takes the unreadable head alone, and the next claim reaches the task behind it', async () => {
    const { writer, reader } = await pair();
    const poison = newTaskInput();
    await writer.create(poison);
    const next = newTaskInput({ arguments: { n: 3 } });
    await reader.create(next);
    expect(ids(await reader.claimRunnable('reader', 60_000, 1))).toEqual([poison.taskId]);
    expect(argumentsSeen(await reader.claimRunnable('reader', 60_000, 1))).toEqual([{ n: 3 }]);
  });

  it('claimLapsed: a lapsed unreadable task comes with its error; the readable one beside it is decoded', async () => {
    const { writer, reader } = await pair();
    const poison = newTaskInput({ leaseOwner: 'gone', leaseMs: 1 });
    await writer.create(poison);
    const readable = newTaskInput({ leaseOwner: 'gone', leaseMs: 1, arguments: { n: 4 } });
    await reader.create(readable);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const claimed = await reader.claimLapsed('reader', 60_000, 10);
    expect(ids(claimed)).toEqual([poison.taskId, readable.taskId]);
    expect(argumentsSeen(claimed)).toEqual([UNREADABLE, { n: 4 }]);
  });

  it('transition: a task it cannot decode is cancelled and answered with its record (arguments {}); a write beside it in the same batch stands', async () => {
    const { writer, reader } = await pair();
    const poison = newTaskInput();
    await writer.create(poison);
    const other = newTaskInput({ arguments: { n: 5 } });
    await reader.create(other);
    const now = Date.now();
    // Issued together, so a store that batches writes puts them in one batch.
    const [cancelled, completed] = await Promise.all([
      reader.transition(poison.taskId, { to: 'cancelled', now }),
      reader.transition(other.taskId, { to: 'completed', now, outcome: { kind: 'result', result: { content: [] } } }),
    ]);
    expect(cancelled).toMatchObject({ taskId: poison.taskId, status: 'cancelled', arguments: {} });
    expect(cancelled?.unreadableArguments).toMatch(/^cannot decrypt task data/);
    expect(completed).toMatchObject({ taskId: other.taskId, status: 'completed', arguments: { n: 5 } });
    expect((await writer.getUnscoped(poison.taskId))?.status).toBe('cancelled');
    expect((await reader.getUnscoped(other.taskId))?.status).toBe('completed');
  });

  it('reads: get, a list page, browse and the tasks waiting for input answer it beside the others', async () => {
    const { writer, reader } = await pair();
    const poison = newTaskInput();
    await writer.create(poison);
    const readable = newTaskInput({ arguments: { n: 6 } });
    await reader.create(readable);
    const now = Date.now();
    for (const [store, task] of [
      [writer, poison],
      [reader, readable],
    ] as const)
      expect((await store.transition(task.taskId, { to: 'input_required', now }))?.status).toBe('input_required');
    const both = [poison.taskId, readable.taskId];
    expect(argumentsSeen([(await reader.getUnscoped(poison.taskId))!])).toEqual([UNREADABLE]);
    expect(argumentsSeen([(await reader.get(poison.taskId, { ownerKey: 'anonymous' }))!])).toEqual([UNREADABLE]);
    const page = await reader.list({ ownerKey: 'anonymous', generation: 'v2' }, { afterSeq: 0, limit: 10 });
    expect(argumentsSeen(page.filter((task) => both.includes(task.taskId)))).toEqual([UNREADABLE, { n: 6 }]);
    const browsed = await reader.browse({ statuses: ['input_required'], limit: 10 });
    expect(argumentsSeen(browsed.filter((task) => both.includes(task.taskId)).sort((a, b) => a.seq - b.seq))).toEqual([UNREADABLE, { n: 6 }]);
    const waiting = await reader.listWaitingSince(now + 1, 10);
    expect(argumentsSeen(waiting.filter((task) => both.includes(task.taskId)))).toEqual([UNREADABLE, { n: 6 }]);
  });
});
