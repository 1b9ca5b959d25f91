import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import type { TasksServerLimits } from '../../src/core/limits.js';
import { createTasksServer } from '../../src/server/create-tasks-server.js';
import type { TaskCaller } from '../../src/service/caller.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { answerPending } from '../helpers/answer-pending.js';
import { anonymousV2Caller } from '../helpers/callers.js';
import { countingInPlaceTool, type InPlaceRunCounts } from '../helpers/in-place-tool.js';
import { QUIET_LIMITS } from '../helpers/quiet-limits.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * Review F4: a run that waits in place is taken over by recovery in another process (its lease lapsed: here the test
 * lets it lapse and claims it as worker w2 would) and, its tool being idempotent, handed back parked
 * (`releaseUnstarted`: no owner). The run in w1 still waits; once the task is answered, whoever claims it runs it
 * again — the old run must not carry on beside it. Its heartbeat finds the row naming no owner and aborts it.
 * A short lease: the heartbeat beats every 300 ms.
 */

const LIMITS: Partial<TasksServerLimits> = { ...QUIET_LIMITS, tailIntervalMs: 50, leaseMs: 900, recoveryIntervalMs: 60_000 };
const CALLER: TaskCaller = anonymousV2Caller({ elicitation: { form: {} } });

describe('a run that waits in place whose task recovery elsewhere handed back', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('is aborted by its heartbeat (lease_lost) before the answer; answered, the task runs once more and completes', async () => {
    const temp = makeTempDir();
    cleanups.push(() => temp.remove());
    const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db') });
    cleanups.push(() => store.close());
    const counts: InPlaceRunCounts = { runs: 0, aborted: 0, resumed: [] };
    const tool = countingInPlaceTool(counts);
    const server = await createTasksServer({ tools: [tool], store, secret: randomBytes(32), limits: LIMITS, instanceId: 'w1' });
    cleanups.push(() => server.close());
    const { service } = server;
    const outcome = await service.calls.callTool(CALLER, await service.calls.planCall(CALLER, { name: 'forwarded', progressToken: null }));
    if (outcome.kind !== 'task') throw new Error('no task');
    const { taskId } = outcome.task;
    await expect.poll(async () => (await store.getUnscoped(taskId))?.status, { timeout: 5000 }).toBe('input_required');
    expect(await store.getUnscoped(taskId)).toMatchObject({ leaseOwner: 'w1' });

    // Recovery in w2: the lease lapses and is claimed in one go (no renewal of w1 between), then given back parked.
    const [, claimed] = await Promise.all([store.releaseLeasesOf('w1'), store.claimLapsed('w2', 60_000, 10)]);
    expect(claimed.map((t) => [t.taskId, t.status])).toEqual([[taskId, 'input_required']]);
    expect(await store.releaseUnstarted('w2', [taskId])).toEqual([taskId]);
    expect(await store.getUnscoped(taskId)).toMatchObject({ status: 'input_required', leaseOwner: null });

    await expect.poll(() => counts.aborted, { timeout: 3000 }).toBe(1);
    await answerPending(store, taskId);
    await expect.poll(async () => (await store.getUnscoped(taskId))?.status, { timeout: 5000 }).toBe('completed');
    expect(await store.getOutcome(taskId)).toMatchObject({ kind: 'result', result: { content: [{ type: 'text', text: 'run 2: accept' }] } });
    expect(counts.runs).toBe(2);
  }, 20_000);
});
