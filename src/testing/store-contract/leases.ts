import { beforeEach, describe, expect, it } from 'vitest';

import { newTaskId } from '../../core/ids.js';
import type { TaskStore } from '../../core/store.js';
import type { FakeClock } from '../fake-clock.js';
import type { StoreContractContext } from './harness.js';

/**
 * The leases part of the TaskStore contract (port `TaskLeases`, `core/ports/leases.ts`): runs and leases on the
 * store clock, claims of runnable and lapsed tasks, release. Registered inside `describeTaskStoreContract`, which
 * owns the store's lifecycle.
 */
export function describeLeasesContract(ctx: StoreContractContext): void {
  const { t0: T0, create, eventsSince, moveTo } = ctx;
  let store: TaskStore;
  let clock: FakeClock;
  beforeEach(() => {
    store = ctx.store();
    clock = ctx.clock();
  });

  describe('leases', () => {
    it('startAttempt counts runs and leases on the store clock while working, honouring a live lease of another instance', async () => {
      const { taskId } = await create({ leaseOwner: 'i-a', leaseMs: 1_000 });
      const start = await store.lastEventSeq();
      clock.set(T0 + 999);
      expect(await store.startAttempt(taskId, 'i-b', 1_001)).toBeUndefined();
      clock.set(T0);
      expect(await store.startAttempt(taskId, 'i-a', 2_000)).toMatchObject({ attempt: 1, leaseOwner: 'i-a', leaseExpiresAt: T0 + 2_000 });
      // A lease has lapsed once leaseExpiresAt <= now: exactly at its end another instance may start.
      clock.set(T0 + 2_000);
      expect(await store.startAttempt(taskId, 'i-b', 7_000)).toMatchObject({ attempt: 2, leaseOwner: 'i-b', leaseExpiresAt: T0 + 9_000 });
      const events = await eventsSince(start);
      expect(events.map((e) => [e.kind, e.status, e.at, e.payload])).toEqual([
        ['attempt', 'working', T0, { attempt: 1, leaseOwner: 'i-a' }],
        ['attempt', 'working', T0 + 2_000, { attempt: 2, leaseOwner: 'i-b' }],
      ]);
      clock.set(T0 + 3_000);
      await store.transition(taskId, { to: 'input_required', releaseLease: true, now: T0 + 3_000 });
      expect(await store.startAttempt(taskId, 'i-b', 6_000)).toBeUndefined();
      expect(await store.startAttempt(newTaskId(), 'i-b', 6_000)).toBeUndefined();
    });

    it('renewLeases extends only the leases the caller holds, from the store clock; 0 lets them lapse at once', async () => {
      const mine = await create({ leaseOwner: 'i-a', leaseMs: 1_000 });
      const theirs = await create({ leaseOwner: 'i-b', leaseMs: 1_000 });
      const done = await create({ leaseOwner: 'i-a', leaseMs: 1_000 });
      await moveTo(done.taskId, 'cancelled');
      clock.set(T0 + 500);
      expect(await store.renewLeases('i-a', [mine.taskId, theirs.taskId, done.taskId, newTaskId()], 4_500)).toEqual([mine.taskId]);
      expect((await store.getUnscoped(mine.taskId))?.leaseExpiresAt).toBe(T0 + 5_000);
      expect((await store.getUnscoped(theirs.taskId))?.leaseExpiresAt).toBe(T0 + 1_000);
      expect(await store.renewLeases('i-a', [], 5_000)).toEqual([]);
      expect(await store.renewLeases('i-a', [mine.taskId], 0)).toEqual([mine.taskId]);
      expect((await store.getUnscoped(mine.taskId))?.leaseExpiresAt).toBe(T0 + 500);
      expect((await store.claimLapsed('i-c', 30_000, 10)).map((t) => t.taskId)).toEqual([mine.taskId]);
    });

    it('claimRunnable starts unleased working tasks oldest first, up to limit: attempt, lease and attempt event in one write', async () => {
      const first = await create();
      const second = await create({ statusMessage: 'queued' });
      const leased = await create({ leaseOwner: 'i-b', leaseMs: 60_000 });
      const lapsed = await create({ leaseOwner: 'i-dead', leaseMs: 100 });
      const waiting = await create();
      await store.transition(waiting.taskId, { to: 'input_required', releaseLease: true, now: T0 });
      const done = await create();
      await moveTo(done.taskId, 'cancelled');
      const expired = await create({ ttlMs: 1_000 });
      const third = await create({ ttlMs: 5_000 });
      clock.set(T0 + 1_000);
      const before = await store.lastEventSeq();
      const started = await store.claimRunnable('i-c', 30_000, 2);
      expect(started.map((t) => t.taskId)).toEqual([first.taskId, second.taskId]);
      for (const task of started) expect(task).toMatchObject({ status: 'working', attempt: 1, leaseOwner: 'i-c', leaseExpiresAt: T0 + 31_000 });
      expect(started[1]!.statusMessage).toBe('queued');
      expect((await eventsSince(before)).map((e) => [e.taskId, e.kind, e.status, e.at, e.payload])).toEqual(
        started.map((t) => [t.taskId, 'attempt', 'working', T0 + 1_000, { attempt: 1, leaseOwner: 'i-c' }]),
      );
      // A lapsed lease keeps its owner: that task needs a recovery decision (claimLapsed), not a plain start.
      expect((await store.claimRunnable('i-d', 30_000, 10)).map((t) => t.taskId)).toEqual([third.taskId]);
      expect(await store.claimRunnable('i-d', 30_000, 10)).toEqual([]);
      expect((await store.getUnscoped(leased.taskId))?.leaseOwner).toBe('i-b');
      expect(await store.getUnscoped(lapsed.taskId)).toMatchObject({ leaseOwner: 'i-dead', attempt: 0 });
      expect(await store.getUnscoped(expired.taskId)).toMatchObject({ leaseOwner: null, attempt: 0 });
      expect(await store.getUnscoped(waiting.taskId)).toMatchObject({ status: 'input_required', leaseOwner: null });
      // A task whose answers resumed it is unleased again and runs on the next claim.
      await store.transition(waiting.taskId, { to: 'working', now: T0 + 1_000 });
      expect((await store.claimRunnable('i-d', 30_000, 10)).map((t) => t.taskId)).toEqual([waiting.taskId]);
    });

    it('concurrent claimRunnable calls start disjoint sets that cover every runnable task', async () => {
      const ids = (await Promise.all(Array.from({ length: 12 }, () => create()))).map((t) => t.taskId);
      const claims = await Promise.all([store.claimRunnable('i-a', 30_000, 5), store.claimRunnable('i-b', 30_000, 5), store.claimRunnable('i-c', 30_000, 5)]);
      const claimed = claims.flat().map((t) => t.taskId);
      expect(new Set(claimed).size).toBe(claimed.length);
      expect(claimed.sort()).toEqual([...ids].sort());
      for (const task of claims.flat()) expect(task.attempt).toBe(1);
    });

    it('claimLapsed takes unexpired working tasks with a lapsed or no lease, up to limit, never twice', async () => {
      const lapsed = await create({ leaseOwner: 'i-dead', leaseMs: 100 });
      const none = await create();
      const live = await create({ leaseOwner: 'i-b', leaseMs: 60_000 });
      const waiting = await create();
      await store.transition(waiting.taskId, { to: 'input_required', releaseLease: true, now: T0 });
      const done = await create();
      await moveTo(done.taskId, 'cancelled');
      const expired = await create({ ttlMs: 1_000 });
      clock.set(T0 + 1_000);
      // The port does not fix which lapsed task comes first, only that each is claimed once.
      const first = await store.claimLapsed('i-c', 30_000, 1);
      expect(first).toHaveLength(1);
      expect(first[0]).toMatchObject({ leaseOwner: 'i-c', leaseExpiresAt: T0 + 31_000, status: 'working' });
      const rest = await store.claimLapsed('i-c', 30_000, 10);
      expect([...first, ...rest].map((t) => t.taskId).sort()).toEqual([lapsed.taskId, none.taskId].sort());
      expect(await store.claimLapsed('i-d', 30_000, 10)).toEqual([]);
      expect((await store.getUnscoped(live.taskId))?.leaseOwner).toBe('i-b');
      expect((await store.getUnscoped(expired.taskId))?.leaseOwner).toBeNull();
    });

    it('concurrent claimers get disjoint sets', async () => {
      const ids = (await Promise.all(Array.from({ length: 12 }, () => create()))).map((t) => t.taskId);
      clock.set(T0 + 1);
      const claims = await Promise.all(['i-1', 'i-2', 'i-3'].map((owner) => store.claimLapsed(owner, 30_000, 5)));
      const claimed = claims.flat().map((t) => t.taskId);
      expect(new Set(claimed).size).toBe(claimed.length);
      expect([...claimed].sort()).toEqual([...ids].sort());
    });
  });

  describe('releaseLeases', () => {
    it('lets the caller’s leases of working tasks lapse now, keeping the owner, with one released event each', async () => {
      const mine = await create({ leaseOwner: 'i-a', leaseMs: 30_000, startNow: true });
      const theirs = await create({ leaseOwner: 'i-b', leaseMs: 30_000, startNow: true });
      const waiting = await create({ leaseOwner: 'i-a', leaseMs: 30_000 });
      await store.transition(waiting.taskId, { to: 'input_required', releaseLease: true, now: T0 });
      clock.set(T0 + 500);
      const before = await store.lastEventSeq();
      expect(await store.releaseLeases('i-a', [mine.taskId, theirs.taskId, waiting.taskId, newTaskId()])).toEqual([mine.taskId]);
      expect(await store.releaseLeases('i-a', [])).toEqual([]);
      expect(await store.getUnscoped(mine.taskId)).toMatchObject({ leaseOwner: 'i-a', leaseExpiresAt: T0 + 500, attempt: 1 });
      expect(await store.getUnscoped(theirs.taskId)).toMatchObject({ leaseOwner: 'i-b', leaseExpiresAt: T0 + 30_000 });
      expect((await eventsSince(before)).map((e) => [e.taskId, e.kind, e.status, e.at, e.payload])).toEqual([
        [mine.taskId, 'released', 'working', T0 + 500, { leaseOwner: 'i-a' }],
      ]);
      // Released means lapsed: another worker's recovery takes it at once (its run was counted: a recovery decision).
      expect((await store.claimLapsed('i-c', 30_000, 10)).map((t) => t.taskId)).toEqual([mine.taskId]);
      expect(await store.claimRunnable('i-c', 30_000, 10)).toEqual([]);
    });
  });
  describe('releaseUnstarted', () => {
    it('gives the caller’s runs that never started back uncounted and unleased, runnable by any claim, one released event each', async () => {
      const mine = await create({ leaseOwner: 'i-a', leaseMs: 30_000, startNow: true });
      const again = await create({ leaseOwner: 'i-a', leaseMs: 30_000, startNow: true });
      await store.startAttempt(again.taskId, 'i-a', 30_000);
      const theirs = await create({ leaseOwner: 'i-b', leaseMs: 30_000, startNow: true });
      const waiting = await create({ leaseOwner: 'i-a', leaseMs: 30_000 });
      await store.transition(waiting.taskId, { to: 'input_required', releaseLease: true, now: T0 });
      clock.set(T0 + 500);
      const before = await store.lastEventSeq();
      // Asked in the reverse of creation order: ids and events follow the caller's order, never the table's.
      expect(await store.releaseUnstarted('i-a', [again.taskId, theirs.taskId, mine.taskId, waiting.taskId, newTaskId()])).toEqual([again.taskId, mine.taskId]);
      expect(await store.releaseUnstarted('i-a', [])).toEqual([]);
      // Only the run that did not start is uncounted: a task with an earlier run keeps that one.
      expect(await store.getUnscoped(mine.taskId)).toMatchObject({ status: 'working', leaseOwner: null, leaseExpiresAt: null, attempt: 0 });
      expect(await store.getUnscoped(again.taskId)).toMatchObject({ leaseOwner: null, leaseExpiresAt: null, attempt: 1 });
      expect(await store.getUnscoped(theirs.taskId)).toMatchObject({ leaseOwner: 'i-b', leaseExpiresAt: T0 + 30_000, attempt: 1 });
      expect((await eventsSince(before)).map((e) => [e.taskId, e.kind, e.status, e.at, e.payload])).toEqual([
        [again.taskId, 'released', 'working', T0 + 500, { leaseOwner: 'i-a', unstarted: true }],
        [mine.taskId, 'released', 'working', T0 + 500, { leaseOwner: 'i-a', unstarted: true }],
      ]);
      // Runnable like a task never claimed: a claim starts it as a new run (counted again), no recovery decision.
      const claimed = await store.claimRunnable('i-c', 30_000, 10);
      expect(claimed.map((t) => [t.taskId, t.attempt, t.leaseOwner])).toEqual([
        [mine.taskId, 1, 'i-c'],
        [again.taskId, 2, 'i-c'],
      ]);
    });
  });
}
