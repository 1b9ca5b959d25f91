/**
 * Tasks whose stored arguments this process cannot decode, in claims and transitions.
 *
 * A claimed task whose stored arguments this process cannot decode — encrypted with a key it is not configured with
 * (dropped from `MCP_TASKS_ENCRYPTION_KEYS_OLD` too early), or altered — is handed out as unreadable beside the others
 * the claim took (issue 25's notes, stop 40). Before, its decoding error failed the whole claim: on SQLite and in a
 * PostgreSQL transaction the claim rolled back and the same row came first again at every claim, so one such task at
 * the head of the queue stopped every worker of the store; PostgreSQL's one-statement claim left the others it took
 * leased and never run until their leases lapsed — and their recovery failed on the same row.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import type { TaskStore } from '../../src/core/store.js';
import { StoreError } from '../../src/core/store-error.js';
import type { ClaimedTask } from '../../src/core/task.js';
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

const ids = (claimed: ClaimedTask[]): string[] => claimed.map((task) => task.taskId);

describe.each([
  ['SQLite', sqlitePair],
  ['PostgreSQL', postgresPair],
])('%s: a claim hands out a task it cannot decode as unreadable, beside the others', (_name, pair) => {
  it('claimRunnable: the unreadable head of the queue comes with its error and leased; the tasks behind it are decoded', async () => {
    const { writer, reader } = await pair();
    const poison = newTaskInput({ arguments: { secret: 'written with a key the reader lacks' } });
    await writer.create(poison);
    const behind = [newTaskInput({ arguments: { n: 1 } }), newTaskInput({ arguments: { n: 2 } })];
    for (const task of behind) await reader.create(task);

    const claimed = await reader.claimRunnable('reader', 60_000, 3);
    expect(ids(claimed)).toEqual([poison.taskId, ...behind.map((task) => task.taskId)]);
    const [head, ...rest] = claimed;
    expect(head !== undefined && 'unreadable' in head).toBe(true);
    if (head === undefined || !('unreadable' in head)) return;
    expect(head.unreadable).toBeInstanceOf(StoreError);
    expect(head.unreadable.message).toMatch(/^cannot decrypt task data: key id \S+ is not configured/);
    expect(head).not.toHaveProperty('arguments');
    expect(head).toMatchObject({ attempt: 1, leaseOwner: 'reader', status: 'working', toolName: poison.toolName });
    // Negative control: the readable ones carry their arguments and no `unreadable`.
    expect(rest.map((task) => ('unreadable' in task ? 'unreadable' : task.arguments))).toEqual([{ n: 1 }, { n: 2 }]);
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
    const [second] = await reader.claimRunnable('reader', 60_000, 1);
    expect(second !== undefined && !('unreadable' in second) && second.arguments).toEqual({ n: 3 });
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
    expect(claimed.map((task) => ('unreadable' in task ? task.unreadable.message.slice(0, 27) : task.arguments))).toEqual([
      'cannot decrypt task data: k',
      { n: 4 },
    ]);
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
    expect(completed).toMatchObject({ taskId: other.taskId, status: 'completed', arguments: { n: 5 } });
    expect((await writer.getUnscoped(poison.taskId))?.status).toBe('cancelled');
    expect((await reader.getUnscoped(other.taskId))?.status).toBe('completed');
  });
});
