import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { StoreError } from '../../src/core/store-error.js';
import { openPostgresTaskStore, type PostgresTaskStore } from '../../src/store/postgres/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { type PrivateCluster, startPrivateCluster } from '../helpers/postgres.js';

// A database that goes away: this file runs its own PostgreSQL server (never the shared one) and stops it
// (connections refused) or freezes it with SIGSTOP (connections and queries hang, as behind a partition). Store
// calls must reject with `unavailable` within their timeouts, and work again once the server is back.

const TIMEOUTS = { connectTimeoutMs: 1_000, statementTimeoutMs: 1_000 };
/** Generous: connect timeout + statement timeout + client grace, on a loaded machine. Seconds, not a hang. */
const BOUND_MS = 10_000;

let cluster: PrivateCluster;
let store: PostgresTaskStore;

beforeAll(async () => {
  cluster = startPrivateCluster();
  store = await openPostgresTaskStore({ url: cluster.url, ...TIMEOUTS });
}, 120_000);
afterAll(async () => {
  await store?.close().catch(() => undefined);
  cluster?.destroy();
});

/** Run every kind of call; each must reject as `unavailable` well within {@link BOUND_MS}. */
async function expectUnavailable(taskId: string): Promise<void> {
  const calls: Array<[string, () => Promise<unknown>]> = [
    ['get', () => store.get(taskId, { ownerKey: 'anonymous' })],
    ['create', () => store.create(newTaskInput())],
    ['transition', () => store.transition(taskId, { to: 'cancelled', now: Date.now() })],
    ['claimLapsed', () => store.claimLapsed('i-a', 10_000, 10)],
    ['readEventsAfter', () => store.readEventsAfter(0, 10)],
  ];
  await Promise.all(
    calls.map(async ([name, call]) => {
      const started = Date.now();
      const error: unknown = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, name).toBeInstanceOf(StoreError);
      expect((error as StoreError).code, `${name}: ${(error as Error).message}`).toBe('unavailable');
      expect(Date.now() - started, name).toBeLessThan(BOUND_MS);
    }),
  );
}

/** After an outage, calls work again: the pool replaces dead connections (a first call may still meet one). */
async function expectRecovered(taskId: string): Promise<void> {
  let recovered = false;
  for (let attempt = 0; attempt < 20 && !recovered; attempt += 1) {
    recovered = await store.getUnscoped(taskId).then(
      (record) => record?.taskId === taskId,
      () => false,
    );
    if (!recovered) await new Promise((resolve) => setTimeout(resolve, 250));
  }
  expect(recovered).toBe(true);
  const created = await store.create(newTaskInput());
  expect(await store.getUnscoped(created.taskId)).toMatchObject({ taskId: created.taskId, status: 'working' });
}

describe('a database that goes away', () => {
  it('stopped server: every call rejects as unavailable promptly; after a restart the same store works again', async () => {
    const { taskId } = await store.create(newTaskInput());
    cluster.halt();
    try {
      await expectUnavailable(taskId);
    } finally {
      cluster.resume();
    }
    await expectRecovered(taskId);
  });

  it('frozen server (SIGSTOP, a partition): calls reject as unavailable after the timeouts instead of hanging', async () => {
    const { taskId } = await store.create(newTaskInput());
    cluster.freeze();
    try {
      await expectUnavailable(taskId);
    } finally {
      cluster.thaw();
    }
    await expectRecovered(taskId);
  });

  it('opening against a stopped server fails as unavailable with one line naming the cause', async () => {
    cluster.halt();
    try {
      const started = Date.now();
      const error: unknown = await openPostgresTaskStore({ url: cluster.url, ...TIMEOUTS }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).code).toBe('unavailable');
      expect((error as StoreError).message).toMatch(/^Task store unavailable: cannot connect \(.*ECONNREFUSED.*\)$/);
      expect((error as StoreError).message).not.toContain('\n');
      expect(Date.now() - started).toBeLessThan(BOUND_MS);
    } finally {
      cluster.resume();
    }
  });
});
