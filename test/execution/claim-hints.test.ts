import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

import type { TasksServerLimits } from '../../src/core/limits.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { createTasksServer } from '../../src/server/create-tasks-server.js';
import type { TaskCaller } from '../../src/service/caller.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { apiOnlyOnSqlite } from '../helpers/api-only.js';
import { anonymousV2Caller, CONFIRM_SCHEMA } from '../helpers/callers.js';
import { QUIET_LIMITS } from '../helpers/quiet-limits.js';
import { overrideStore } from '../helpers/store-wrapper.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * Issue 25: a worker claims only for hinted tasks (see `TaskWorker.hint`). No runnable task may then be left for the
 * poll fallback: every background interval is a minute long here, so only a hint can get a task claimed in time.
 * Found by a review of the hint change, which dropped the `working` hint of a task whose parked run still held its
 * slot; the recovery case failed before that change too.
 */

const LIMITS: Partial<TasksServerLimits> = { ...QUIET_LIMITS, claimIntervalMs: 60_000 };
const CALLER: TaskCaller = anonymousV2Caller({ elicitation: { form: {} } });

describe('claim hints leave no runnable task to the poll fallback (issue 25)', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /**
   * A task parks for input; its tool takes `unwindMs` to unwind after parking (a `finally` that flushes, or the
   * round trip of a worker thread), and the answer comes within that time. The resumed task must run at once.
   */
  async function resumeWhileUnwinding(unwindMs: number, answerAfterMs = 0) {
    const temp = makeTempDir();
    cleanups.push(() => temp.remove());
    const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db') });
    cleanups.push(() => store.close());
    let runs = 0;
    const tool = defineTool({
      name: 'confirm_job',
      description: 'asks once, then completes',
      execution: 'task-optional',
      idempotent: true,
      elicits: true,
      inputSchema: z.object({}),
      async run(_args, ctx) {
        runs += 1;
        try {
          const answer = await ctx.elicit({ message: 'Go on?', requestedSchema: CONFIRM_SCHEMA });
          return textResult(answer.action);
        } finally {
          await new Promise((resolve) => setTimeout(resolve, unwindMs));
        }
      },
    });
    const server = await createTasksServer({ tools: [tool], store, secret: randomBytes(32), limits: LIMITS, instanceId: 'w1' });
    cleanups.push(() => server.close());
    const { service } = server;
    // Answer as soon as the task parks (a fast client, or an automated answerer). Answers still on their way when the
    // test ends are waited for before the store closes (an answer event of the resumed run starts one more).
    const answering = new Set<Promise<unknown>>();
    const stopAnswering = store.onEvent((event) => {
      if (event.kind !== 'input') return;
      const answer = new Promise((resolve) => setTimeout(resolve, answerAfterMs))
        .then(() => store.listInputRequests(event.taskId))
        .then((requests) => {
          const pending = requests.filter((request) => request.state === 'pending');
          if (pending.length === 0) return;
          return store.answerInput(event.taskId, {
            answers: pending.map((request) => ({ key: request.key, response: { action: 'accept', content: { confirm: true } } })),
            retire: [],
            add: [],
            now: Date.now(),
          });
        });
      answering.add(answer);
      void answer.finally(() => answering.delete(answer));
    });
    cleanups.push(async () => {
      stopAnswering();
      await Promise.allSettled([...answering]);
    });
    const outcome = await service.calls.callTool(CALLER, await service.calls.planCall(CALLER, { name: 'confirm_job', progressToken: null }));
    if (outcome.kind !== 'task') throw new Error('no task');
    const started = Date.now();
    const done = await service.tasks.waitForTerminal(CALLER, outcome.task.taskId, AbortSignal.timeout(10_000)).catch((error: unknown) => error);
    return { done, runs, ms: Date.now() - started };
  }

  // The answer's `working` hint names a task this worker still runs (its parked run unwinds): it must still claim.
  it('a task answered while its parked run is still unwinding in its slot is claimed without the poll fallback', async () => {
    const { done, runs } = await resumeWhileUnwinding(300);
    expect(runs).toBe(2);
    expect(done).toMatchObject({ status: 'completed' });
  }, 20_000);

  // The same with no unwinding at all: an answer written as soon as the `input` event is read still lands before the
  // parked run's slot is freed (in-process executor); timing-dependent, the case above is the deterministic one.
  it('a task answered at once after parking is claimed without the poll fallback', async () => {
    const { done, runs } = await resumeWhileUnwinding(0);
    expect(runs).toBe(2);
    expect(done).toMatchObject({ status: 'completed' });
  }, 20_000);

  it('control: answered 500 ms later, after the parked run left its slot, it runs at once', async () => {
    const { done, runs } = await resumeWhileUnwinding(0, 500);
    expect(runs).toBe(2);
    expect(done).toMatchObject({ status: 'completed' });
  }, 20_000);

  /**
   * A recovery pass (timer, or another worker's `released` event) holds every free slot in `claiming` while its
   * statement is out; a task created then is hinted, but no claim can be sent, and nothing claims when the pass ends.
   */
  it('a task created while a recovery pass is out is claimed when the pass ends, not at the poll fallback', async () => {
    const { store, api, tool } = await apiOnlyOnSqlite(cleanups, LIMITS);
    let holdRecovery = false;
    let releaseRecovery!: () => void;
    const recoveryHeld = new Promise<void>((resolve) => (releaseRecovery = resolve));
    let recoveryOut = false;
    const held = overrideStore<typeof store>(store, {
      async claimLapsed(owner: string, leaseMs: number, limit: number) {
        if (!holdRecovery) return store.claimLapsed(owner, leaseMs, limit);
        recoveryOut = true;
        const records = await store.claimLapsed(owner, leaseMs, limit);
        await recoveryHeld;
        return records;
      },
    });
    const { createTaskWorker } = await import('../../src/execution/create-task-worker.js');
    const worker = await createTaskWorker({ store: held, tools: [tool], limits: { ...LIMITS, concurrency: 4 }, instanceId: 'worker-1' });
    cleanups.push(() => worker.close());
    await new Promise((resolve) => setTimeout(resolve, 100));
    holdRecovery = true;
    const pass = worker.worker.recover();
    await expect.poll(() => recoveryOut).toBe(true);
    const seen = new Promise<void>((resolve) => store.onEvent((event) => event.kind === 'created' && resolve()));
    const outcome = await api.service.calls.callTool(CALLER, await api.service.calls.planCall(CALLER, { name: 'noop', progressToken: null }));
    if (outcome.kind !== 'task') throw new Error('no task');
    await seen;
    await new Promise((resolve) => setTimeout(resolve, 20));
    releaseRecovery();
    await pass;
    const done = await api.service.tasks.waitForTerminal(CALLER, outcome.task.taskId, AbortSignal.timeout(5_000)).catch((error: unknown) => error);
    expect(done).toMatchObject({ status: 'completed' });
  }, 20_000);
});
