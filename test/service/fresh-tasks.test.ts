/**
 * Issue 25: FreshTasks, the records a blocking v1 `tasks/result` of a task created here starts from instead of a
 * read. Over a real SQLite store and this process's real event feed: an entry lives until an event that could change
 * the wait's answer is delivered, and one delivered before the create was answered (on PostgreSQL the feed can carry
 * a whole run of another process before this process's own create settles) keeps no entry at all.
 */
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { TaskEventFeed } from '../../src/core/event-feed.js';
import { silentLogger } from '../../src/core/logger.js';
import { FreshTasks } from '../../src/service/tasks/fresh-tasks.js';
import { openSqliteTaskStore, type SqliteTaskStore } from '../../src/store/sqlite/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/** The scope of `newTaskInput`'s tasks: its owner and generation. */
const ANYONE = { ownerKey: 'anonymous', generation: 'v2' } as const;

const RESULT = { kind: 'result' as const, result: { content: [] } };
const opened: Array<{ store: SqliteTaskStore; remove: () => void }> = [];
afterEach(async () => {
  for (const { store, remove } of opened.splice(0)) {
    await store.close();
    remove();
  }
});

function setUp(): { store: SqliteTaskStore; fresh: FreshTasks } {
  const temp = makeTempDir();
  const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db') });
  opened.push({ store, remove: temp.remove });
  return { store, fresh: new FreshTasks(new TaskEventFeed(store, silentLogger)) };
}

describe('FreshTasks (issue 25)', () => {
  it('keeps a created task through its new runs and statusMessages, and drops it at its end', async () => {
    const { store, fresh } = setUp();
    const task = newTaskInput({ leaseOwner: 'w', leaseMs: 60_000, startNow: true });
    fresh.expect(task.taskId);
    const record = await store.create(task);
    fresh.remember(record);
    expect(fresh.get(task.taskId, ANYONE, Date.now())).toMatchObject({ taskId: task.taskId, status: 'working' });
    await store.writeStatusMessages([{ taskId: task.taskId, statusMessage: 'half way', now: Date.now() }]);
    expect(fresh.get(task.taskId, ANYONE, Date.now())).toBeDefined();
    await store.transition(task.taskId, { to: 'completed', outcome: RESULT, now: Date.now() });
    expect(fresh.get(task.taskId, ANYONE, Date.now())).toBeUndefined();
  });

  it('a task that ended before its create was answered here is not kept (negative control: one that did not end is)', async () => {
    const { store, fresh } = setUp();
    const [ended, running] = [newTaskInput(), newTaskInput()];
    for (const task of [ended, running]) fresh.expect(task.taskId);
    const records = [await store.create(ended), await store.create(running)];
    // The end is delivered by the feed before this process gets to `remember` the create's record.
    await store.transition(ended.taskId, { to: 'cancelled', now: Date.now() });
    for (const record of records) fresh.remember(record);
    expect(fresh.get(ended.taskId, ANYONE, Date.now())).toBeUndefined();
    expect(fresh.get(running.taskId, ANYONE, Date.now())).toBeDefined();
  });

  it('a create that was not announced, or was dropped, keeps nothing', async () => {
    const { store, fresh } = setUp();
    const silent = newTaskInput();
    fresh.remember(await store.create(silent));
    expect(fresh.get(silent.taskId, ANYONE, Date.now())).toBeUndefined();
    const dropped = newTaskInput();
    fresh.expect(dropped.taskId);
    fresh.drop(dropped.taskId);
    fresh.remember(await store.create(dropped));
    expect(fresh.get(dropped.taskId, ANYONE, Date.now())).toBeUndefined();
  });
});
