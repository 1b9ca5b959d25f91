import { beforeEach, describe, expect, it } from 'vitest';

import { newTaskId } from '../../core/ids.js';
import { MAX_TOOL_STATE_BYTES, MAX_TOOL_STATE_KEYS, MAX_TOOL_STATE_NAME, type TaskStore } from '../../core/store.js';
import type { FakeClock } from '../fake-clock.js';
import { ALICE, BOB, expectStoreError, type StoreContractContext } from './harness.js';

/**
 * The steps part of the TaskStore contract (port `TaskSteps`, `core/ports/steps.ts`): journaled steps (first write
 * wins) and per-owner tool state with its bounds. Registered inside `describeTaskStoreContract`, which owns the
 * store's lifecycle.
 */
export function describeStepsContract(ctx: StoreContractContext): void {
  const { t0: T0, create } = ctx;
  let store: TaskStore;
  let clock: FakeClock;
  beforeEach(() => {
    store = ctx.store();
    clock = ctx.clock();
  });

  describe('steps', () => {
    it('journals each step once: the first write wins', async () => {
      const { taskId } = await create();
      const other = await create();
      expect(await store.getStep(taskId, 'fetch')).toBeUndefined();
      expect(await store.putStep(taskId, 'fetch', { rows: [1, 2] })).toEqual({ kind: 'journaled', value: { rows: [1, 2] } });
      expect(await store.putStep(taskId, 'fetch', { rows: [] })).toEqual({ kind: 'journaled', value: { rows: [1, 2] } });
      expect(await store.getStep(taskId, 'fetch')).toEqual({ value: { rows: [1, 2] } });
      expect(await store.getStep(other.taskId, 'fetch')).toBeUndefined();
      for (const value of [null, false, 0, '', []]) {
        await store.putStep(taskId, `v-${JSON.stringify(value)}`, value);
        expect(await store.getStep(taskId, `v-${JSON.stringify(value)}`)).toEqual({ value });
      }
    });
  });

  describe('steps of a run, fenced by its lease owner (stop 46)', () => {
    it('a run journals and reads its steps only while its lease owner holds the task; a lapsed lease nobody took is still held', async () => {
      const { taskId } = await create({ leaseOwner: 'i-a', leaseMs: 1_000 });
      expect(await store.lookupStep(taskId, 'a', 'i-a')).toEqual({ kind: 'absent' });
      expect(await store.putStep(taskId, 'a', 'from i-a', 'i-a')).toEqual({ kind: 'journaled', value: 'from i-a' });
      expect(await store.lookupStep(taskId, 'a', 'i-a')).toEqual({ kind: 'journaled', value: 'from i-a' });
      clock.set(T0 + 5_000);
      expect(await store.putStep(taskId, 'b', 'lapsed, not taken', 'i-a')).toEqual({ kind: 'journaled', value: 'lapsed, not taken' });
      // Another process takes the task over: the first run neither reads nor writes its journal any more.
      expect(await store.startAttempt(taskId, 'i-b', 10_000)).toMatchObject({ leaseOwner: 'i-b' });
      expect(await store.lookupStep(taskId, 'a', 'i-a')).toEqual({ kind: 'not_held' });
      expect(await store.lookupStep(taskId, 'c', 'i-a')).toEqual({ kind: 'not_held' });
      expect(await store.putStep(taskId, 'c', 'from the lost run', 'i-a')).toEqual({ kind: 'not_held' });
      expect(await store.getStep(taskId, 'c')).toBeUndefined();
      expect(await store.lookupStep(taskId, 'c', 'i-b')).toEqual({ kind: 'absent' });
      expect(await store.lookupStep(taskId, 'a', 'i-b')).toEqual({ kind: 'journaled', value: 'from i-a' });
      expect(await store.putStep(taskId, 'c', 'from i-b', 'i-b')).toEqual({ kind: 'journaled', value: 'from i-b' });
      // The lost run's write that meets the new run's value is refused too, not answered with that value.
      expect(await store.putStep(taskId, 'c', 'from the lost run', 'i-a')).toEqual({ kind: 'not_held' });
    });

    it('a step under way when its run parked is still journaled while nobody holds the task; the parked run starts no step', async () => {
      const { taskId } = await create({ leaseOwner: 'i-a', leaseMs: 60_000 });
      await store.transition(taskId, { to: 'input_required', releaseLease: true, now: T0 });
      expect(await store.lookupStep(taskId, 'next', 'i-a')).toEqual({ kind: 'not_held' });
      expect(await store.putStep(taskId, 'fetch', 'fetched', 'i-a')).toEqual({ kind: 'journaled', value: 'fetched' });
      expect(await store.putStep(taskId, 'fetch', 'again', 'i-a')).toEqual({ kind: 'journaled', value: 'fetched' });
      expect(await store.getStep(taskId, 'fetch')).toEqual({ value: 'fetched' });
    });

    it('a task that ended under its lease owner (the lease kept) is not held: no lookup, no write', async () => {
      const { taskId } = await create({ leaseOwner: 'i-a', leaseMs: 60_000 });
      await store.transition(taskId, { to: 'completed', outcome: { kind: 'result', result: { content: [] } }, now: T0 });
      expect((await store.getUnscoped(taskId))?.leaseOwner).toBe('i-a');
      expect(await store.lookupStep(taskId, 'a', 'i-a')).toEqual({ kind: 'not_held' });
      expect(await store.putStep(taskId, 'a', 1, 'i-a')).toEqual({ kind: 'not_held' });
    });

    it('a write that loses to an earlier one answers the value that won; an ended or unknown task answers not_held', async () => {
      const { taskId } = await create({ leaseOwner: 'i-a', leaseMs: 60_000 });
      await store.putStep(taskId, 'a', { first: true });
      expect(await store.putStep(taskId, 'a', { first: false }, 'i-a')).toEqual({ kind: 'journaled', value: { first: true } });
      expect(await store.putStep(taskId, 'a', { first: false })).toEqual({ kind: 'journaled', value: { first: true } });
      await store.transition(taskId, { to: 'cancelled', releaseLease: true, now: T0 });
      expect(await store.lookupStep(taskId, 'a', 'i-a')).toEqual({ kind: 'not_held' });
      expect(await store.putStep(taskId, 'b', 1, 'i-a')).toEqual({ kind: 'not_held' });
      expect(await store.putStep(newTaskId(), 'a', 1)).toEqual({ kind: 'not_held' });
      expect(await store.lookupStep(newTaskId(), 'a', 'i-a')).toEqual({ kind: 'not_held' });
    });
  });

  describe('tool state', () => {
    it('keeps one document per owner, tool and key: replaced by a put, never seen by another owner or tool', async () => {
      expect(await store.getToolState(ALICE, 'check_infrastructure', 'snapshot')).toBeUndefined();
      await store.putToolState(ALICE, 'check_infrastructure', 'snapshot', { targets: { a: 'sha256:1' } }, T0);
      await store.putToolState(ALICE, 'check_infrastructure', 'snapshot', { targets: { a: 'sha256:2' } }, T0 + 1);
      expect(await store.getToolState(ALICE, 'check_infrastructure', 'snapshot')).toEqual({ targets: { a: 'sha256:2' } });
      expect(await store.getToolState(BOB, 'check_infrastructure', 'snapshot')).toBeUndefined();
      expect(await store.getToolState(ALICE, 'analyze_logs', 'snapshot')).toBeUndefined();
      await store.putToolState(BOB, 'check_infrastructure', 'snapshot', 'bob', T0);
      expect(await store.getToolState(ALICE, 'check_infrastructure', 'snapshot')).toEqual({ targets: { a: 'sha256:2' } });
      for (const value of [null, false, 0, '', [], 'héllo ✓ "quoted"\n']) {
        await store.putToolState(ALICE, 'check_infrastructure', `v-${JSON.stringify(value)}`, value, T0);
        expect(await store.getToolState(ALICE, 'check_infrastructure', `v-${JSON.stringify(value)}`)).toEqual(value);
      }
    });

    it('outlives tasks: expiring every task leaves it in place', async () => {
      await create({ ttlMs: 10 });
      await store.putToolState(ALICE, 'check_infrastructure', 'snapshot', { kept: true }, T0);
      clock.set(T0 + 1_000);
      expect(await store.expireDue(100)).toHaveLength(1);
      expect(await store.getToolState(ALICE, 'check_infrastructure', 'snapshot')).toEqual({ kept: true });
    });

    it('refuses a document over the size bound, a bad name, and a new key beyond the key bound, writing nothing', async () => {
      const big = 'x'.repeat(MAX_TOOL_STATE_BYTES);
      await expectStoreError(store.putToolState(ALICE, 'check_infrastructure', 'snapshot', big, T0), 'invalid');
      expect(await store.getToolState(ALICE, 'check_infrastructure', 'snapshot')).toBeUndefined();
      await expectStoreError(store.putToolState(ALICE, '', 'snapshot', 1, T0), 'invalid');
      await expectStoreError(store.putToolState(ALICE, 'check_infrastructure', 'k'.repeat(MAX_TOOL_STATE_NAME + 1), 1, T0), 'invalid');
      for (let i = 0; i < MAX_TOOL_STATE_KEYS; i++) await store.putToolState(ALICE, 'many', `k${i}`, i, T0);
      await expectStoreError(store.putToolState(ALICE, 'many', 'one-too-many', 1, T0), 'invalid');
      expect(await store.getToolState(ALICE, 'many', 'one-too-many')).toBeUndefined();
      // An existing key is still replaced at the bound, and another owner or tool has a bound of its own.
      await store.putToolState(ALICE, 'many', 'k0', 'again', T0);
      expect(await store.getToolState(ALICE, 'many', 'k0')).toBe('again');
      await store.putToolState(BOB, 'many', 'one-too-many', 1, T0);
      await store.putToolState(ALICE, 'other', 'k', 1, T0);
    });
  });
}
