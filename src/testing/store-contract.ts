import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Clock } from '../core/clock.js';
import { newTaskId } from '../core/ids.js';
import { StoreError, type StoreErrorCode } from '../core/store-error.js';
import { EXPIRED_EVENT_RETENTION_MS } from '../core/store-rules.js';
import { MAX_TOOL_STATE_BYTES, MAX_TOOL_STATE_KEYS, MAX_TOOL_STATE_NAME, type TaskEvent, type TaskStore } from '../core/store.js';
import type { NewTask, TaskOutcome, TaskStatus } from '../core/task.js';
import { FakeClock } from './fake-clock.js';
import { describeInputRequestContract } from './store-contract-input.js';
import { describeQuotaContract } from './store-contract-quota.js';
import { describeLedgerContract } from './store-contract-ledger.js';
import { describeKillSwitchContract } from './store-contract-kill-switch.js';
import { describeResultChunkContract } from './store-contract-results.js';
import { describeProcessRegistryContract } from './store-contract-registry.js';

/** A fresh, empty store and how to dispose of it (must tolerate a store the test already closed). */
export interface TaskStoreFixture {
  store: TaskStore;
  /**
   * Optional: a second store on the same database, as another process would open it (the fixture closes it in
   * `cleanup`). Race checks then run across both, not only through one store's group commit.
   */
  peer?(): Promise<TaskStore>;
  cleanup(): Promise<void>;
}

/** What the suite hands `makeStore`: the store must judge leases and expiry sweeps on exactly this clock. */
export interface TaskStoreFixtureContext {
  clock: Clock;
}

/** Assert that `promise` rejects with a {@link StoreError} of `code`; returns the error. */
export async function expectStoreError(promise: Promise<unknown>, code: StoreErrorCode): Promise<StoreError> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreError);
  expect((error as StoreError).code).toBe(code);
  return error as StoreError;
}

const T0 = Date.UTC(2026, 0, 1);
const ALICE = 'https://issuer.example|alice|acme';
const BOB = 'https://issuer.example|bob|acme';
const RESULT: TaskOutcome = {
  kind: 'result',
  result: { content: [{ type: 'text', text: 'héllo ✓ "quoted"\n' }], structuredContent: { n: 1.5, big: 2 ** 53 - 1, nested: [null, true, {}] }, isError: false },
};
const ERROR: TaskOutcome = { kind: 'error', error: { code: -32603, message: 'boom', data: { reason: 'interrupted', at: [1, 2] } } };

/**
 * Register the behavioural contract of the {@link TaskStore} port as a vitest suite. Every backend runs it
 * unchanged; `makeStore` is called before each test and `cleanup` after it. Times are fixed epoch ms on a fake
 * clock that `makeStore` must give the store as its clock (leases, expiry sweeps), so the suite never sleeps.
 */
export function describeTaskStoreContract(name: string, makeStore: (context: TaskStoreFixtureContext) => Promise<TaskStoreFixture>): void {
  describe(`TaskStore contract: ${name}`, () => {
    let fixture: TaskStoreFixture;
    let store: TaskStore;
    let clock: FakeClock;

    beforeEach(async () => {
      clock = new FakeClock(T0);
      fixture = await makeStore({ clock });
      store = fixture.store;
    });
    afterEach(async () => {
      await fixture.cleanup();
    });

    const newTask = (overrides: Partial<NewTask> = {}): NewTask => ({
      taskId: newTaskId(),
      ownerKey: ALICE,
      generation: 'v2',
      protocolVersion: '2026-07-28',
      toolName: 'slow_tool',
      arguments: { q: 'x', list: [1, 'two', null] },
      clientCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
      progressToken: null,
      statusMessage: null,
      createdAt: clock.now(),
      ttlMs: 60_000,
      pollIntervalMs: 1_000,
      leaseOwner: null,
      leaseMs: null,
      ...overrides,
    });
    const create = (overrides: Partial<NewTask> = {}) => store.create(newTask(overrides));
    const eventsSince = async (seq: number) => store.readEventsAfter(seq, 10_000);
    const complete = (taskId: string, extra: Partial<Parameters<TaskStore['transition']>[1]> = {}) =>
      store.transition(taskId, { to: 'completed', outcome: RESULT, releaseLease: true, now: clock.now(), ...extra });
    /** Reach `status` from `working` through an allowed path. */
    const moveTo = async (taskId: string, status: TaskStatus) => {
      const outcome = status === 'completed' ? RESULT : status === 'failed' ? ERROR : undefined;
      return store.transition(taskId, { to: status, outcome, now: clock.now() });
    };

    describe('create', () => {
      it('stores a working task with attempt 0, seq and expiresAt = createdAt + ttlMs, readable at once', async () => {
        const input = newTask({ progressToken: 7, statusMessage: 'queued', idempotencyKey: 'k1', requestDigest: 'd1' });
        const record = await store.create(input);
        const { idempotencyKey, requestDigest, leaseMs: _leaseMs, ...rest } = input;
        expect(record).toMatchObject({ ...rest, idempotencyKey, requestDigest, status: 'working', attempt: 0, leaseExpiresAt: null });
        expect(record.lastUpdatedAt).toBe(input.createdAt);
        expect(record.expiresAt).toBe(input.createdAt + 60_000);
        expect(Number.isSafeInteger(record.seq) && record.seq > 0).toBe(true);
        expect(await store.get(input.taskId, { ownerKey: ALICE })).toEqual(record);
      });

      it('startNow counts the first run at creation: attempt 1 and an attempt event after the created one', async () => {
        const before = await store.lastEventSeq();
        const record = await create({ startNow: true, leaseOwner: 'i-a', leaseMs: 30_000 });
        expect(record).toMatchObject({ attempt: 1, leaseOwner: 'i-a', leaseExpiresAt: T0 + 30_000 });
        expect((await store.getUnscoped(record.taskId))?.attempt).toBe(1);
        const events = (await store.readEventsAfter(before, 10)).filter((event) => event.taskId === record.taskId);
        expect(events.map((event) => [event.kind, event.status, event.payload])).toEqual([
          ['created', 'working', null],
          ['attempt', 'working', { attempt: 1, leaseOwner: 'i-a' }],
        ]);
      });

      it('keeps JSON fields and the progress token type; ttlMs null never expires', async () => {
        const record = await create({ progressToken: 'tok-1', ttlMs: null, arguments: { deep: { a: [{ b: 'ü' }] } } });
        expect(record).toMatchObject({ progressToken: 'tok-1', ttlMs: null, expiresAt: null, arguments: { deep: { a: [{ b: 'ü' }] } } });
        expect(record.idempotencyKey).toBeNull();
        clock.set(Number.MAX_SAFE_INTEGER);
        expect(await store.expireDue(10)).toEqual([]);
        expect(await store.get(record.taskId, { ownerKey: ALICE })).toEqual(record);
      });

      it('assigns strictly increasing seq and appends one created event each', async () => {
        const start = await store.lastEventSeq();
        const records = [];
        for (let i = 0; i < 5; i += 1) records.push(await create());
        const seqs = records.map((r) => r.seq);
        expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
        expect(new Set(seqs).size).toBe(5);
        const events = await eventsSince(start);
        expect(events.map((e) => [e.taskId, e.kind, e.status])).toEqual(records.map((r) => [r.taskId, 'created', 'working']));
      });

      it('rejects a second idempotency key of the same owner as a conflict, not of another owner', async () => {
        await create({ idempotencyKey: 'same', requestDigest: 'a' });
        await expectStoreError(create({ idempotencyKey: 'same', requestDigest: 'b' }), 'conflict');
        await expect(create({ idempotencyKey: 'same', ownerKey: BOB })).resolves.toMatchObject({ ownerKey: BOB });
        await expect(Promise.all([create(), create()])).resolves.toHaveLength(2);
      });

      it('a failing create among concurrent ones rejects alone; the others commit, events stay gap-free', async () => {
        const start = await store.lastEventSeq();
        const inputs = Array.from({ length: 10 }, (_, i) => newTask({ idempotencyKey: i === 9 ? 'k0' : `k${i}` }));
        const settled = await Promise.allSettled(inputs.map((t) => store.create(t)));
        expect(settled.filter((s) => s.status === 'rejected')).toHaveLength(1);
        const rejected = settled[9] as PromiseRejectedResult;
        await expectStoreError(Promise.reject(rejected.reason), 'conflict');
        for (const t of inputs.slice(0, 9)) expect(await store.getUnscoped(t.taskId)).toBeDefined();
        expect(await store.getUnscoped(inputs[9]!.taskId)).toBeUndefined();
        const seqs = (await eventsSince(start)).map((e) => e.seq);
        expect(seqs).toEqual(Array.from({ length: 9 }, (_, i) => start + 1 + i));
      });
    });

    describe('session tasks', () => {
      it('a task of a v1 session names it in its created event; openSessionTasks lists the session\'s non-terminal tasks, oldest first, until they settle or are deleted', async () => {
        const before = await store.lastEventSeq();
        const first = await create({ generation: 'v1', sessionId: 's-1', ttlMs: 5_000 });
        const second = await create({ generation: 'v1', sessionId: 's-1' });
        const other = await create({ generation: 'v1', sessionId: 's-2' });
        const none = await create();
        const created = (await eventsSince(before)).filter((event) => event.kind === 'created');
        expect(created.map((event) => [event.taskId, event.payload])).toEqual([
          [first.taskId, { sessionId: 's-1' }],
          [second.taskId, { sessionId: 's-1' }],
          [other.taskId, { sessionId: 's-2' }],
          [none.taskId, null],
        ]);
        expect(await store.sessions.openSessionTasks('s-1', 10)).toEqual([first.taskId, second.taskId]);
        expect(await store.sessions.openSessionTasks('s-1', 1)).toEqual([first.taskId]);
        expect(await store.sessions.openSessionTasks('s-2', 10)).toEqual([other.taskId]);
        expect(await store.sessions.openSessionTasks('unknown', 10)).toEqual([]);
        await moveTo(first.taskId, 'input_required');
        await complete(second.taskId);
        expect(await store.sessions.openSessionTasks('s-1', 10)).toEqual([first.taskId]);
        clock.advance(5_001);
        expect(await store.expireDue(10)).toContain(first.taskId);
        expect(await store.sessions.openSessionTasks('s-1', 10)).toEqual([]);
      });
    });

    describe('get', () => {
      it('answers undefined for a missing id, another owner or another generation', async () => {
        const { taskId } = await create({ generation: 'v1', protocolVersion: '2025-11-25' });
        expect(await store.get(taskId, { ownerKey: ALICE })).toBeDefined();
        expect(await store.get(taskId, { ownerKey: ALICE, generation: 'v1' })).toBeDefined();
        expect(await store.get(taskId, { ownerKey: ALICE, generation: 'v2' })).toBeUndefined();
        expect(await store.get(taskId, { ownerKey: BOB })).toBeUndefined();
        expect(await store.get(newTaskId(), { ownerKey: ALICE })).toBeUndefined();
        expect(await store.getUnscoped(newTaskId())).toBeUndefined();
      });

      it('returns a task past its expiresAt until expireDue deletes it (read visibility is judged above the store)', async () => {
        const record = await create({ ttlMs: 1_000 });
        clock.set(T0 + 1_000);
        expect(await store.get(record.taskId, { ownerKey: ALICE })).toEqual(record);
        expect(await store.list({ ownerKey: ALICE, generation: 'v2' }, { afterSeq: 0, limit: 10 })).toEqual([record]);
        expect(await store.expireDue(10)).toEqual([record.taskId]);
        expect(await store.get(record.taskId, { ownerKey: ALICE })).toBeUndefined();
        expect(await store.getUnscoped(record.taskId)).toBeUndefined();
      });
    });

    describe('transition', () => {
      it('goes working ⇄ input_required → completed, storing the outcome verbatim with a {from, to} event', async () => {
        const { taskId } = await create();
        const start = await store.lastEventSeq();
        clock.advance(10);
        expect(await store.transition(taskId, { to: 'input_required', releaseLease: true, now: clock.now() })).toMatchObject({
          status: 'input_required',
          lastUpdatedAt: T0 + 10,
        });
        expect(await store.transition(taskId, { to: 'working', now: clock.now() })).toMatchObject({ status: 'working' });
        expect(await store.getOutcome(taskId)).toBeUndefined();
        expect(await complete(taskId)).toMatchObject({ status: 'completed' });
        expect(await store.getOutcome(taskId)).toEqual(RESULT);
        const events = await eventsSince(start);
        expect(events.map((e) => [e.kind, e.status, e.payload])).toEqual([
          ['status', 'input_required', { from: 'working', to: 'input_required' }],
          ['status', 'working', { from: 'input_required', to: 'working' }],
          ['status', 'completed', { from: 'working', to: 'completed' }],
        ]);
      });

      it('stores a JSON-RPC error of a failed task verbatim', async () => {
        const { taskId } = await create();
        expect(await store.transition(taskId, { to: 'failed', outcome: ERROR, now: clock.now() })).toMatchObject({ status: 'failed' });
        expect(await store.getOutcome(taskId)).toEqual(ERROR);
      });

      it('keeps the statusMessage on undefined, clears it on null, replaces it on a string', async () => {
        const { taskId } = await create({ statusMessage: 'start' });
        const to = async (status: TaskStatus, statusMessage?: string | null) =>
          (await store.transition(taskId, { to: status, statusMessage, now: clock.now() }))?.statusMessage;
        expect(await to('input_required')).toBe('start');
        expect(await to('working', null)).toBeNull();
        expect(await to('input_required', 'need input')).toBe('need input');
      });

      it.each(['completed', 'failed', 'cancelled'] as const)('never changes a %s task, even when from lists it', async (terminal) => {
        const { taskId } = await create();
        const final = await moveTo(taskId, terminal);
        const outcome = await store.getOutcome(taskId);
        const start = await store.lastEventSeq();
        for (const to of ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const) {
          const attempt = { to, outcome: to === 'completed' ? RESULT : to === 'failed' ? ERROR : undefined, now: clock.now() };
          expect(await store.transition(taskId, attempt)).toBeUndefined();
          expect(await store.transition(taskId, { ...attempt, from: [terminal] })).toBeUndefined();
        }
        expect(await store.getUnscoped(taskId)).toEqual(final);
        expect(await store.getOutcome(taskId)).toEqual(outcome);
        expect(await store.lastEventSeq()).toBe(start);
      });

      it('applies only when the current status is in from; a missing task answers undefined', async () => {
        const { taskId } = await create();
        expect(await store.transition(taskId, { to: 'cancelled', from: ['input_required'], now: clock.now() })).toBeUndefined();
        expect((await store.getUnscoped(taskId))?.status).toBe('working');
        expect(await store.transition(taskId, { to: 'cancelled', from: ['working'], now: clock.now() })).toMatchObject({ status: 'cancelled' });
        expect(await store.getOutcome(taskId)).toBeUndefined();
        expect(await store.transition(newTaskId(), { to: 'cancelled', now: clock.now() })).toBeUndefined();
      });

      it('with leaseOwner applies only while that instance holds the lease; releaseLease clears it', async () => {
        const { taskId } = await create({ leaseOwner: 'i-a', leaseMs: 30_000 });
        expect(await complete(taskId, { leaseOwner: 'i-b' })).toBeUndefined();
        expect(await store.getOutcome(taskId)).toBeUndefined();
        expect(await complete(taskId, { leaseOwner: 'i-a' })).toMatchObject({ status: 'completed', leaseOwner: null, leaseExpiresAt: null });
      });

      it('lets exactly one of a concurrent cancel and completion win', async () => {
        for (let round = 0; round < 20; round += 1) {
          const { taskId } = await create({ leaseOwner: 'i-a', leaseMs: 30_000 });
          const cancel = store.transition(taskId, { to: 'cancelled', releaseLease: true, now: clock.now() });
          const done = complete(taskId, { leaseOwner: 'i-a' });
          const [cancelled, completed] = round % 2 === 0 ? await Promise.all([cancel, done]) : (await Promise.all([done, cancel])).reverse();
          expect([cancelled, completed].filter((r) => r !== undefined)).toHaveLength(1);
          const final = await store.getUnscoped(taskId);
          expect(final?.status).toBe(cancelled ? 'cancelled' : 'completed');
          expect(await store.getOutcome(taskId)).toEqual(cancelled ? undefined : RESULT);
        }
      });

      it('rejects an outcome that does not fit the target status without writing', async () => {
        const { taskId } = await create();
        await expectStoreError(store.transition(taskId, { to: 'completed', now: clock.now() }), 'invalid');
        await expectStoreError(store.transition(taskId, { to: 'cancelled', outcome: RESULT, now: clock.now() }), 'invalid');
        await expectStoreError(store.transition(taskId, { to: 'failed', now: clock.now() }), 'invalid');
        expect((await store.getUnscoped(taskId))?.status).toBe('working');
      });
    });

    describe('writeStatusMessages', () => {
      it('updates non-terminal tasks with one message event each and ignores terminal or missing ones', async () => {
        const [a, b, c] = await Promise.all([create(), create(), create()]);
        await store.transition(b!.taskId, { to: 'input_required', now: clock.now() });
        await moveTo(c!.taskId, 'cancelled');
        const start = await store.lastEventSeq();
        await store.writeStatusMessages([
          { taskId: a!.taskId, statusMessage: '50%', now: T0 + 5 },
          { taskId: b!.taskId, statusMessage: null, now: T0 + 6 },
          { taskId: c!.taskId, statusMessage: 'late', now: T0 + 7 },
          { taskId: newTaskId(), statusMessage: 'ghost', now: T0 + 8 },
        ]);
        expect(await store.getUnscoped(a!.taskId)).toMatchObject({ status: 'working', statusMessage: '50%', lastUpdatedAt: T0 + 5 });
        expect(await store.getUnscoped(b!.taskId)).toMatchObject({ status: 'input_required', statusMessage: null });
        expect((await store.getUnscoped(c!.taskId))?.statusMessage).toBeNull();
        const events = await eventsSince(start);
        expect(events.map((e) => [e.taskId, e.kind, e.status])).toEqual([
          [a!.taskId, 'message', 'working'],
          [b!.taskId, 'message', 'input_required'],
        ]);
      });
    });

    describe('list', () => {
      it('pages one owner’s tasks of one generation by seq; a row past its expiresAt stays until it is deleted', async () => {
        const mine = [];
        for (let i = 0; i < 5; i += 1) mine.push(await create({ ttlMs: i === 2 ? 500 : 60_000 }));
        await create({ ownerKey: BOB });
        await create({ generation: 'v1', protocolVersion: '2025-11-25' });
        clock.set(T0 + 500);
        const scope = { ownerKey: ALICE, generation: 'v2' as const };
        const ids = (page: readonly { taskId: string }[]) => page.map((t) => t.taskId);
        const first = await store.list(scope, { afterSeq: 0, limit: 2 });
        expect(ids(first)).toEqual([mine[0]!.taskId, mine[1]!.taskId]);
        const second = await store.list(scope, { afterSeq: first[1]!.seq, limit: 2 });
        expect(ids(second)).toEqual([mine[2]!.taskId, mine[3]!.taskId]);
        expect(ids(await store.list(scope, { afterSeq: second[1]!.seq, limit: 2 }))).toEqual([mine[4]!.taskId]);
        expect(await store.expireDue(10)).toEqual([mine[2]!.taskId]);
        expect(ids(await store.list(scope, { afterSeq: first[1]!.seq, limit: 2 }))).toEqual([mine[3]!.taskId, mine[4]!.taskId]);
        expect(await store.list({ ...scope, generation: 'v1' }, { afterSeq: 0, limit: 10 })).toHaveLength(1);
      });

      it('a walk returns every task exactly once while tasks are created during it', async () => {
        const created = [];
        for (let i = 0; i < 5; i += 1) created.push((await create()).taskId);
        const seen: string[] = [];
        let afterSeq = 0;
        for (;;) {
          const page = await store.list({ ownerKey: ALICE, generation: 'v2' }, { afterSeq, limit: 2 });
          if (page.length === 0) break;
          seen.push(...page.map((t) => t.taskId));
          afterSeq = page[page.length - 1]!.seq;
          if (created.length < 9) created.push((await create()).taskId, (await create()).taskId);
        }
        expect(seen).toEqual(created);
      });
    });

    describe('browse', () => {
      it('filters by owner, status, tool, creation time and text across generations, newest first, keyset-paged', async () => {
        const a = await create({ toolName: 'analyze_logs', statusMessage: 'Scanning <script>' });
        clock.set(T0 + 1_000);
        const b = await create({ generation: 'v1', protocolVersion: '2025-11-25' });
        const c = await create({ ownerKey: BOB });
        await complete(b.taskId);
        const ids = (page: readonly { taskId: string }[]) => page.map((t) => t.taskId);
        expect(ids(await store.browse({ ownerKey: ALICE, limit: 10 }))).toEqual([b.taskId, a.taskId]);
        expect(ids(await store.browse({ limit: 10 }))).toEqual([c.taskId, b.taskId, a.taskId]);
        expect(ids(await store.browse({ ownerKey: ALICE, statuses: ['completed'], limit: 10 }))).toEqual([b.taskId]);
        expect(ids(await store.browse({ ownerKey: ALICE, statuses: ['working', 'cancelled'], limit: 10 }))).toEqual([a.taskId]);
        expect(ids(await store.browse({ toolName: 'analyze_logs', limit: 10 }))).toEqual([a.taskId]);
        expect(ids(await store.browse({ createdFrom: T0 + 1_000, limit: 10 }))).toEqual([c.taskId, b.taskId]);
        expect(ids(await store.browse({ createdTo: T0 + 1_000, limit: 10 }))).toEqual([a.taskId]);
        expect(ids(await store.browse({ text: 'SCANNING <scr', limit: 10 }))).toEqual([a.taskId]);
        expect(ids(await store.browse({ text: c.taskId.slice(3, 12), limit: 10 }))).toEqual([c.taskId]);
        expect(ids(await store.browse({ text: '%', limit: 10 }))).toEqual([]);
        const first = await store.browse({ limit: 2 });
        await create();
        expect(ids(await store.browse({ beforeSeq: first[1]!.seq, limit: 2 }))).toEqual([a.taskId]);
      });
    });

    describe('listTaskEvents', () => {
      it('returns one task’s events in commit order, bounded, and nothing for an unknown task', async () => {
        const task = await create();
        await create();
        await complete(task.taskId);
        const events = await store.listTaskEvents(task.taskId, 10);
        expect(events.map((e) => [e.kind, e.status])).toEqual([['created', 'working'], ['status', 'completed']]);
        expect(events.every((e) => e.taskId === task.taskId)).toBe(true);
        expect(await store.listTaskEvents(task.taskId, 1)).toHaveLength(1);
        expect(await store.listTaskEvents(newTaskId(), 10)).toEqual([]);
      });
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
        expect((await store.getUnscoped(lapsed.taskId))).toMatchObject({ leaseOwner: 'i-dead', attempt: 0 });
        expect((await store.getUnscoped(expired.taskId))).toMatchObject({ leaseOwner: null, attempt: 0 });
        expect((await store.getUnscoped(waiting.taskId))).toMatchObject({ status: 'input_required', leaseOwner: null });
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

    describe('steps', () => {
      it('journals each step once: the first write wins', async () => {
        const { taskId } = await create();
        const other = await create();
        expect(await store.getStep(taskId, 'fetch')).toBeUndefined();
        await store.putStep(taskId, 'fetch', { rows: [1, 2] });
        await store.putStep(taskId, 'fetch', { rows: [] });
        expect(await store.getStep(taskId, 'fetch')).toEqual({ value: { rows: [1, 2] } });
        expect(await store.getStep(other.taskId, 'fetch')).toBeUndefined();
        for (const value of [null, false, 0, '', []]) {
          await store.putStep(taskId, `v-${JSON.stringify(value)}`, value);
          expect(await store.getStep(taskId, `v-${JSON.stringify(value)}`)).toEqual({ value });
        }
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
        expect((await eventsSince(before)).map((e) => [e.taskId, e.kind, e.status, e.at, e.payload])).toEqual([[mine.taskId, 'released', 'working', T0 + 500, { leaseOwner: 'i-a' }]]);
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
        expect(await store.releaseUnstarted('i-a', [mine.taskId, again.taskId, theirs.taskId, waiting.taskId, newTaskId()])).toEqual([mine.taskId, again.taskId]);
        expect(await store.releaseUnstarted('i-a', [])).toEqual([]);
        // Only the run that did not start is uncounted: a task with an earlier run keeps that one.
        expect(await store.getUnscoped(mine.taskId)).toMatchObject({ status: 'working', leaseOwner: null, leaseExpiresAt: null, attempt: 0 });
        expect(await store.getUnscoped(again.taskId)).toMatchObject({ leaseOwner: null, leaseExpiresAt: null, attempt: 1 });
        expect(await store.getUnscoped(theirs.taskId)).toMatchObject({ leaseOwner: 'i-b', leaseExpiresAt: T0 + 30_000, attempt: 1 });
        expect((await eventsSince(before)).map((e) => [e.taskId, e.kind, e.status, e.at, e.payload])).toEqual([
          [mine.taskId, 'released', 'working', T0 + 500, { leaseOwner: 'i-a', unstarted: true }],
          [again.taskId, 'released', 'working', T0 + 500, { leaseOwner: 'i-a', unstarted: true }],
        ]);
        // Runnable like a task never claimed: a claim starts it as a new run (counted again), no recovery decision.
        const claimed = await store.claimRunnable('i-c', 30_000, 10);
        expect(claimed.map((t) => [t.taskId, t.attempt, t.leaseOwner])).toEqual([
          [mine.taskId, 1, 'i-c'],
          [again.taskId, 2, 'i-c'],
        ]);
      });
    });

    describe('events', () => {
      it('calls listeners after commit, in commit order, with the seq readEventsAfter reports', async () => {
        const start = await store.lastEventSeq();
        const heard: TaskEvent[] = [];
        const visible: Array<Promise<unknown>> = [];
        const stop = store.onEvent((event) => {
          heard.push(event);
          if (event.kind === 'created') visible.push(store.getUnscoped(event.taskId));
        });
        const tasks = await Promise.all([create(), create(), create()]);
        await complete(tasks[1]!.taskId);
        await store.writeStatusMessages([{ taskId: tasks[0]!.taskId, statusMessage: 'x', now: T0 }]);
        expect(heard).toEqual(await eventsSince(start));
        expect(heard.map((e) => e.seq)).toEqual(Array.from({ length: 5 }, (_, i) => start + 1 + i));
        for (const task of await Promise.all(visible)) expect(task).toBeDefined();
        expect(await store.lastEventSeq()).toBe(start + 5);
        expect((await store.readEventsAfter(start + 1, 2)).map((e) => e.seq)).toEqual([start + 2, start + 3]);
        stop();
        await create();
        expect(heard).toHaveLength(5);
      });
    });

    describeInputRequestContract({ store: () => store, clock: () => clock, t0: T0, create });
    describeQuotaContract({ store: () => store, clock: () => clock, newTask, create, peer: async () => fixture.peer?.() });
    describeLedgerContract({ store: () => store, clock: () => clock, newTask });
    describeKillSwitchContract({ store: () => store });
    describeResultChunkContract({ store: () => store, clock: () => clock, create });
    describeProcessRegistryContract({ store: () => store, clock: () => clock, create });

    describe('sessions', () => {
      const session = (sessionId: string, lastSeenAt = T0) => ({
        sessionId,
        ownerKey: 'owner-a',
        protocolVersion: '2025-11-25',
        initialize: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'c', version: '1' } },
        createdAt: T0,
        lastSeenAt,
      });

      it('keeps a session record verbatim and answers undefined for an unknown id', async () => {
        await store.sessions.putSession(session('s-1'));
        expect(await store.sessions.getSession('s-1')).toEqual(session('s-1'));
        expect(await store.sessions.getSession('s-unknown')).toBeUndefined();
      });

      it('touch moves lastSeenAt forward only', async () => {
        await store.sessions.putSession(session('s-2'));
        await store.sessions.touchSession('s-2', T0 + 5_000);
        await store.sessions.touchSession('s-2', T0 + 1_000);
        expect((await store.sessions.getSession('s-2'))?.lastSeenAt).toBe(T0 + 5_000);
      });

      it('delete ends a session once; pruning takes only sessions idle since before the cutoff', async () => {
        await store.sessions.putSession(session('s-3'));
        expect(await store.sessions.deleteSession('s-3')).toBe(true);
        expect(await store.sessions.deleteSession('s-3')).toBe(false);
        expect(await store.sessions.getSession('s-3')).toBeUndefined();
        await store.sessions.putSession(session('s-old', T0));
        await store.sessions.putSession(session('s-new', T0 + 10_000));
        expect(await store.sessions.deleteIdleSessions(T0 + 1, 100)).toBe(1);
        expect(await store.sessions.getSession('s-old')).toBeUndefined();
        expect(await store.sessions.getSession('s-new')).toBeDefined();
      });
    });

    describe('close', () => {
      it('commits writes still queued before it returns', async () => {
        const pending = create();
        await store.close();
        await expect(pending).resolves.toMatchObject({ status: 'working' });
      });
    });
  });
}
