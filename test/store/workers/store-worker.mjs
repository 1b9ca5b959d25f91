// A worker thread that plays one process of a multi-process test against one SQLite file.
//
// Plain JS on purpose: workers run outside vitest's transform, so it imports the store compiled by
// test/store/helpers/compiled-store.ts (workerData.storeModule) and better-sqlite3 directly.
//
// Every command goes through the same gate so two workers act at (nearly) the same instant:
//   1. the worker posts `ready` and blocks in Atomics.wait on GO;
//   2. the main thread sets GO once both are ready;
//   3. role `first` raises LEAD and acts at once; role `second` waits for LEAD, then `delayMs`, then acts;
//      role `none` acts at once. Alternating roles and delays lets each side win some rounds.
import { parentPort, workerData } from 'node:worker_threads';

import Database from 'better-sqlite3';

const GO = 0;
const LEAD = 1;
const ctrl = new Int32Array(workerData.ctrl);
const { openSqliteTaskStore } = await import(workerData.storeModule);

let store;
let raw;

/** Sleep without yielding to the event loop, so no queued work of this worker runs in between. */
function pause(ms) {
  if (ms > 0) Atomics.wait(ctrl, 2, 0, ms);
}

const ops = {
  /** Open a store, report what this opener migrated and its pragmas, close it. */
  async open({ path }) {
    const opened = openSqliteTaskStore({ path });
    const report = { applied: [...opened.appliedMigrations], pragmas: opened.pragmas() };
    await opened.close();
    return report;
  },
  async attach({ path }) {
    store = openSqliteTaskStore({ path });
    return null;
  },
  async cancel({ taskId }) {
    const record = await store.transition(taskId, {
      to: 'cancelled',
      statusMessage: 'Cancelled by requestor',
      releaseLease: true,
      now: Date.now(),
    });
    return record?.status ?? null;
  },
  async complete({ taskId, leaseOwner, result }) {
    const record = await store.transition(taskId, {
      to: 'completed',
      outcome: { kind: 'result', result },
      leaseOwner,
      releaseLease: true,
      now: Date.now(),
    });
    return record?.status ?? null;
  },
  /** Answer input requests of a waiting task; reports which keys this process won and the status it left. */
  async answer({ taskId, answers }) {
    const { accepted, task } = await store.answerInput(taskId, { answers, retire: [], add: [], now: Date.now() });
    return { accepted, status: task?.status ?? null };
  },
  /**
   * The deliberately broken writer of the negative control: an UNCONDITIONAL status update, i.e. the bug the
   * store's `WHERE status IN (…)` exists to prevent. It must never be copied into src/.
   */
  async brokenCancel({ path, taskId }) {
    if (raw === undefined) {
      raw = new Database(path);
      raw.pragma('busy_timeout = 5000');
    }
    const row = raw
      .prepare("UPDATE tasks SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL WHERE task_id = ? RETURNING status")
      .get(taskId);
    return row?.status ?? null;
  },
  async close() {
    await store?.close();
    raw?.close();
    return null;
  },
};

parentPort.on('message', async ({ id, op, args, role, delayMs }) => {
  try {
    parentPort.postMessage({ id, type: 'ready' });
    Atomics.wait(ctrl, GO, 0);
    if (role === 'first') {
      Atomics.store(ctrl, LEAD, 1);
      Atomics.notify(ctrl, LEAD);
    } else if (role === 'second') {
      Atomics.wait(ctrl, LEAD, 0);
      pause(delayMs ?? 0);
    }
    parentPort.postMessage({ id, type: 'done', value: await ops[op](args) });
  } catch (error) {
    parentPort.postMessage({ id, type: 'error', message: String(error?.stack ?? error) });
  }
});
