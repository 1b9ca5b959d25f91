import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { waitForTaskStatus } from '../../src/testing/index.js';
import { makeTempDir } from '../helpers/temp-dir.js';

describe('waitForTaskStatus', () => {
  const temp = makeTempDir();
  const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db') });
  afterEach(() => undefined);

  it('resolves on the committed transition and times out with a clear error otherwise', async () => {
    const now = Date.now();
    const task = await store.create({ taskId: 'CCCCCCCCCCCCCCCCCCCCCC', ownerKey: 'anonymous', generation: 'v2', protocolVersion: '2026-07-28', toolName: 't', arguments: {}, clientCapabilities: {}, progressToken: null, statusMessage: null, createdAt: now, ttlMs: 60_000, pollIntervalMs: 1000, leaseOwner: null, leaseExpiresAt: null });
    const waiting = waitForTaskStatus(store, task.taskId, ['completed']);
    await store.transition(task.taskId, { to: 'completed', outcome: { kind: 'result', result: { content: [] } }, now: Date.now() });
    expect((await waiting).status).toBe('completed');
    await expect(waitForTaskStatus(store, task.taskId, ['failed'], 50)).rejects.toThrow(/still completed/);
    await store.close();
    temp.remove();
  });
});
