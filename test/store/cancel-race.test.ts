import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { JsonObject } from '../../src/core/task.js';
import { openSqliteTaskStore, type SqliteTaskStore } from '../../src/store/sqlite/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { compileSqliteStoreForWorkers } from './helpers/compiled-store.js';
import { type GatedCommand, GatedWorkers } from './helpers/gated-workers.js';

/*
 * Acceptance race: a requestor's cancel and the runner's completion of the same task, issued by two
 * "processes" (worker threads, each with its own store and connection) on one SQLite file and released
 * together by an Atomics barrier. Workers run outside vitest's transform, so they drive the store compiled
 * on the fly from src/ (see helpers/compiled-store.ts: independent of `dist/` and of other folders' builds).
 *
 * Each side is released first in half of the rounds; the other side waits until it started plus a delay
 * cycling through 0 / 0.1 / 0.5 / 2 ms, so the rounds cover true overlap as well as both clear orderings.
 */

const ROUNDS = 200;
const CONTROL_ROUNDS = 40;
const RUNNER = 'i-runner';
const DELAYS_MS = [0, 0.1, 0.5, 2];

type Side = 'cancel' | 'complete';

interface RoundReport {
  round: number;
  winner: Side | 'none' | 'both';
  violations: string[];
}

const temp = makeTempDir();
let compiled: ReturnType<typeof compileSqliteStoreForWorkers>;
beforeAll(() => {
  compiled = compileSqliteStoreForWorkers();
});
afterAll(() => {
  compiled.remove();
  temp.remove();
});

/**
 * Play `rounds` races on a fresh file and check the invariants of every round:
 * - exactly one of cancel and completion succeeded;
 * - a successful cancel leaves `cancelled` and no outcome; a successful completion leaves `completed` with its
 *   outcome;
 * - terminal states never change afterwards: repeating both writes changes nothing, and at the end every task
 *   still has the state recorded right after its round.
 * @param cancelOp `cancel` (the store) or `brokenCancel` (the negative control's unconditional update).
 */
async function playRounds(file: string, rounds: number, cancelOp: 'cancel' | 'brokenCancel'): Promise<RoundReport[]> {
  const path = join(temp.dir, file);
  const main = openSqliteTaskStore({ path });
  const workers = new GatedWorkers(2, compiled.moduleUrl);
  const reports: RoundReport[] = [];
  const settled = new Map<string, { status: string | undefined; outcome: unknown }>();
  try {
    await workers.run([
      { op: 'attach', args: { path } },
      { op: 'attach', args: { path } },
    ]);
    for (let round = 0; round < rounds; round += 1) {
      const { taskId } = await main.create(newTaskInput({ toolName: 'race', arguments: { round }, leaseOwner: RUNNER, leaseMs: 60_000 }));
      const result: JsonObject = { content: [{ type: 'text', text: `round ${round}` }], isError: false };
      const cancelFirst = round % 2 === 0;
      const delayMs = DELAYS_MS[Math.floor(round / 2) % DELAYS_MS.length];
      const cancel: GatedCommand = { op: cancelOp, args: { path, taskId }, role: cancelFirst ? 'first' : 'second', delayMs };
      const complete: GatedCommand = {
        op: 'complete',
        args: { taskId, leaseOwner: RUNNER, result },
        role: cancelFirst ? 'second' : 'first',
        delayMs,
      };
      const [cancelStatus, completeStatus] = await workers.run([cancel, complete]);
      const report = await checkRound(main, round, taskId, cancelStatus === 'cancelled', completeStatus === 'completed', result);
      reports.push(report);
      settled.set(taskId, { status: (await main.getUnscoped(taskId))?.status, outcome: await main.getOutcome(taskId) });
    }
    for (const [taskId, before] of settled) {
      const after = { status: (await main.getUnscoped(taskId))?.status, outcome: await main.getOutcome(taskId) };
      if (!isDeepStrictEqual(after, before)) reports.push({ round: -1, winner: 'none', violations: ['changed after its round'] });
    }
    await workers.run([{ op: 'close' }, { op: 'close' }]);
  } finally {
    await workers.terminate();
    await main.close();
  }
  return reports;
}

async function checkRound(
  store: SqliteTaskStore,
  round: number,
  taskId: string,
  cancelled: boolean,
  completed: boolean,
  result: JsonObject,
): Promise<RoundReport> {
  const violations: string[] = [];
  const winner = cancelled && completed ? 'both' : cancelled ? 'cancel' : completed ? 'complete' : 'none';
  if (winner === 'both' || winner === 'none') violations.push(`winner: ${winner}`);
  const final = await store.getUnscoped(taskId);
  const outcome = await store.getOutcome(taskId);
  if (cancelled && (final?.status !== 'cancelled' || outcome !== undefined)) {
    violations.push(`cancel succeeded but task is ${final?.status} with outcome ${JSON.stringify(outcome)}`);
  }
  if (completed && (final?.status !== 'completed' || !isDeepStrictEqual(outcome, { kind: 'result', result }))) {
    violations.push(`completion succeeded but task is ${final?.status}`);
  }
  // Terminal means final: neither write applies a second time, from this (third) connection.
  const again = [
    await store.transition(taskId, { to: 'cancelled', releaseLease: true, now: Date.now() }),
    await store.transition(taskId, { to: 'completed', outcome: { kind: 'result', result }, now: Date.now() }),
  ];
  if (again.some((record) => record !== undefined)) violations.push('a terminal task changed again');
  return { round, winner, violations };
}

describe('cancel vs completion across processes', () => {
  it(`settles every one of ${ROUNDS} rounds with exactly one winner and a final terminal state`, async () => {
    const reports = await playRounds('race.db', ROUNDS, 'cancel');
    expect(reports.filter((r) => r.violations.length > 0)).toEqual([]);
    // The harness must really exercise both outcomes, or the invariants above would be checked on half a race.
    const wins = { cancel: 0, complete: 0 };
    for (const { winner } of reports) if (winner === 'cancel' || winner === 'complete') wins[winner] += 1;
    expect(wins.cancel).toBeGreaterThan(0);
    expect(wins.complete).toBeGreaterThan(0);
  }, 120_000);

  it('negative control: an unconditional cancel update is caught by the same invariants', async () => {
    const reports = await playRounds('control.db', CONTROL_ROUNDS, 'brokenCancel');
    expect(reports.filter((r) => r.violations.length > 0).length).toBeGreaterThan(0);
  }, 120_000);
});
