/**
 * Issue 25: the requestor reads PostgreSQL merges into one statement (`MergedReads`, store/postgres/merged-reads.ts)
 * keep the failure isolation they had as statements of their own: one read's bad input, or a row that cannot be
 * decoded, fails that read only — never another requestor's read in the same statement.
 */
import { randomBytes } from 'node:crypto';

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { AesGcmFieldCipher } from '../../src/store/field-cipher.js';
import { openPostgresTaskStore, type PostgresTaskStore } from '../../src/store/postgres/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { statementsOf } from '../helpers/pg-statements.js';
import { createTestDatabase, type TestDatabase, withClient } from '../helpers/postgres.js';

let database: TestDatabase;
const stores: PostgresTaskStore[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
});
afterAll(async () => {
  await database?.drop();
});

async function open(options: Parameters<typeof openPostgresTaskStore>[0] extends infer O ? Partial<O> : never = {}): Promise<PostgresTaskStore> {
  const store = await openPostgresTaskStore({ url: database.url, ...options });
  stores.push(store);
  return store;
}

const ALICE = { ownerKey: 'alice' };
const status = (settled: PromiseSettledResult<unknown>) =>
  settled.status === 'rejected' ? `rejected: ${(settled.reason as Error).message.slice(0, 40)}` : settled.value === undefined ? 'none' : 'found';

describe('merged requestor reads on PostgreSQL (issue 25)', () => {
  it('a task id with NUL, read together with a real one, answers "no such task" and the real one is answered', async () => {
    const store = await open();
    const task = await store.create(newTaskInput({ ownerKey: 'alice' }));
    // Control: sent to PostgreSQL, such a key fails its statement (22021) — with every read merged into it.
    await expect(withClient(database.url, (client) => client.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1', ['x\u0000y']))).rejects.toThrow(
      /invalid byte sequence/,
    );
    const settled = await Promise.allSettled([
      store.getWithOutcome(task.taskId, ALICE, 1_000),
      store.getWithOutcome('x\u0000y', { ownerKey: 'mallory' }, 1_000),
      store.getWithOutcome(task.taskId, { ownerKey: 'mallory\u0000' }, 1_000),
    ]);
    expect(settled.map(status)).toEqual(['found', 'none', 'none']);
  });

  it('a merged statement that fails on one read is read again one at a time: the other reads are answered (a bad outcome limit)', async () => {
    const store = await open();
    const [a, b] = await Promise.all([store.create(newTaskInput({ ownerKey: 'alice' })), store.create(newTaskInput({ ownerKey: 'alice' }))]);
    let settled: Array<PromiseSettledResult<unknown>> = [];
    const sent = await statementsOf(async () => {
      settled = await Promise.allSettled([
        store.getWithOutcome(a.taskId, ALICE, 1_000),
        store.getWithOutcome(b.taskId, ALICE, Number.NaN),
        store.getWithOutcome(b.taskId, ALICE, 1_000),
      ]);
    });
    expect(settled.map(status)).toEqual(['found', expect.stringMatching(/^rejected: Task store failed to read a task/), 'found']);
    // The merged statement, then each read alone.
    expect(sent.map((text) => text.slice(0, 13))).toEqual(['SELECT q.ord,', 'SELECT t.task', 'SELECT t.task', 'SELECT t.task']);
  });

  it("a row that cannot be decoded fails its own read only, not another owner's read beside it; arguments sealed with a key this store lacks are no such row (stop 41)", async () => {
    const sealing = await open({ encryption: new AesGcmFieldCipher(randomBytes(32)) });
    const sealed = await sealing.create(newTaskInput({ ownerKey: 'alice', arguments: { secret: 'x' } }));
    const store = await open();
    const plain = await store.create(newTaskInput({ ownerKey: 'bob' }));
    const broken = await store.create(newTaskInput({ ownerKey: 'alice' }));
    // A column no key explains: altered in place, it cannot be parsed.
    await withClient(database.url, (client) => client.query(`UPDATE mcp_tasks.tasks SET client_capabilities = 'not json' WHERE task_id = $1`, [broken.taskId]));
    // Control: alone, the altered task's read fails.
    await expect(store.getWithOutcome(broken.taskId, ALICE, 1_000)).rejects.toThrow(/JSON/);
    const settled = await Promise.allSettled([
      store.getWithOutcome(broken.taskId, ALICE, 1_000),
      store.getWithOutcome(plain.taskId, { ownerKey: 'bob' }, 1_000),
      store.getWithOutcome(sealed.taskId, ALICE, 1_000),
    ]);
    expect(settled.map(status)).toEqual([expect.stringMatching(/^rejected/), 'found', 'found']);
    const read = settled[2];
    expect(read?.status === 'fulfilled' && read.value?.record.unreadableArguments).toMatch(/holds encrypted data \(key id [0-9a-f]{16}\)/);
  });

  it('reads issued in the same turn as close are still answered (they were admitted while the store was open); later ones are refused', async () => {
    const store = await open();
    const task = await store.create(newTaskInput({ ownerKey: 'alice' }));
    const reads = [store.getWithOutcome(task.taskId, ALICE, 1_000), store.getWithOutcome(task.taskId, ALICE, 1_000)];
    const closing = store.close();
    expect((await Promise.allSettled(reads)).map(status)).toEqual(['found', 'found']);
    await closing;
    await expect(store.getWithOutcome(task.taskId, ALICE, 1_000)).rejects.toMatchObject({ code: 'fault' });
  });
});
