import { expect } from 'vitest';

import type { Clock } from '../../core/clock.js';
import { newTaskId } from '../../core/ids.js';
import type { TaskEvent, TaskStore } from '../../core/store.js';
import { StoreError, type StoreErrorCode } from '../../core/store-error.js';
import type { NewTask, TaskOutcome, TaskRecord, TaskStatus } from '../../core/task.js';
import type { FakeClock } from '../fake-clock.js';

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

/** Epoch ms every task of the suite is created at (the fake clock's start). */
export const T0 = Date.UTC(2026, 0, 1);
export const ALICE = 'https://issuer.example|alice|acme';
export const BOB = 'https://issuer.example|bob|acme';
export const RESULT: TaskOutcome = {
  kind: 'result',
  result: {
    content: [{ type: 'text', text: 'héllo ✓ "quoted"\n' }],
    structuredContent: { n: 1.5, big: 2 ** 53 - 1, nested: [null, true, {}] },
    isError: false,
  },
};
export const ERROR: TaskOutcome = { kind: 'error', error: { code: -32603, message: 'boom', data: { reason: 'interrupted', at: [1, 2] } } };

/**
 * What every port's part of the contract (`testing/store-contract/<port>.ts`) gets from the runner: the store and
 * clock of the running test (getters: both are made anew before each test) and the helpers the parts share.
 */
export interface StoreContractContext {
  /** The store of the running test. */
  store(): TaskStore;
  /** The store's clock in the running test (starts at {@link T0}). */
  clock(): FakeClock;
  /** A second store on the same database, when the fixture offers one. */
  peer(): Promise<TaskStore | undefined>;
  /** Epoch ms every task of the suite is created at. */
  t0: number;
  /** A new task of {@link ALICE} (v2, working, 60 s TTL) at the clock's now, `overrides` applied. */
  newTask(overrides?: Partial<NewTask>): NewTask;
  /** Create {@link newTask}`(overrides)`. */
  create(overrides?: Partial<NewTask>): Promise<TaskRecord>;
  /** Every event after `seq`. */
  eventsSince(seq: number): Promise<TaskEvent[]>;
  /** Complete a task with {@link RESULT}, releasing its lease (`extra` overrides the request). */
  complete(taskId: string, extra?: Partial<Parameters<TaskStore['transition']>[1]>): Promise<TaskRecord | undefined>;
  /** Reach `status` from `working` through an allowed path. */
  moveTo(taskId: string, status: TaskStatus): Promise<TaskRecord | undefined>;
}

/** The context of the running test over the getters the runner keeps current. */
export function contractContext(current: Pick<StoreContractContext, 'store' | 'clock' | 'peer'>): StoreContractContext {
  const { store, clock } = current;
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
    createdAt: clock().now(),
    ttlMs: 60_000,
    pollIntervalMs: 1_000,
    leaseOwner: null,
    leaseMs: null,
    ...overrides,
  });
  return {
    ...current,
    t0: T0,
    newTask,
    create: (overrides = {}) => store().create(newTask(overrides)),
    eventsSince: async (seq) => store().readEventsAfter(seq, 10_000),
    complete: (taskId, extra = {}) => store().transition(taskId, { to: 'completed', outcome: RESULT, releaseLease: true, now: clock().now(), ...extra }),
    moveTo: async (taskId, status) => {
      const outcome = status === 'completed' ? RESULT : status === 'failed' ? ERROR : undefined;
      return store().transition(taskId, { to: status, outcome, now: clock().now() });
    },
  };
}
