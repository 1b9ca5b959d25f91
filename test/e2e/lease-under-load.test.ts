/**
 * Issue 9 §1 (hard gate), bounded load: one healthy `mcp-tasks serve` process (real SQLite file, real HTTP on
 * loopback) under 32 closed-loop clients for ~10 s — both generations (2025-11-25 sessions with `params.task`,
 * 2026-07-28 requests declaring the Tasks Extension), `noop` and 50 ms tools, each client re-polling `tasks/get`
 * every 10 ms. No other process exists, so no run may be aborted as `lease_lost`, every task must end `completed`
 * within seconds, and no task may be left `working` or run twice. Observed through HTTP, the server's log lines
 * and the store rows. No speed is asserted; the bounds are seconds, not milliseconds.
 */
import { join, resolve } from 'node:path';

import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';

import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { RawLegacySession } from '../helpers/sse.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { postModern } from '../helpers/wire.js';

const BENCH_TOOLS = resolve(import.meta.dirname, '../../bench/tools.mjs');
const CLIENTS = 32;
const WINDOW_MS = 10_000;
/** Re-poll delay of every client (what impatient clients do). */
const POLL_EVERY_MS = 10;
/**
 * Longest any task may take from its creation to the client seeing it terminal: seconds, not milliseconds. 5 s broke
 * once with the whole suite plus an `npm ci` and a 280 MB log scan on 2 cores (no lease was lost); a stuck task would
 * still miss 15 s by far, as it never ends.
 */
const MAX_ROUND_TRIP_MS = 15_000;
/** Lease renewed every 500 ms instead of 5 s: ten times as many renewals in the window, so a race has chances. */
const LEASE_MS = 1_500;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

interface Flow {
  generation: 'v1' | 'v2';
  tool: { name: string; arguments: Record<string, unknown> };
}

interface Finished {
  taskId: string;
  flow: string;
  status: string;
  ms: number;
}

/** One client's requests: create a task and read it, in its generation's wire form. */
async function client(url: string, flow: Flow): Promise<{ create(): Promise<string>; status(taskId: string): Promise<string> }> {
  if (flow.generation === 'v2') {
    return {
      async create() {
        const answer = await postModern(url, 'tools/call', flow.tool);
        const taskId = answer.body.result?.taskId;
        if (answer.body.result?.resultType !== 'task' || typeof taskId !== 'string') throw new Error(`v2 tools/call: ${JSON.stringify(answer.body)}`);
        return taskId;
      },
      async status(taskId) {
        const answer = await postModern(url, 'tasks/get', { taskId });
        if (!answer.body.result) throw new Error(`v2 tasks/get: ${JSON.stringify(answer.body)}`);
        return String(answer.body.result.status);
      },
    };
  }
  const session = await RawLegacySession.open(url);
  return {
    async create() {
      const answer = await session.request('tools/call', { ...flow.tool, task: { ttl: 600_000 } });
      const taskId = (answer.body.result?.task as { taskId?: unknown } | undefined)?.taskId;
      if (typeof taskId !== 'string') throw new Error(`v1 tools/call: ${JSON.stringify(answer.body)}`);
      return taskId;
    },
    async status(taskId) {
      const answer = await session.request('tasks/get', { taskId });
      if (!answer.body.result) throw new Error(`v1 tasks/get: ${JSON.stringify(answer.body)}`);
      return String(answer.body.result.status);
    },
  };
}

describe('issue 9: a single healthy server under load never aborts its own runs', () => {
  const temp = makeTempDir();
  let server: ServerProcess | undefined;
  afterAll(async () => {
    await server?.stop();
    temp.remove();
  });

  it(`${CLIENTS} clients × ${WINDOW_MS / 1000} s, v1 and v2, noop and 50 ms tools: zero lease_lost aborts, every task completed within seconds, none left working`, async () => {
    server = await startServerProcess(temp.dir, ['--no-builtins', '--tools', BENCH_TOOLS, '--lease-ms', String(LEASE_MS), '--log-level', 'info']);
    const url = server.url;
    const flows: Flow[] = [];
    for (const generation of ['v1', 'v2'] as const) {
      for (const tool of [
        { name: 'noop', arguments: {} },
        { name: 'sleep_ms', arguments: { ms: 50 } },
      ])
        flows.push({ generation, tool });
    }
    const finished: Finished[] = [];
    const errors: string[] = [];
    const endAt = Date.now() + WINDOW_MS;
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, index) => {
        const flow = flows[index % flows.length]!;
        const label = `${flow.generation} ${flow.tool.name}`;
        const requests = await client(url, flow);
        while (Date.now() < endAt) {
          try {
            const started = Date.now();
            const taskId = await requests.create();
            let status = await requests.status(taskId);
            while (!TERMINAL.has(status) && Date.now() - started < 2 * MAX_ROUND_TRIP_MS) {
              await new Promise((resolveSleep) => setTimeout(resolveSleep, POLL_EVERY_MS));
              status = await requests.status(taskId);
            }
            finished.push({ taskId, flow: label, status, ms: Date.now() - started });
          } catch (error) {
            errors.push(`${label}: ${error instanceof Error ? error.message : String(error)}`);
            if (errors.length > 20) throw new Error(errors.join('\n'));
          }
        }
      }),
    );

    const log = server.log();
    const lines = log
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const aborted = lines.filter((line) => line.msg === 'tool run aborted; its outcome is discarded' || line.reason === 'lease_lost');
    expect(aborted, 'runs aborted by the server itself').toEqual([]);
    expect(
      lines.filter((line) => Number(line.level) >= 40),
      'warnings or errors in the server log',
    ).toEqual([]);
    expect(errors).toEqual([]);

    // The test must have done real work in every flow (a server that answered nothing would otherwise pass): every
    // client of a flow finished at least one task. How many more is throughput, which a benchmark measures (bench/),
    // not a test: on 2 loaded cores the v1 noop flow finished 13–16 tasks where a quiet machine finishes hundreds.
    for (const flow of flows) {
      const label = `${flow.generation} ${flow.tool.name}`;
      expect(finished.filter((task) => task.flow === label).length, label).toBeGreaterThanOrEqual(CLIENTS / flows.length);
    }
    const notCompleted = finished.filter((task) => task.status !== 'completed');
    expect(notCompleted.slice(0, 5), `${notCompleted.length} tasks not completed`).toEqual([]);
    const slow = finished.filter((task) => task.ms > MAX_ROUND_TRIP_MS);
    expect(slow.slice(0, 5), `${slow.length} tasks took longer than ${MAX_ROUND_TRIP_MS} ms`).toEqual([]);

    // The rows agree: every task is terminal and ran exactly once (a lost run would have been re-run by recovery).
    const db = new Database(join(temp.dir, 'tasks.db'), { readonly: true });
    try {
      const rows = db.prepare('SELECT status, attempt, COUNT(*) AS n FROM tasks GROUP BY status, attempt').all();
      expect(rows).toEqual([{ status: 'completed', attempt: 1, n: finished.length }]);
    } finally {
      db.close();
    }
  }, 60_000);
});
