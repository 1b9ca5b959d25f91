import { describe, expect, it } from 'vitest';

import type { CreateQuota, TaskStore } from '../../core/store.js';
import type { NewTask, TaskRecord } from '../../core/task.js';
import type { FakeClock } from '../fake-clock.js';

/** What the quota part of the contract suite needs from the suite around it. */
export interface QuotaContractContext {
  store(): TaskStore;
  clock(): FakeClock;
  /** A new task, `overrides` applied (default owner, created now), not yet written. */
  newTask(overrides?: Partial<NewTask>): NewTask;
  /** Create a task without quotas, as {@link TaskStore.create}. */
  create(overrides?: Partial<NewTask>): Promise<TaskRecord>;
  /** A second store on the same database, as another process opens it (closed by the suite); `undefined` without one. */
  peer(): Promise<TaskStore | undefined>;
}

const OWNER = 'https://issuer.example|quota|acme';
const OTHER = 'https://issuer.example|other|acme';
const WINDOW_MS = 60_000;

/**
 * The per-owner quota part of the {@link TaskStore} contract (`admitCreate`, issue 10 §2 and issue 23 §4): the
 * create-rate window with its exact `retryAfterMs`; an exact count of active tasks — a task that ended, was cancelled
 * or expired frees its slot at once, also when the sweeper has deleted it; owners apart; a refusal writes nothing;
 * concurrent creates (of two stores, as two processes, where the backend has a peer) never exceed the limit; and the
 * same admission inside an idempotency-key claim.
 */
export function describeAdmissionContract(context: QuotaContractContext): void {
  describe('admitCreate (quotas)', () => {
    const quota = (overrides: Partial<CreateQuota> = {}): CreateQuota => ({ maxActive: null, maxCreates: null, windowMs: WINDOW_MS, ...overrides });
    const now = () => context.clock().now();
    /** Admit a new task of `ownerKey` created now under `limits`. */
    const admit = (limits: Partial<CreateQuota>, overrides: Partial<NewTask> = {}, store = context.store()) =>
      store.admitCreate(context.newTask({ ownerKey: OWNER, createdAt: now(), ...overrides }), quota(limits));
    const verdict = async (limits: Partial<CreateQuota>, overrides: Partial<NewTask> = {}) => {
      const answer = await admit(limits, overrides);
      return answer.admitted ? { admitted: true } : answer;
    };
    const ownerTasks = async (ownerKey = OWNER) => (await context.store().list({ ownerKey, generation: 'v2' }, { afterSeq: 0, limit: 100 })).length;

    it('create rate: the (max+1)-th create in the window is refused with retryAfterMs until the oldest leaves it; other owners are apart', async () => {
      const clock = context.clock();
      expect(await verdict({ maxCreates: 2 })).toEqual({ admitted: true });
      clock.advance(10_000);
      expect(await verdict({ maxCreates: 2 })).toEqual({ admitted: true });
      clock.advance(5_000);
      expect(await verdict({ maxCreates: 2 })).toEqual({ admitted: false, reason: 'create_rate', retryAfterMs: WINDOW_MS - 15_000 });
      expect(await verdict({ maxCreates: 2 }, { ownerKey: OTHER })).toEqual({ admitted: true });
      clock.advance(WINDOW_MS - 15_000);
      expect(await verdict({ maxCreates: 2 })).toEqual({ admitted: true });
      expect(await verdict({ maxCreates: 2 })).toMatchObject({ admitted: false, reason: 'create_rate', retryAfterMs: 10_000 });
    });

    it('an admitted create is the task, written in the same transaction: readable at once, as create() returns it', async () => {
      const task = context.newTask({ ownerKey: OWNER, createdAt: now() });
      const answer = await context.store().admitCreate(task, quota({ maxActive: 1, maxCreates: 1 }));
      if (!answer.admitted) expect.fail(`refused: ${answer.reason}`);
      expect(answer.task).toMatchObject({ taskId: task.taskId, ownerKey: OWNER, status: 'working' });
      expect(await context.store().getUnscoped(task.taskId)).toEqual(answer.task);
    });

    it('active tasks: non-terminal tasks count, a refused create writes nothing, other owners are apart', async () => {
      expect(await verdict({ maxActive: 2 })).toEqual({ admitted: true });
      expect(await verdict({ maxActive: 2 })).toEqual({ admitted: true });
      expect(await verdict({ maxActive: 2 })).toEqual({ admitted: false, reason: 'active_tasks' });
      expect(await verdict({ maxActive: 2 }, { ownerKey: OTHER })).toEqual({ admitted: true });
      // Tasks created without quotas count too: the count is of tasks, not of admissions.
      await context.create({ ownerKey: OTHER });
      expect(await verdict({ maxActive: 2 }, { ownerKey: OTHER })).toEqual({ admitted: false, reason: 'active_tasks' });
      expect(await ownerTasks()).toBe(2);
    });

    it.each(['completed', 'failed', 'cancelled'] as const)('issue 23 §4: a task that became %s frees its slot at once', async (to) => {
      const first = await admit({ maxActive: 1 });
      if (!first.admitted) expect.fail('the first create was refused');
      expect(await verdict({ maxActive: 1 })).toEqual({ admitted: false, reason: 'active_tasks' });
      const outcome =
        to === 'completed'
          ? { kind: 'result' as const, result: { content: [] } }
          : to === 'failed'
            ? { kind: 'error' as const, error: { code: -32603, message: 'x' } }
            : undefined;
      expect(await context.store().transition(first.task.taskId, { to, ...(outcome ? { outcome } : {}), now: now() })).toBeDefined();
      expect(await verdict({ maxActive: 1 })).toEqual({ admitted: true });
    });

    it('issue 23 §4: an expired task frees its slot at once — still stored (not swept yet) and after the sweeper deleted it', async () => {
      const clock = context.clock();
      // A v1 client asking ttl: 1000 for a task that completes at once.
      const short = await admit({ maxActive: 1 }, { ttlMs: 1000 });
      if (!short.admitted) expect.fail('the first create was refused');
      clock.advance(1001);
      // Expired while still working (the sweeper has not run): it no longer counts.
      const next = await admit({ maxActive: 1 }, { ttlMs: 1000 });
      expect(next.admitted).toBe(true);
      if (!next.admitted) return;
      await context.store().transition(next.task.taskId, { to: 'completed', outcome: { kind: 'result', result: { content: [] } }, now: now() });
      clock.advance(1001);
      expect(await context.store().expireDue(100)).toEqual(expect.arrayContaining([short.task.taskId, next.task.taskId]));
      expect(await context.store().getUnscoped(next.task.taskId)).toBeUndefined();
      // 2 s after both were created, both rows gone: the owner has nothing active and is admitted.
      expect(await verdict({ maxActive: 1 })).toEqual({ admitted: true });
      expect(await verdict({ maxActive: 1 })).toEqual({ admitted: false, reason: 'active_tasks' });
    });

    it('concurrent creates of one owner never exceed the limits — through one store and, where there is one, a peer store as another process', async () => {
      const peer = (await context.peer()) ?? context.store();
      const stores = [context.store(), peer];
      const active = await Promise.all(Array.from({ length: 16 }, (_, i) => admit({ maxActive: 3 }, {}, stores[i % 2])));
      expect(active.filter((answer) => answer.admitted)).toHaveLength(3);
      expect(active.filter((answer) => !answer.admitted).every((answer) => !answer.admitted && answer.reason === 'active_tasks')).toBe(true);
      expect(await ownerTasks()).toBe(3);
      const rate = await Promise.all(Array.from({ length: 12 }, (_, i) => admit({ maxCreates: 5 }, { ownerKey: OTHER }, stores[i % 2])));
      expect(rate.filter((answer) => answer.admitted)).toHaveLength(5);
      expect(rate.filter((answer) => !answer.admitted).every((answer) => !answer.admitted && answer.reason === 'create_rate')).toBe(true);
    });

    it('inside an idempotency-key claim: a free key with a full quota is refused and stays free; a taken key replays whatever the quota', async () => {
      const claimOf = (key: string, taskId: string) => ({
        ownerKey: OWNER,
        generation: 'v2' as const,
        key,
        toolName: 'slow_tool',
        requestDigest: 'digest',
        taskId,
        windowMs: 3_600_000,
      });
      const claim = (key: string, limits: Partial<CreateQuota>) => {
        const task = context.newTask({ ownerKey: OWNER, createdAt: now() });
        return context.store().claimIdempotencyKey(claimOf(key, task.taskId), task, quota(limits));
      };
      const first = await claim('k-1', { maxActive: 1 });
      if (!first.claimed || !first.task) expect.fail('the first claim did not create its task');
      expect(await claim('k-2', { maxActive: 1 })).toEqual({ claimed: false, refused: { reason: 'active_tasks' } });
      expect(await context.store().findIdempotencyKey({ ownerKey: OWNER, generation: 'v2' }, 'k-2')).toBeUndefined();
      expect(await claim('k-1', { maxActive: 1 })).toMatchObject({ claimed: false, existing: { key: 'k-1', taskId: first.task.taskId } });
      await context.store().transition(first.task.taskId, { to: 'cancelled', now: now() });
      expect(await claim('k-2', { maxActive: 1 })).toMatchObject({ claimed: true, task: { ownerKey: OWNER } });
      expect(await ownerTasks()).toBe(2);
      const peer = (await context.peer()) ?? context.store();
      const tasks = Array.from({ length: 10 }, () => context.newTask({ ownerKey: OTHER, createdAt: now() }));
      const raced = await Promise.all(
        tasks.map((task, i) =>
          (i % 2 ? peer : context.store()).claimIdempotencyKey({ ...claimOf(`r-${i}`, task.taskId), ownerKey: OTHER }, task, quota({ maxActive: 2 })),
        ),
      );
      expect(raced.filter((result) => result.claimed)).toHaveLength(2);
      expect(await ownerTasks(OTHER)).toBe(2);
    });
  });
}
