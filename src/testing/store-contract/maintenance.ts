import { beforeEach, describe, expect, it } from 'vitest';

import type { TaskStore } from '../../core/store.js';
import { EXPIRED_EVENT_RETENTION_MS } from '../../core/store-rules.js';
import type { FakeClock } from '../fake-clock.js';
import type { StoreContractContext } from './harness.js';

/**
 * The maintenance part of the TaskStore contract (port `StoreMaintenance`, `core/ports/maintenance.ts`): the
 * expiry sweep and its retention, and a close that commits queued writes. Registered inside
 * `describeTaskStoreContract`, which owns the store's lifecycle.
 */
export function describeMaintenanceContract(ctx: StoreContractContext): void {
  const { t0: T0, create, eventsSince, complete } = ctx;
  let store: TaskStore;
  let clock: FakeClock;
  beforeEach(() => {
    store = ctx.store();
    clock = ctx.clock();
  });

  describe('expireDue', () => {
    it('expires due tasks up to limit, deletes what hangs off them and keeps the expired event', async () => {
      const a = await create({ ttlMs: 100 });
      const b = await create({ ttlMs: 200 });
      const c = await create({ ttlMs: 5_000 });
      const unlimited = await create({ ttlMs: null });
      await complete(a.taskId);
      await store.putStep(a.taskId, 's', 1);
      const start = await store.lastEventSeq();
      clock.set(T0 + 99);
      expect(await store.expireDue(10)).toEqual([]);
      clock.set(T0 + 200);
      expect(await store.expireDue(1)).toEqual([a.taskId]);
      expect(await store.expireDue(10)).toEqual([b.taskId]);
      expect(await store.expireDue(10)).toEqual([]);
      expect(await store.getUnscoped(a.taskId)).toBeUndefined();
      expect(await store.getOutcome(a.taskId)).toBeUndefined();
      expect(await store.getStep(a.taskId, 's')).toBeUndefined();
      expect(await store.getUnscoped(c.taskId)).toBeDefined();
      expect(await store.getUnscoped(unlimited.taskId)).toBeDefined();
      const events = await eventsSince(start);
      expect(events.map((e) => [e.taskId, e.kind, e.status, e.at])).toEqual([
        [a.taskId, 'expired', 'completed', T0 + 200],
        [b.taskId, 'expired', 'working', T0 + 200],
      ]);
    });

    it('deletes a task’s events with it, keeps its expired event for EXPIRED_EVENT_RETENTION_MS, then deletes that too', async () => {
      const gone = await create({ ttlMs: 1_000 });
      const kept = await create({ ttlMs: null });
      await store.writeStatusMessages([{ taskId: gone.taskId, statusMessage: 'half way', now: T0 + 1 }]);
      await complete(gone.taskId);
      await store.writeStatusMessages([{ taskId: kept.taskId, statusMessage: 'still here', now: T0 + 2 }]);
      const kinds = async (taskId: string) => (await eventsSince(0)).filter((e) => e.taskId === taskId).map((e) => e.kind);
      expect(await kinds(gone.taskId)).toEqual(['created', 'message', 'status']);
      clock.set(T0 + 1_000);
      expect(await store.expireDue(10)).toEqual([gone.taskId]);
      expect(await kinds(gone.taskId)).toEqual(['expired']);
      expect(await kinds(kept.taskId)).toEqual(['created', 'message']);
      const lastSeq = await store.lastEventSeq();
      clock.set(T0 + 1_000 + EXPIRED_EVENT_RETENTION_MS - 1);
      await store.expireDue(10);
      expect(await kinds(gone.taskId)).toEqual(['expired']);
      clock.set(T0 + 1_000 + EXPIRED_EVENT_RETENTION_MS);
      await store.expireDue(10);
      expect(await kinds(gone.taskId)).toEqual([]);
      expect(await kinds(kept.taskId)).toEqual(['created', 'message']);
      // Deleting history never hands a seq out again: the next event comes after every one seen before.
      expect(await store.lastEventSeq()).toBe(lastSeq);
      await store.writeStatusMessages([{ taskId: kept.taskId, statusMessage: 'later', now: T0 + 3 }]);
      expect((await eventsSince(lastSeq)).map((e) => [e.seq, e.kind])).toEqual([[lastSeq + 1, 'message']]);
      await store.compact();
    });
  });

  describe('close', () => {
    it('commits writes still queued before it returns', async () => {
      const pending = create();
      await store.close();
      await expect(pending).resolves.toMatchObject({ status: 'working' });
    });
  });
}
