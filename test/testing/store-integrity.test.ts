import { join } from 'node:path';

import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';

import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { checkStoreIntegrity, sqliteSnapshot } from '../../src/testing/store-integrity.js';
import { newTaskInput } from '../helpers/new-task.js';
import { makeTempDir } from '../helpers/temp-dir.js';

describe('checkStoreIntegrity', () => {
  const temp = makeTempDir('mcp-tasks-integrity-');
  afterAll(() => temp.remove());

  it('a store used through the port is sound; each kind of corruption is reported (negative controls)', async () => {
    const path = join(temp.dir, 'tasks.db');
    const store = openSqliteTaskStore({ path });
    const now = Date.now();
    const done = await store.create(newTaskInput({ taskId: 'done', leaseOwner: 'me', ttlMs: 1000, createdAt: now }));
    await store.transition(done.taskId, { to: 'completed', outcome: { kind: 'result', result: { content: [] } }, now });
    const waiting = await store.create(newTaskInput({ taskId: 'waiting', leaseOwner: 'me', startNow: true, createdAt: now }));
    await store.requestInput(waiting.taskId, [{ key: 'input-1', request: { method: 'elicitation/create', params: {} } }], {
      leaseOwner: 'me',
      statusMessage: null,
      now,
    });
    await store.create(newTaskInput({ taskId: 'stepped', steps: { gathered: 'x' }, createdAt: now }));
    // A drained worker's released events (both kinds) are part of a sound store (found by the hostile-input fuzzer).
    await store.create(newTaskInput({ taskId: 'released', leaseOwner: 'me', startNow: true, createdAt: now }));
    await store.create(newTaskInput({ taskId: 'unstarted', leaseOwner: 'me', startNow: true, createdAt: now }));
    expect(await store.releaseLeases('me', ['released'])).toEqual(['released']);
    expect(await store.releaseUnstarted('me', ['unstarted'])).toEqual(['unstarted']);
    await store.create(newTaskInput({ taskId: 'gone', ttlMs: 1, createdAt: now - 10_000 }));
    expect(await store.expireDue(10)).toEqual(['gone']);
    await store.close();

    const db = new Database(path);
    try {
      const check = async () => checkStoreIntegrity(await sqliteSnapshot(db)());
      expect(await check()).toEqual([]);
      db.pragma('foreign_keys = OFF');
      const corruptions: Array<[string, RegExp]> = [
        ["UPDATE tasks SET status = 'completed', last_updated_at = created_at WHERE task_id = 'stepped'", /task stepped: status completed with no outcome/],
        ["DELETE FROM input_requests WHERE task_id = 'waiting'", /task waiting: input_required with no pending input request/],
        ["INSERT INTO task_outcomes (task_id, kind, body) VALUES ('nobody', 'result', '{}')", /outcome of nobody: orphan/],
        ["INSERT INTO task_steps (task_id, name, value, created_at) VALUES ('nobody', 's', '1', 0)", /step nobody\/s: orphan/],
        ["INSERT INTO input_requests (task_id, key, request, state, created_at) VALUES ('nobody', 'k', '{}', 'pending', 0)", /input request nobody\/k: orphan/],
        ["INSERT INTO task_events (task_id, kind, status, at) VALUES ('nobody', 'status', 'working', 0)", /events of nobody: orphan/],
        ["UPDATE tasks SET expires_at = expires_at + 1 WHERE task_id = 'done'", /task done: expiresAt .* does not match/],
        ["UPDATE tasks SET arguments = 'not json' WHERE task_id = 'done'", /task done: arguments are not stored JSON/],
        ["INSERT INTO task_outcomes (task_id, kind, body) VALUES ('waiting', 'error', '{}')", /task waiting: status input_required with a error outcome/],
      ];
      for (const [sql, problem] of corruptions) {
        db.exec('SAVEPOINT corrupt');
        db.exec(sql);
        expect((await check()).join('\n'), sql).toMatch(problem);
        db.exec('ROLLBACK TO corrupt');
        db.exec('RELEASE corrupt');
      }
      expect(await check()).toEqual([]);
    } finally {
      db.close();
    }
  });
});
