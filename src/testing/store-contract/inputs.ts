import { describe, expect, it } from 'vitest';

import { newTaskId } from '../../core/ids.js';
import type { NewProcessEntry } from '../../core/process-record.js';
import type { TaskEvent, TaskStore } from '../../core/store.js';
import { StoreError } from '../../core/store-error.js';
import type { JsonObject, NewTask, TaskRecord } from '../../core/task.js';
import type { FakeClock } from '../fake-clock.js';

/** What the input-request part of the contract suite needs from the suite around it. */
export interface InputContractContext {
  /** The store of the running test. */
  store(): TaskStore;
  /** The store's clock in the running test (starts at `t0`). */
  clock(): FakeClock;
  /** Epoch ms every task of the suite is created at. */
  t0: number;
  /** Create a task of the default owner, `overrides` applied. */
  create(overrides?: Partial<NewTask>): Promise<TaskRecord>;
}

const RUNNER = 'i-a';
const ask = (question: string): JsonObject => ({
  method: 'elicitation/create',
  params: { message: question, requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } },
});
const accept = (ok: boolean): JsonObject => ({ action: 'accept', content: { ok } });
const keys = (...names: string[]) => names.map((key) => ({ key, request: ask(`${key}?`) }));
const answer = (key: string, ok = true) => ({ key, response: accept(ok) });

/**
 * The input-request part of the {@link TaskStore} contract (steps written by `create`, `requestInput`,
 * `answerInput`, `listInputRequests`, `listWaitingSince`, and how they meet leases, recovery and expiry). Registered inside
 * `describeTaskStoreContract`, which owns the store's lifecycle.
 */
export function describeInputsContract(ctx: InputContractContext): void {
  const { t0: T0 } = ctx;
  const eventsSince = async (seq: number): Promise<Array<[TaskEvent['kind'], TaskEvent['status'], TaskEvent['payload']]>> =>
    (await ctx.store().readEventsAfter(seq, 10_000)).map((e) => [e.kind, e.status, e.payload]);
  /** A task in its first run, leased to {@link RUNNER} (attempt 1). */
  const running = async (overrides: Partial<NewTask> = {}) => {
    const { taskId } = await ctx.create({ leaseOwner: RUNNER, leaseMs: 30_000, ...overrides });
    return (await ctx.store().startAttempt(taskId, RUNNER, 30_000))!;
  };
  const park = (taskId: string, names: string[], now = T0 + 10, statusMessage: string | null = 'need input') =>
    ctx.store().requestInput(taskId, keys(...names), { leaseOwner: RUNNER, statusMessage, now });
  const respond = (taskId: string, change: Partial<Parameters<TaskStore['answerInput']>[1]>) =>
    ctx.store().answerInput(taskId, { answers: [], retire: [], add: [], now: T0 + 20, ...change });
  const states = async (taskId: string) => (await ctx.store().listInputRequests(taskId)).map((r) => [r.key, r.state, r.response] as const);

  describe('input requests', () => {
    it('create journals the given steps (input gathered before the task) with it; a refused create writes none', async () => {
      const store = ctx.store();
      const steps = { gathered: { action: 'accept', content: { ok: true } }, zero: 0, nothing: null };
      const { taskId } = await ctx.create({ steps, idempotencyKey: 'once' });
      for (const [name, value] of Object.entries(steps)) expect(await store.getStep(taskId, name)).toEqual({ value });
      await store.putStep(taskId, 'zero', 1);
      expect(await store.getStep(taskId, 'zero')).toEqual({ value: 0 });
      const refused = newTaskId();
      await expect(ctx.create({ taskId: refused, steps: { gathered: 'other' }, idempotencyKey: 'once' })).rejects.toBeInstanceOf(StoreError);
      expect(await store.getStep(refused, 'gathered')).toBeUndefined();
    });

    it('requestInput parks a working task of the lease holder: pending requests, no lease, run not counted', async () => {
      const store = ctx.store();
      const { taskId } = await running();
      const start = await store.lastEventSeq();
      const parked = await park(taskId, ['b', 'a'], T0 + 10, 'need input');
      expect(parked).toMatchObject({ status: 'input_required', statusMessage: 'need input', lastUpdatedAt: T0 + 10 });
      expect(parked).toMatchObject({ leaseOwner: null, leaseExpiresAt: null, attempt: 0 });
      expect(await store.getUnscoped(taskId)).toEqual(parked);
      expect(await store.listInputRequests(taskId)).toEqual([
        { taskId, key: 'b', request: ask('b?'), response: null, state: 'pending', createdAt: T0 + 10, answeredAt: null },
        { taskId, key: 'a', request: ask('a?'), response: null, state: 'pending', createdAt: T0 + 10, answeredAt: null },
      ]);
      // Each event carries the status the task had right after it.
      expect(await eventsSince(start)).toEqual([
        ['status', 'input_required', { from: 'working', to: 'input_required' }],
        ['input', 'input_required', { added: ['b', 'a'] }],
      ]);
    });

    it('requestInput applies only for the lease holder, only from working, only before expiry', async () => {
      const store = ctx.store();
      const leased = await running();
      const unleased = await ctx.create();
      const waiting = await running();
      await park(waiting.taskId, ['w']);
      const cancelled = await running();
      await store.transition(cancelled.taskId, { to: 'cancelled', releaseLease: true, now: T0 });
      const expiring = await running({ ttlMs: 100 });
      const start = await store.lastEventSeq();
      const parkAs = (taskId: string, leaseOwner: string, now = T0 + 10) => store.requestInput(taskId, keys('x'), { leaseOwner, statusMessage: null, now });
      expect(await parkAs(leased.taskId, 'i-b')).toBeUndefined();
      expect(await parkAs(unleased.taskId, RUNNER)).toBeUndefined();
      expect(await parkAs(waiting.taskId, RUNNER)).toBeUndefined();
      expect(await parkAs(cancelled.taskId, RUNNER)).toBeUndefined();
      expect(await parkAs(expiring.taskId, RUNNER, T0 + 100)).toBeUndefined();
      expect(await parkAs(newTaskId(), RUNNER)).toBeUndefined();
      expect(await store.lastEventSeq()).toBe(start);
      expect(await store.getUnscoped(leased.taskId)).toEqual(leased);
      for (const { taskId } of [leased, unleased, cancelled, expiring]) expect(await store.listInputRequests(taskId)).toEqual([]);
      expect(await states(waiting.taskId)).toEqual([['w', 'pending', null]]);
    });

    it('requestInput never takes attempt below 0 (a task parked before its first counted run)', async () => {
      const { taskId } = await ctx.create({ leaseOwner: RUNNER, leaseMs: 30_000 });
      expect(await park(taskId, ['a'])).toMatchObject({ status: 'input_required', attempt: 0 });
    });

    it('a key the task already used (in any state) fails the whole requestInput, writing nothing', async () => {
      const store = ctx.store();
      const { taskId } = await running();
      await park(taskId, ['a']);
      await respond(taskId, { answers: [answer('a')] });
      const rerun = (await store.startAttempt(taskId, RUNNER, 60_000))!;
      const start = await store.lastEventSeq();
      for (const reused of [
        ['c', 'a'],
        ['d', 'd'],
      ]) {
        const error: unknown = await park(taskId, reused, T0 + 40).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(StoreError);
        expect((error as StoreError).code).toBe('invalid');
      }
      expect(await store.getUnscoped(taskId)).toEqual(rerun);
      expect(await states(taskId)).toEqual([['a', 'answered', accept(true)]]);
      expect(await store.lastEventSeq()).toBe(start);
    });

    it('listInputRequests lists every request of the task in creation order with state and answer', async () => {
      const store = ctx.store();
      const { taskId } = await running();
      const other = await running();
      await park(other.taskId, ['a']);
      await park(taskId, ['z', 'a', 'm'], T0 + 1);
      await respond(taskId, { answers: [answer('a', false)], now: T0 + 2 });
      await respond(taskId, { retire: [{ key: 'z', response: { action: 'accept', content: { ok: 'maybe' } } }], add: keys('y'), now: T0 + 3 });
      const listed = await store.listInputRequests(taskId);
      expect(listed.map((r) => [r.key, r.state, r.response, r.createdAt, r.answeredAt])).toEqual([
        ['z', 'superseded', { action: 'accept', content: { ok: 'maybe' } }, T0 + 1, T0 + 3],
        ['a', 'answered', accept(false), T0 + 1, T0 + 2],
        ['m', 'pending', null, T0 + 1, null],
        ['y', 'pending', null, T0 + 3, null],
      ]);
      expect(listed.every((r) => r.taskId === taskId)).toBe(true);
      expect(await store.listInputRequests(newTaskId())).toEqual([]);
    });

    it('answerInput with some requests answered keeps the task waiting; answered keys are no longer pending', async () => {
      const store = ctx.store();
      const { taskId } = await running();
      await park(taskId, ['a', 'b']);
      const start = await store.lastEventSeq();
      const { accepted, task } = await respond(taskId, { answers: [answer('a')], statusMessage: 'one more', now: T0 + 15 });
      expect(accepted).toEqual(['a']);
      expect(task).toMatchObject({ status: 'input_required', statusMessage: 'one more', lastUpdatedAt: T0 + 15, leaseOwner: null });
      expect(await store.getUnscoped(taskId)).toEqual(task);
      expect(await states(taskId)).toEqual([
        ['a', 'answered', accept(true)],
        ['b', 'pending', null],
      ]);
      expect(await eventsSince(start)).toEqual([['input', 'input_required', { answered: ['a'], retired: [], added: [] }]]);
    });

    it('the first answer wins; later answers to it, unknown keys and repeats in one call are ignored', async () => {
      const store = ctx.store();
      const { taskId } = await running();
      await park(taskId, ['a', 'b']);
      const [first, second] = await Promise.all([respond(taskId, { answers: [answer('a', true)] }), respond(taskId, { answers: [answer('a', false)] })]);
      expect([first.accepted, second.accepted].sort()).toEqual([[], ['a']]);
      const winnerOk = first.accepted.length === 1;
      const settled = (await store.getUnscoped(taskId))!;
      const start = await store.lastEventSeq();
      // Nothing applies: no write at all, so the task (and its lastUpdatedAt) stays as it was.
      const ignored = await respond(taskId, { answers: [answer('nope'), answer('a', !winnerOk)], now: T0 + 99 });
      expect(ignored).toEqual({ accepted: [], task: settled });
      expect(await store.lastEventSeq()).toBe(start);
      const repeated = await respond(taskId, { answers: [answer('b', true), answer('b', false)], now: T0 + 30 });
      expect(repeated.accepted).toEqual(['b']);
      expect(await states(taskId)).toEqual([
        ['a', 'answered', accept(winnerOk)],
        ['b', 'answered', accept(true)],
      ]);
    });

    it('retire and add in one call supersede a request and ask it again under a new key', async () => {
      const store = ctx.store();
      const { taskId } = await running();
      await park(taskId, ['q1', 'q2']);
      const start = await store.lastEventSeq();
      const bad = { action: 'accept', content: { ok: 'not a boolean' } };
      const { accepted, task } = await respond(taskId, {
        retire: [
          { key: 'q1', response: bad },
          { key: 'q2', response: null },
        ],
        add: keys('q1-again'),
      });
      expect(accepted).toEqual(['q1', 'q2']);
      expect(task).toMatchObject({ status: 'input_required', lastUpdatedAt: T0 + 20 });
      expect(await states(taskId)).toEqual([
        ['q1', 'superseded', bad],
        ['q2', 'superseded', null],
        ['q1-again', 'pending', null],
      ]);
      expect(await eventsSince(start)).toEqual([['input', 'input_required', { answered: [], retired: ['q1', 'q2'], added: ['q1-again'] }]]);
    });

    it('an added request that replaces a key is added only when this call retired that key', async () => {
      const store = ctx.store();
      const { taskId } = await running();
      await park(taskId, ['q1', 'q2']);
      // Another process answered q1 first: the stale "retire q1, ask again" must not add a question nobody awaits.
      await respond(taskId, { answers: [answer('q1')] });
      const { accepted } = await respond(taskId, {
        retire: [{ key: 'q1', response: null }],
        add: [{ key: 'q1.2', request: ask('q1?'), replaces: 'q1' }],
      });
      expect(accepted).toEqual([]);
      expect((await states(taskId)).map(([key, state]) => [key, state])).toEqual([
        ['q1', 'answered'],
        ['q2', 'pending'],
      ]);
      await respond(taskId, { retire: [{ key: 'q2', response: null }], add: [{ key: 'q2.2', request: ask('q2?'), replaces: 'q2' }] });
      expect((await store.listInputRequests(taskId)).map((r) => [r.key, r.state])).toEqual([
        ['q1', 'answered'],
        ['q2', 'superseded'],
        ['q2.2', 'pending'],
      ]);
    });

    it('an added key the task already used fails the whole answerInput, writing nothing', async () => {
      const store = ctx.store();
      const { taskId } = await running();
      const parked = await park(taskId, ['a', 'b']);
      const start = await store.lastEventSeq();
      const error: unknown = await respond(taskId, { answers: [answer('a')], add: keys('b') }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).code).toBe('invalid');
      expect(await store.getUnscoped(taskId)).toEqual(parked);
      expect(await states(taskId)).toEqual([
        ['a', 'pending', null],
        ['b', 'pending', null],
      ]);
      expect(await store.lastEventSeq()).toBe(start);
    });

    it('answering the last pending request resumes the task to working with no lease, for any process to claim', async () => {
      const store = ctx.store();
      const { taskId } = await running();
      await park(taskId, ['a']);
      const stillWaiting = await running();
      await park(stillWaiting.taskId, ['x']);
      const start = await store.lastEventSeq();
      const { accepted, task } = await respond(taskId, { answers: [answer('a')], statusMessage: 'resuming', now: T0 + 20 });
      expect(accepted).toEqual(['a']);
      expect(task).toMatchObject({ status: 'working', statusMessage: 'resuming', lastUpdatedAt: T0 + 20, attempt: 0 });
      expect(task).toMatchObject({ leaseOwner: null, leaseExpiresAt: null });
      expect(await eventsSince(start)).toEqual([
        ['input', 'input_required', { answered: ['a'], retired: [], added: [] }],
        ['status', 'working', { from: 'input_required', to: 'working' }],
      ]);
      // Recovery in another process starts the next run; the waiting task holds no lease and is left alone.
      ctx.clock().set(T0 + 21);
      const claimed = await store.claimLapsed('i-b', 60_000, 10);
      expect(claimed.map((t) => [t.taskId, t.leaseOwner])).toEqual([[taskId, 'i-b']]);
      expect(await store.startAttempt(taskId, 'i-b', 60_000)).toMatchObject({ attempt: 1, leaseOwner: 'i-b' });
      expect(await store.getUnscoped(stillWaiting.taskId)).toMatchObject({ status: 'input_required', leaseOwner: null });
    });

    it('resuming leaves the lease as it was: a run that still holds it (a plain transition to input_required) keeps it', async () => {
      const store = ctx.store();
      const { taskId } = await running();
      await park(taskId, ['a']);
      await respond(taskId, { answers: [answer('a')] });
      const started = (await store.startAttempt(taskId, RUNNER, 60_000))!;
      await store.transition(taskId, { to: 'input_required', now: T0 + 21 });
      expect(await respond(taskId, { add: keys('b') })).toMatchObject({ accepted: [], task: { leaseOwner: RUNNER } });
      const { task } = await respond(taskId, { answers: [answer('b')] });
      expect(task).toMatchObject({ status: 'working', leaseOwner: RUNNER, leaseExpiresAt: started.leaseExpiresAt });
    });

    it('requestInput with holdLease keeps the lease and the run count; the answers resume that run, no other process takes it', async () => {
      const store = ctx.store();
      const before = await running();
      const { taskId } = before;
      const start = await store.lastEventSeq();
      const held = await store.requestInput(taskId, keys('a'), { leaseOwner: RUNNER, statusMessage: 'asks', now: T0 + 10, holdLease: true });
      expect(held).toMatchObject({ status: 'input_required', statusMessage: 'asks', leaseOwner: RUNNER, leaseExpiresAt: before.leaseExpiresAt, attempt: 1 });
      expect(await eventsSince(start)).toEqual([
        ['status', 'input_required', { from: 'working', to: 'input_required' }],
        ['input', 'input_required', { added: ['a'] }],
      ]);
      // The waiting run's heartbeat renews it; no process recovers it while it waits or after it resumes.
      expect(await store.renewLeases(RUNNER, [taskId], 30_000)).toEqual([taskId]);
      const renewed = (await store.getUnscoped(taskId))!.leaseExpiresAt!;
      ctx.clock().set(T0 + 21);
      expect(await store.claimLapsed('i-b', 60_000, 10)).toEqual([]);
      const { task } = await respond(taskId, { answers: [answer('a')], now: T0 + 21 });
      expect(task).toMatchObject({ status: 'working', leaseOwner: RUNNER, leaseExpiresAt: renewed, attempt: 1 });
      expect(await store.claimLapsed('i-b', 60_000, 10)).toEqual([]);
      // The holder died: once its lease lapses, recovery takes the task and counts a new run.
      ctx.clock().set(renewed);
      expect((await store.claimLapsed('i-b', 60_000, 10)).map((t) => t.taskId)).toEqual([taskId]);
      expect(await store.startAttempt(taskId, 'i-b', 60_000)).toMatchObject({ attempt: 2, leaseOwner: 'i-b' });
    });

    it('a holdLease run that died before its answer: claimLapsed takes the task, still input_required, once the lease lapsed (after lapsed working tasks); releaseUnstarted parks it; releaseLeasesOf lapses such a lease', async () => {
      const store = ctx.store();
      const asking = await running();
      await store.requestInput(asking.taskId, keys('a'), { leaseOwner: RUNNER, statusMessage: 'asks', now: T0 + 10, holdLease: true });
      const parked = await running();
      await park(parked.taskId, ['a']);
      const crashed = await running();
      ctx.clock().set(asking.leaseExpiresAt! - 1);
      expect(await store.claimLapsed('i-b', 60_000, 10)).toEqual([]);
      ctx.clock().set(asking.leaseExpiresAt!);
      // Running tasks first: a limit of one takes the lapsed working task, the next claim the one that waited in place.
      expect((await store.claimLapsed('i-b', 60_000, 1)).map((t) => t.taskId)).toEqual([crashed.taskId]);
      const [taken, ...more] = await store.claimLapsed('i-b', 60_000, 10);
      expect(more).toEqual([]);
      expect(taken).toMatchObject({ taskId: asking.taskId, status: 'input_required', leaseOwner: 'i-b', attempt: 1 });
      expect(await store.claimLapsed('i-c', 60_000, 10)).toEqual([]);
      // Given back: parked like a run that ended at its question (no lease, run uncounted), its question kept.
      const start = await store.lastEventSeq();
      expect(await store.releaseUnstarted('i-b', [asking.taskId])).toEqual([asking.taskId]);
      expect(await store.getUnscoped(asking.taskId)).toMatchObject({ status: 'input_required', leaseOwner: null, leaseExpiresAt: null, attempt: 0 });
      expect(await eventsSince(start)).toEqual([['released', 'input_required', { leaseOwner: 'i-b', unstarted: true }]]);
      expect(await states(asking.taskId)).toEqual([['a', 'pending', null]]);
      expect(await store.claimLapsed('i-c', 60_000, 10)).toEqual([]);
      await respond(asking.taskId, { answers: [answer('a')] });
      expect((await store.claimRunnable('i-c', 60_000, 10)).map((t) => [t.taskId, t.attempt])).toEqual([[asking.taskId, 1]]);
      // The takeover of a restarted (or reaped) holder: a lease held in place lapses at once, its event with the status.
      const again = await running();
      await store.requestInput(again.taskId, keys('a'), { leaseOwner: RUNNER, statusMessage: 'asks', now: T0 + 10, holdLease: true });
      const before = await store.lastEventSeq();
      expect(await store.releaseLeasesOf(RUNNER)).toEqual([again.taskId]);
      expect(await eventsSince(before)).toEqual([['released', 'input_required', { leaseOwner: RUNNER }]]);
      expect((await store.claimLapsed('i-d', 60_000, 10)).map((t) => [t.taskId, t.status])).toEqual([[again.taskId, 'input_required']]);
    });

    it('a run waiting in place whose lease lapsed while its process is registered live (a stall, not a crash) keeps its wait: claimLapsed takes it only for that id itself, or once the registration lapsed or is gone', async () => {
      const store = ctx.store();
      const clock = ctx.clock();
      const worker = (instanceId: string, token: string): NewProcessEntry => ({ instanceId, role: 'worker', token, host: 'h', pid: 1, settingsDigest: 'd' });
      const askInPlace = async (owner: string) => {
        const { taskId } = await ctx.create({ leaseOwner: owner, leaseMs: 30_000, ttlMs: 600_000 });
        const started = (await store.startAttempt(taskId, owner, 30_000))!;
        await store.requestInput(taskId, keys('a'), { leaseOwner: owner, statusMessage: 'asks', now: T0 + 10, holdLease: true });
        return started;
      };
      await store.registerProcess(worker(RUNNER, 'token-a'), 45_000);
      await store.registerProcess(worker('i-z', 'token-z'), 45_000);
      const asking = await askInPlace(RUNNER);
      const stopped = await askInPlace('i-z');
      const stalled = await running({ ttlMs: 600_000 });
      await store.deregisterProcess('i-z', 'token-z');
      clock.set(asking.leaseExpiresAt!);
      // A lapsed working lease is taken whoever holds it (control); of the waits, only the one whose process is gone.
      const claimed = await store.claimLapsed('i-b', 60_000, 10);
      expect(claimed.map((t) => [t.taskId, t.status])).toEqual([
        [stopped.taskId, 'input_required'],
        [stalled.taskId, 'working'],
      ]);
      expect(await store.getUnscoped(asking.taskId)).toMatchObject({ status: 'input_required', leaseOwner: RUNNER, leaseExpiresAt: asking.leaseExpiresAt });
      expect(await store.claimLapsed('i-c', 60_000, 10)).toEqual([]);
      // The process under that id itself takes it (its own run goes on; one restarted under the id recovers its predecessor's).
      expect((await store.claimLapsed(RUNNER, 30_000, 10)).map((t) => t.taskId)).toEqual([asking.taskId]);
      // Its heartbeat, once the stall is over, renews the wait; once its registration lapses too, the wait is taken.
      expect(await store.renewLeases(RUNNER, [asking.taskId], 30_000)).toEqual([asking.taskId]);
      clock.set(asking.leaseExpiresAt! + 30_000);
      expect((await store.claimLapsed('i-b', 60_000, 10)).map((t) => [t.taskId, t.status, t.leaseOwner])).toEqual([[asking.taskId, 'input_required', 'i-b']]);
    });

    it('answerInput writes nothing unless the task is input_required', async () => {
      const store = ctx.store();
      const working = await running();
      const resumed = await running();
      await park(resumed.taskId, ['a']);
      await respond(resumed.taskId, { answers: [answer('a')] });
      const cancelled = await running();
      await park(cancelled.taskId, ['a']);
      await store.transition(cancelled.taskId, { to: 'cancelled', now: T0 + 20 });
      const expired = await running({ ttlMs: 100 });
      await park(expired.taskId, ['a']);
      const start = await store.lastEventSeq();
      const before = await Promise.all([working, resumed, cancelled].map((t) => store.getUnscoped(t.taskId)));
      const change = { answers: [answer('a')], retire: [{ key: 'a', response: null }], add: keys('new'), statusMessage: 'x' };
      for (const { taskId } of [working, resumed, cancelled]) {
        expect(await respond(taskId, change)).toEqual({ accepted: [], task: undefined });
      }
      expect(await respond(expired.taskId, { ...change, now: T0 + 100 })).toEqual({ accepted: [], task: undefined });
      expect(await respond(newTaskId(), change)).toEqual({ accepted: [], task: undefined });
      expect(await store.lastEventSeq()).toBe(start);
      expect(await Promise.all([working, resumed, cancelled].map((t) => store.getUnscoped(t.taskId)))).toEqual(before);
      expect(await states(working.taskId)).toEqual([]);
      expect(await states(cancelled.taskId)).toEqual([['a', 'pending', null]]);
      expect(await states(expired.taskId)).toEqual([['a', 'pending', null]]);
    });

    it('listWaitingSince lists unexpired waiting tasks updated at or before `before`, oldest first, up to limit', async () => {
      const store = ctx.store();
      const tasks = await Promise.all([running(), running(), running(), running(), running({ ttlMs: 20 })]);
      const [t10, t30, t20, t40, expired] = tasks.map((t) => t.taskId) as [string, string, string, string, string];
      await park(t10, ['a'], T0 + 10);
      await park(t30, ['a'], T0 + 30);
      await park(t20, ['a'], T0 + 20);
      await park(t40, ['a'], T0 + 40);
      await park(expired, ['a'], T0 + 5);
      await running(); // working tasks are never listed
      const ids = async (before: number, limit = 10) => (await store.listWaitingSince(before, limit)).map((t) => t.taskId);
      expect(await ids(T0 + 30)).toEqual([t10, t20, t30]);
      expect(await ids(T0 + 40, 2)).toEqual([t10, t20]);
      expect(await ids(T0 + 4)).toEqual([]);
      // An answer that keeps a task waiting restarts its wait.
      await respond(t10, { add: keys('b'), now: T0 + 50 });
      expect(await ids(T0 + 40)).toEqual([t20, t30, t40]);
      expect((await store.listWaitingSince(T0 + 50, 10)).map((t) => t.status)).toEqual(Array(4).fill('input_required'));
    });

    it('expireDue deletes the input requests of an expired task', async () => {
      const store = ctx.store();
      const { taskId } = await running({ ttlMs: 100 });
      await park(taskId, ['a', 'b']);
      await respond(taskId, { answers: [answer('a')] });
      ctx.clock().set(T0 + 100);
      expect(await store.expireDue(10)).toEqual([taskId]);
      expect(await store.listInputRequests(taskId)).toEqual([]);
    });
  });
}
