import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { waitForTaskStatus } from '../../src/testing/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { makeTempDir } from '../helpers/temp-dir.js';

describe('waitForTaskStatus', () => {
  const temp = makeTempDir();
  const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db') });
  afterEach(() => undefined);

  it('resolves on the committed transition and times out with a clear error otherwise', async () => {
    const task = await store.create(newTaskInput({ ttlMs: 60_000 }));
    const waiting = waitForTaskStatus(store, task.taskId, ['completed']);
    await store.transition(task.taskId, { to: 'completed', outcome: { kind: 'result', result: { content: [] } }, now: Date.now() });
    expect((await waiting).status).toBe('completed');
    await expect(waitForTaskStatus(store, task.taskId, ['failed'], 50)).rejects.toThrow(/still completed/);
    await store.close();
    temp.remove();
  });
});
