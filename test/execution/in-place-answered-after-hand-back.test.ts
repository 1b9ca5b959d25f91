import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import type { TasksServerLimits } from '../../src/core/limits.js';
import type { TaskStore } from '../../src/core/store.js';
import { createTasksServer } from '../../src/server/create-tasks-server.js';
import type { TaskCaller } from '../../src/service/caller.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { answerPending } from '../helpers/answer-pending.js';
import { anonymousV2Caller } from '../helpers/callers.js';
import { countingInPlaceTool, type InPlaceRunCounts } from '../helpers/in-place-tool.js';
import { QUIET_LIMITS } from '../helpers/quiet-limits.js';
import { overrideStore } from '../helpers/store-wrapper.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * A run that waits in place is taken over by recovery in another process and, its tool being idempotent, handed back
 * parked (no owner; the hand-back uncounts the run, so `attempt` goes back by one). Here the answer lands before the
 * old run's heartbeat judges it (the lease is a minute long: the heartbeat beats every 20 s), so the old run reads its
 * answers while the answered task is runnable again: claimed by nobody yet, by another worker, or by this same process
 * — which counts the run again, so the row then names the owner and `attempt` the old run had. The old run must not
 * resume: the tool's code after its question runs in exactly one run, the one that completes the task. The control:
 * a wait nobody took over resumes with its answer.
 */

const LIMITS: Partial<TasksServerLimits> = { ...QUIET_LIMITS, tailIntervalMs: 50 };
const CALLER: TaskCaller = anonymousV2Caller({ elicitation: { form: {} } });

/** Holds the next call that passes it, until {@link Gate.open}; other calls pass freely. */
class Gate {
  private next: Promise<void> | undefined;
  private release = (): void => {};

  holdNext(): void {
    this.next = new Promise<void>((resolve) => (this.release = resolve));
  }

  open(): void {
    this.release();
  }

  async pass(): Promise<void> {
    const held = this.next;
    this.next = undefined;
    await held;
  }
}

describe('a run that waits in place whose answer lands after its task was handed back, before its heartbeat', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /**
   * Worker w1 (`concurrency` slots) runs the tool until its task waits in place. w1's store holds a read of input
   * requests at `reads` and the answer of a claim that started tasks at `claims`. `resumed` lists the runs (numbered
   * from 1) whose code after the question ran.
   */
  async function serve(concurrency: number) {
    const temp = makeTempDir();
    cleanups.push(() => temp.remove());
    const path = join(temp.dir, 'tasks.db');
    const store = openSqliteTaskStore({ path });
    cleanups.push(() => store.close());
    const reads = new Gate();
    const claims = new Gate();
    const gated = overrideStore(store, {
      listInputRequests: async (taskId: string) => {
        await reads.pass();
        return store.listInputRequests(taskId);
      },
      claimRunnable: async (leaseOwner: string, leaseMs: number, limit: number) => {
        const claimed = await store.claimRunnable(leaseOwner, leaseMs, limit);
        if (claimed.length > 0) await claims.pass();
        return claimed;
      },
    });
    const counts: InPlaceRunCounts = { runs: 0, aborted: 0, resumed: [] };
    /** What a run awaits after its question, before its result (a test holds the new run there). */
    let afterAnswer: Promise<void> = Promise.resolve();
    const tool = countingInPlaceTool(counts, () => afterAnswer);
    const secret = randomBytes(32);
    const start = async (instanceId: string, on: TaskStore) => {
      const server = await createTasksServer({ tools: [tool], store: on, secret, limits: { ...LIMITS, concurrency }, instanceId });
      cleanups.push(() => server.close());
      return server;
    };
    const { service } = await start('w1', gated);
    const outcome = await service.calls.callTool(CALLER, await service.calls.planCall(CALLER, { name: 'forwarded', progressToken: null }));
    if (outcome.kind !== 'task') throw new Error('no task');
    const { taskId } = outcome.task;
    await expect.poll(async () => (await store.getUnscoped(taskId))?.status, { timeout: 5000 }).toBe('input_required');
    expect(await store.getUnscoped(taskId)).toMatchObject({ leaseOwner: 'w1', attempt: 1 });

    /** Recovery in w2, as in in-place-handed-back.test.ts: the lease lapses and is claimed in one go, then given back parked. */
    const handBack = async (): Promise<void> => {
      const [, claimed] = await Promise.all([store.releaseLeasesOf('w1'), store.claimLapsed('w2', 60_000, 10)]);
      expect(claimed.map((task) => [task.taskId, task.status])).toEqual([[taskId, 'input_required']]);
      expect(await store.releaseUnstarted('w2', [taskId])).toEqual([taskId]);
      expect(await store.getUnscoped(taskId)).toMatchObject({ status: 'input_required', leaseOwner: null, attempt: 0 });
    };
    /** Hold every run after its question from now on; the returned function lets them go on. */
    const holdAfterAnswer = (): (() => void) => {
      let release = (): void => {};
      afterAnswer = new Promise<void>((resolve) => (release = resolve));
      return release;
    };
    /** The task completes with run 2's result, and run 1 — aborted — never got past its question. */
    const completedByRun2Only = async (): Promise<void> => {
      expect(await service.tasks.waitForTerminal(CALLER, taskId, AbortSignal.timeout(10_000))).toMatchObject({ status: 'completed', attempt: 1 });
      await expect.poll(() => ({ ...counts }), { timeout: 3000 }).toEqual({ runs: 2, aborted: 1, resumed: [2] });
      expect(await store.getOutcome(taskId)).toMatchObject({ kind: 'result', result: { content: [{ type: 'text', text: 'run 2: accept' }] } });
    };
    const row = async () => store.getUnscoped(taskId);
    return { store, path, taskId, counts, reads, claims, handBack, holdAfterAnswer, completedByRun2Only, row, start, service };
  }

  it('control: a wait nobody took over resumes with its answer (one run)', async () => {
    const { store, service, taskId, counts } = await serve(4);
    await answerPending(store, taskId);
    expect(await service.tasks.waitForTerminal(CALLER, taskId, AbortSignal.timeout(10_000))).toMatchObject({ status: 'completed', attempt: 1 });
    expect(await store.getOutcome(taskId)).toMatchObject({ kind: 'result', result: { content: [{ type: 'text', text: 'run 1: accept' }] } });
    expect(counts).toEqual({ runs: 1, aborted: 0, resumed: [1] });
  }, 20_000);

  it('claimed again by this same process as the answer lands: the old run does not resume; the new run completes the task', async () => {
    const { store, taskId, handBack, completedByRun2Only } = await serve(4);
    await handBack();
    await answerPending(store, taskId);
    await completedByRun2Only();
  }, 20_000);

  it('claimed by nobody yet (this worker has no free slot): the old run does not resume; the next run completes the task', async () => {
    const { store, taskId, handBack, completedByRun2Only } = await serve(1);
    await handBack();
    await answerPending(store, taskId);
    await completedByRun2Only();
  }, 20_000);

  it('its answers read after this same process started the new run (the row names the same owner and attempt): the old run does not resume', async () => {
    const { store, taskId, counts, reads, handBack, holdAfterAnswer, completedByRun2Only, row } = await serve(4);
    reads.holdNext();
    await handBack();
    await answerPending(store, taskId);
    const release = holdAfterAnswer();
    await expect.poll(() => counts.resumed, { timeout: 5000 }).toEqual([2]);
    expect(await row()).toMatchObject({ status: 'working', leaseOwner: 'w1', attempt: 1 });
    reads.open();
    // The old run (run 1) reads its answers now, and is aborted, never resumed.
    await expect.poll(() => ({ ...counts }), { timeout: 3000 }).toEqual({ runs: 2, aborted: 1, resumed: [2] });
    release();
    await completedByRun2Only();
  }, 20_000);

  it("its answers read after this same process's claim of the task committed and before that claim's answer came back: the old run does not resume", async () => {
    const { store, taskId, counts, reads, claims, handBack, completedByRun2Only, row } = await serve(4);
    reads.holdNext();
    claims.holdNext();
    await handBack();
    await answerPending(store, taskId);
    await expect.poll(row, { timeout: 5000 }).toMatchObject({ status: 'working', leaseOwner: 'w1', attempt: 1 });
    reads.open();
    // The old run reads its answers and the row (as its own), then waits for the claim in flight.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(counts).toEqual({ runs: 1, aborted: 0, resumed: [] });
    claims.open();
    await completedByRun2Only();
  }, 20_000);

  it("taken back by this same process's recovery while the old run still holds its slot (nothing started beside it): the old run resumes, the only run", async () => {
    // One slot, held by the old run: no claim of w1 starts the answered task, and w1's recovery (here its store call)
    // leases it to w1 without starting a run beside the one in the slot. The row then names w1 with the run uncounted
    // (attempt 0): aborting the old run for that left the task leased to w1 with no run until the lease lapsed.
    const { store, taskId, counts, reads, handBack, service, row } = await serve(1);
    reads.holdNext();
    await handBack();
    await answerPending(store, taskId);
    expect((await store.claimLapsed('w1', 60_000, 10)).map((task) => task.taskId)).toEqual([taskId]);
    expect(await row()).toMatchObject({ status: 'working', leaseOwner: 'w1', attempt: 0 });
    reads.open();
    // It goes on counted again (the hand-back had uncounted it): attempt 1, as the run it is.
    expect(await service.tasks.waitForTerminal(CALLER, taskId, AbortSignal.timeout(10_000))).toMatchObject({ status: 'completed', attempt: 1 });
    expect(await store.getOutcome(taskId)).toMatchObject({ kind: 'result', result: { content: [{ type: 'text', text: 'run 1: accept' }] } });
    expect(counts).toEqual({ runs: 1, aborted: 0, resumed: [1] });
  }, 20_000);

  it('claimed by another worker before the old run reads its answers: the old run does not resume; the other worker completes the task', async () => {
    const { store, path, taskId, counts, reads, handBack, holdAfterAnswer, completedByRun2Only, row, start } = await serve(1);
    reads.holdNext();
    await handBack();
    await answerPending(store, taskId);
    // w2's run gets past the question (its answer replayed) and stays there, holding the task, until the old run is judged.
    const release = holdAfterAnswer();
    const peer = openSqliteTaskStore({ path });
    cleanups.push(() => peer.close());
    await start('w2', peer);
    await expect.poll(() => counts.resumed, { timeout: 5000 }).toEqual([2]);
    expect(await row()).toMatchObject({ status: 'working', leaseOwner: 'w2', attempt: 1 });
    reads.open();
    // The old run (run 1) reads its answers now, and is aborted, never resumed.
    await expect.poll(() => ({ ...counts }), { timeout: 3000 }).toEqual({ runs: 2, aborted: 1, resumed: [2] });
    release();
    await completedByRun2Only();
  }, 20_000);
});
