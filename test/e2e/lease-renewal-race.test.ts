/**
 * Issue 9 §1 (hard gate): a healthy server must never abort its own runs as `lease_lost`. The heartbeat renews the
 * leases of the runs it holds; while that renewal is in flight runs start, settle, get cancelled and leave the
 * queue. Latency is injected into the store's renewal (test/helpers/latent-lease-store.ts) to hold it open exactly
 * across those events, on a real server over real HTTP with a real SQLite file. Observed through HTTP, the log and
 * the store rows only. The negative control installs the pre-issue-9 heartbeat (test helper, never shipped) and
 * shows the same scenario catching its defect.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';

import { redactTaskId } from '../../src/core/logger.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { type CapturedLine, captureLogger } from '../helpers/capture-logger.js';
import { type LatencyMode, type LatentLeaseStore, withLeaseLatency } from '../helpers/latent-lease-store.js';
import { gatedTools, Gates } from '../helpers/official-clients.js';
import { installPreIssue9Heartbeat } from '../helpers/pre-issue-9-heartbeat.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

/** Renewed every 500 ms; long enough that holding one renewal for a few hundred ms never lets a lease lapse. */
const LEASE_MS = 1_500;
const INSTANCE = 'instance-under-test';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(options: { concurrency: number }) {
  const gates = new Gates();
  const logs = captureLogger();
  let latent!: LatentLeaseStore;
  const running = await startTasksServer({
    tools: gatedTools(gates),
    limits: { leaseMs: LEASE_MS, concurrency: options.concurrency },
    logger: logs.logger,
    instanceId: INSTANCE,
    wrapStore: (store) => (latent = withLeaseLatency(store)),
  });
  cleanups.push(() => running.close());
  return { running, gates, logs, latent };
}

async function hold(running: RunningTasksServer, key: string): Promise<string> {
  const created = await postModern(running.url, 'tools/call', { name: 'gated', arguments: { gate: key } });
  const taskId = created.body.result?.taskId;
  if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
  return taskId;
}

/** Keys of the tasks whose runs the server aborted as `lease_lost` (log lines carry redacted ids). */
function leaseLostKeys(lines: readonly CapturedLine[], ids: Readonly<Record<string, string>>): string[] {
  const byRedacted = new Map(Object.entries(ids).map(([key, id]) => [redactTaskId(id), key]));
  return lines.filter((line) => line.fields.reason === 'lease_lost').map((line) => byRedacted.get(String(line.fields.taskId)) ?? '?');
}

/**
 * Three slots: `a`, `a2` and `d` run and `c` waits for a slot (unleased: a queued task holds no lease) when a
 * renewal starts. While it is held: `a` settles (its slot goes to `c`, claimed and started), `d` is cancelled, and
 * `b` is created and starts — so the renewal answers for a snapshot in which neither `b` nor `c` ran. Then
 * everything is let go and must end as asked.
 */
async function renewalScenario(mode: LatencyMode, options: { preIssue9Heartbeat?: boolean } = {}) {
  const { running, gates, logs, latent } = await start({ concurrency: 3 });
  if (options.preIssue9Heartbeat) installPreIssue9Heartbeat(running.server.worker!);
  const ids: Record<string, string> = {};
  for (const key of ['a', 'a2', 'd']) ids[key] = await hold(running, key);
  await Promise.all(['a', 'a2', 'd'].map((key) => gates.started(key)));
  ids.c = await hold(running, 'c');

  const renewal = latent.holdNextRenewal(mode);
  const snapshot = await renewal.started;
  expect([...snapshot].sort()).toEqual([ids.a, ids.a2, ids.d].sort());

  gates.open('a');
  await pollModernTask(running.url, ids.a!);
  await gates.started('c');
  expect((await postModern(running.url, 'tasks/cancel', { taskId: ids.d! })).body.error).toBeUndefined();
  expect((await postModern(running.url, 'tasks/get', { taskId: ids.d! })).body.result).toMatchObject({ status: 'cancelled' });
  ids.b = await hold(running, 'b');
  await gates.started('b');

  renewal.release();
  await renewal.answered;
  // A new renewal starts only after the held heartbeat has judged every run (twice: also past a judgement that reads rows).
  await latent.nextRenewal();
  await latent.nextRenewal();

  const leaseLost = leaseLostKeys(logs.lines, ids);
  const bAfterHeartbeat = (await postModern(running.url, 'tasks/get', { taskId: ids.b })).body.result?.status;
  if (options.preIssue9Heartbeat) return { leaseLost, bAfterHeartbeat, statuses: {}, attempts: {}, logs: logs.lines };
  for (const key of ['a2', 'b', 'c']) gates.open(key);
  const statuses: Record<string, unknown> = {};
  const attempts: Record<string, unknown> = {};
  for (const [key, taskId] of Object.entries(ids)) {
    statuses[key] = (await pollModernTask(running.url, taskId, { timeoutMs: 10_000 })).status;
    attempts[key] = (await running.store.getUnscoped(taskId))?.attempt;
  }
  return { leaseLost, bAfterHeartbeat, statuses, attempts, logs: logs.lines };
}

describe('issue 9: a healthy server never aborts its own runs as lease_lost', () => {
  for (const mode of ['before-write', 'after-write'] as const) {
    it(`runs that start, settle, leave the queue or are cancelled during a slow renewal (${mode}) are never aborted as lease_lost`, async () => {
      const { leaseLost, bAfterHeartbeat, statuses, attempts, logs } = await renewalScenario(mode);
      expect(leaseLost).toEqual([]);
      expect(bAfterHeartbeat).toBe('working');
      expect(logs.filter((line) => line.message === 'tool run aborted; its outcome is discarded').map((line) => line.fields.reason)).toEqual(['cancelled']);
      expect(statuses).toEqual({ a: 'completed', a2: 'completed', b: 'completed', c: 'completed', d: 'cancelled' });
      // Every task ran once: nothing was aborted and re-run by recovery.
      expect(attempts).toEqual({ a: 1, a2: 1, b: 1, c: 1, d: 1 });
    });

    it(`negative control: the pre-issue-9 heartbeat fails the same scenario (${mode}) by aborting the runs launched during the renewal`, async () => {
      const { leaseLost, bAfterHeartbeat } = await renewalScenario(mode, { preIssue9Heartbeat: true });
      expect([...leaseLost].sort()).toEqual(['b', 'c']);
      // Its run is gone but the row still carries this process's lease: the task sits `working` until the lease lapses.
      expect(bAfterHeartbeat).toBe('working');
    });
  }

  it('a run whose lease another owner really holds is aborted as lease_lost, and the other owner keeps the row', async () => {
    const { running, gates, logs, latent } = await start({ concurrency: 2 });
    const taskId = await hold(running, 'x');
    await gates.started('x');
    // Another process takes the lease over (as its recovery would after a stall): a second store on the same file.
    // Its clock runs ahead by ten leases, so this process's lease has lapsed in its eyes.
    const other = openSqliteTaskStore({ path: running.dbPath, clock: { now: () => Date.now() + 10 * LEASE_MS } });
    cleanups.push(() => other.close());
    const claimed = await other.claimLapsed('other-instance', 60_000, 10);
    expect(claimed.map((task) => task.taskId)).toEqual([taskId]);
    await latent.nextRenewal();
    await expect.poll(() => logs.lines.filter((line) => line.fields.reason === 'lease_lost').length, { timeout: 5_000 }).toBe(1);
    expect(logs.lines.find((line) => line.level === 'warn')?.fields).toMatchObject({ leaseOwner: 'other-instance' });
    const row = await other.getUnscoped(taskId);
    expect(row).toMatchObject({ status: 'working', leaseOwner: 'other-instance', attempt: 1 });
    gates.open('x');
  });

  it('a lease that lapsed while the event loop was blocked, with no other owner, is kept (recovery first or heartbeat first): the non-idempotent run completes once', async () => {
    const { running, gates, logs } = await start({ concurrency: 2 });
    const taskId = await hold(running, 'y');
    await gates.started('y');
    // Block this process (server and all) past the lease; nobody else exists to take the task.
    const until = Date.now() + LEASE_MS + 300;
    while (Date.now() < until) {
      // busy: no timer, no heartbeat, no I/O
    }
    const db = new Database(running.dbPath, { readonly: true });
    const lapsed = db.prepare('SELECT lease_owner, lease_expires_at FROM tasks WHERE task_id = ?').get(taskId) as {
      lease_owner: string;
      lease_expires_at: number;
    };
    db.close();
    expect(lapsed.lease_owner).toBe(INSTANCE);
    expect(lapsed.lease_expires_at).toBeLessThanOrEqual(Date.now());
    // Which timer fires first after a stall is up to the event loop; run recovery before any heartbeat could renew:
    // it takes the lapsed lease (this process is its owner anyway) and must leave the run alone — the tool is not
    // idempotent, so treating it as a dead process's task would fail it as `interrupted` and discard its outcome.
    await running.server.worker!.recover();
    // Let heartbeat and recovery run on the lease as well, then finish the run.
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS));
    gates.open('y');
    expect((await pollModernTask(running.url, taskId)).status).toBe('completed');
    expect(logs.lines.filter((line) => line.fields.reason !== undefined)).toEqual([]);
    expect((await running.store.getUnscoped(taskId))?.attempt).toBe(1);
  });
});
