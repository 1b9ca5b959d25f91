/**
 * Review 37b: FreshTasks is bounded to 2048 entries, but each entry is the whole created record — tool arguments
 * included (up to `maxArgumentBytes`, 1 MiB by default; the request body may be 4 MiB). Tasks nobody waits for stay
 * until they end, so 2048 long tasks with large arguments pin ~2 GiB of parsed JSON that nothing held before
 * 671ed0b. The bound must be in bytes, not only in entries.
 */
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { TaskEventFeed } from '../../src/core/event-feed.js';
import { silentLogger } from '../../src/core/logger.js';
import { jsonCharsUpTo } from '../../src/service/task-reads.js';
import { FreshTasks } from '../../src/service/tasks/fresh-tasks.js';
import { openSqliteTaskStore, type SqliteTaskStore } from '../../src/store/sqlite/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/** The scope of `newTaskInput`'s tasks: its owner and generation. */
const ANYONE = { ownerKey: 'anonymous', generation: 'v2' } as const;

const opened: Array<{ store: SqliteTaskStore; remove: () => void }> = [];
afterEach(async () => {
  for (const { store, remove } of opened.splice(0)) {
    await store.close();
    remove();
  }
});

describe('review 37b: FreshTasks memory', () => {
  it('does not pin the large arguments of running tasks nobody waits for (64 KiB per entry at most)', async () => {
    const temp = makeTempDir();
    const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db') });
    opened.push({ store, remove: temp.remove });
    const fresh = new FreshTasks(new TaskEventFeed(store, silentLogger));
    const big = { blob: 'x'.repeat(1000 * 1000) };
    const ids: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      const task = newTaskInput({ arguments: big });
      fresh.expect(task.taskId);
      fresh.remember(await store.create(task));
      ids.push(task.taskId);
    }
    const held = ids.map((id) => fresh.get(id, ANYONE, Date.now())).reduce((sum, record) => sum + (record ? jsonCharsUpTo(record, 1 << 30) : 0), 0);
    // 4 entries: ~4 MB held now; 2048 such entries ~2 GB.
    expect(held).toBeLessThanOrEqual(4 * 64 * 1024);
  });
});
