import { describe, expect, it } from 'vitest';
import { newTaskId } from '../core/ids.js';
import { ADMISSION_IN_FLIGHT_MS } from '../core/store-rules.js';
import type { CreateQuota, TaskStore } from '../core/store.js';
import type { NewTask, TaskRecord } from '../core/task.js';
import type { FakeClock } from './fake-clock.js';

/** What the quota part of the contract suite needs from the suite around it. */
export interface QuotaContractContext {
  store(): TaskStore;
  clock(): FakeClock;
  /** Create a task, `overrides` applied (default owner, created now). */
  create(overrides?: Partial<NewTask>): Promise<TaskRecord>;
}

const OWNER = 'https://issuer.example|quota|acme';
const OTHER = 'https://issuer.example|other|acme';
const WINDOW_MS = 60_000;

/**
 * The per-owner quota part of the {@link TaskStore} contract (`admitCreate`, issue 10 §2): the create-rate window
 * with its exact `retryAfterMs`, active tasks (admitted-but-not-created ones included), owners apart, terminal
 * tasks freeing a slot, and atomic admission under concurrency.
 */
export function describeQuotaContract(context: QuotaContractContext): void {
  describe('admitCreate (quotas)', () => {
    const quota = (overrides: Partial<CreateQuota> = {}): CreateQuota => ({
      taskId: newTaskId(),
      ownerKey: OWNER,
      now: context.clock().now(),
      maxActive: null,
      maxCreates: null,
      windowMs: WINDOW_MS,
      ...overrides,
    });
    /** Admit and create, as the service does. */
    const admitAndCreate = async (limits: Partial<CreateQuota>, ownerKey = OWNER) => {
      const admission = quota({ ...limits, ownerKey });
      const answer = await context.store().admitCreate(admission);
      if (answer.admitted) await context.create({ taskId: admission.taskId, ownerKey, createdAt: admission.now });
      return answer;
    };

    it('create rate: the (max+1)-th create in the window is refused with retryAfterMs until the oldest leaves it; other owners are apart', async () => {
      const clock = context.clock();
      expect(await admitAndCreate({ maxCreates: 2 })).toEqual({ admitted: true });
      clock.advance(10_000);
      expect(await admitAndCreate({ maxCreates: 2 })).toEqual({ admitted: true });
      clock.advance(5_000);
      expect(await admitAndCreate({ maxCreates: 2 })).toEqual({ admitted: false, reason: 'create_rate', retryAfterMs: WINDOW_MS - 15_000 });
      expect(await admitAndCreate({ maxCreates: 2 }, OTHER)).toEqual({ admitted: true });
      clock.advance(WINDOW_MS - 15_000);
      expect(await admitAndCreate({ maxCreates: 2 })).toEqual({ admitted: true });
      expect(await admitAndCreate({ maxCreates: 2 })).toMatchObject({ admitted: false, reason: 'create_rate', retryAfterMs: 10_000 });
    });

    it('active tasks: non-terminal tasks count, a terminal one frees its slot; a refused admission writes nothing', async () => {
      const first = quota({ maxActive: 2 });
      expect(await context.store().admitCreate(first)).toEqual({ admitted: true });
      await context.create({ taskId: first.taskId, ownerKey: OWNER });
      expect(await admitAndCreate({ maxActive: 2 })).toEqual({ admitted: true });
      expect(await admitAndCreate({ maxActive: 2 })).toEqual({ admitted: false, reason: 'active_tasks' });
      expect(await admitAndCreate({ maxActive: 2 }, OTHER)).toEqual({ admitted: true });
      await context.store().transition(first.taskId, { to: 'cancelled', now: context.clock().now() });
      expect(await admitAndCreate({ maxActive: 2 })).toEqual({ admitted: true });
      expect(await admitAndCreate({ maxActive: 2 })).toEqual({ admitted: false, reason: 'active_tasks' });
      // Only the admitted creates exist as rows: refusals left nothing behind.
      expect((await context.store().list({ ownerKey: OWNER, generation: 'v2' }, { afterSeq: 0, limit: 100 })).length).toBe(3);
    });

    it('an admitted create whose row does not exist yet counts as active (for ADMISSION_IN_FLIGHT_MS), so concurrent creates cannot overshoot', async () => {
      expect(await context.store().admitCreate(quota({ maxActive: 1 }))).toEqual({ admitted: true });
      expect(await context.store().admitCreate(quota({ maxActive: 1 }))).toEqual({ admitted: false, reason: 'active_tasks' });
      context.clock().advance(ADMISSION_IN_FLIGHT_MS + 1);
      expect(await context.store().admitCreate(quota({ maxActive: 1, now: context.clock().now() }))).toEqual({ admitted: true });
    });

    it('concurrent admissions of one owner admit exactly the limit', async () => {
      const answers = await Promise.all(Array.from({ length: 12 }, () => context.store().admitCreate(quota({ maxCreates: 5, maxActive: 100 }))));
      expect(answers.filter((answer) => answer.admitted)).toHaveLength(5);
      expect(answers.filter((answer) => !answer.admitted).every((answer) => !answer.admitted && answer.reason === 'create_rate')).toBe(true);
    });
  });
}
