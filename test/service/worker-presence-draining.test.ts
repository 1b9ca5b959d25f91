/**
 * An API process's view of its store's workers (`WorkerPresence`: its `/readyz` `checks.workers` and the "waiting
 * for a worker" status) counts a draining worker — SIGTERMed, it finishes or hands back its runs and takes no new
 * task — as not taking tasks, by the same rule as `doctor` (`takesTasks`). Real SQLite store, a fake clock.
 */
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import type { NewProcessEntry } from '../../src/core/process-record.js';
import type { TaskRecord } from '../../src/core/task.js';
import { WorkerPresence } from '../../src/service/worker-presence.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const temp = makeTempDir('mcp-tasks-presence-draining-');
afterAll(() => temp.remove());

const worker = (instanceId: string): NewProcessEntry => ({ instanceId, role: 'worker', token: `t-${instanceId}`, host: 'h', pid: 1, settingsDigest: 'd' });
/** A task no run has started yet, as the view sees it. */
const queued = { status: 'working', attempt: 0, statusMessage: 'queued' } as TaskRecord;

describe('WorkerPresence with draining workers', () => {
  it('a worker that drains is not live: not counted, the task waits and says why, the API turns not ready after the window; a worker that does not drain counts (control)', async () => {
    const clock = new FakeClock(1_000_000);
    const store = openSqliteTaskStore({ path: join(temp.dir, 'presence.db'), clock });
    try {
      await store.registerProcess(worker('w-1'), 600_000);
      const presence = new WorkerPresence(store, clock, { absentAfterMs: 5_000, refreshMs: 60_000 });
      await presence.refresh();
      expect(presence.state()).toMatchObject({ ok: true, live: 1, draining: 0 });
      expect(presence.view(queued).statusMessage).toBe('queued');

      expect(await store.markProcessDraining('w-1', 't-w-1')).toBe(true);
      await presence.refresh();
      expect(presence.state()).toMatchObject({ ok: true, live: 0, draining: 1 });
      expect(presence.view(queued).statusMessage).toMatch(
        /^waiting for a worker \(no worker process takes tasks: 1 draining, taking no new task; last seen \S+\); the task starts when one runs$/,
      );
      clock.advance(5_001);
      expect(presence.state()).toMatchObject({ ok: false, live: 0, draining: 1 });

      await store.registerProcess(worker('w-2'), 600_000);
      await presence.refresh();
      expect(presence.state()).toMatchObject({ ok: true, live: 1, draining: 1 });
      expect(presence.view(queued).statusMessage).toBe('queued');
    } finally {
      await store.close();
    }
  });
});
