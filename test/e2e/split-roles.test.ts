/**
 * Issue 11 (roles): `mcp-tasks serve --no-worker` (API only) and `mcp-tasks worker` as separate real processes on
 * one store — one SQLite file, and one PostgreSQL database. Observed only through HTTP, the store's rows and
 * events (read through the store port) and the tool's own side-effect log.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import pg from 'pg';
import { describe, expect, it } from 'vitest';

import { eventually, runNotes } from '../helpers/run-notes.js';
import { type ServerProcess, startServerProcess, startWorkerProcess, type WorkerProcess } from '../helpers/server-process.js';
import { sharedStore } from '../helpers/shared-store.js';
import { RawLegacySession } from '../helpers/sse.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/worker-tools.mjs');
const LEASE_MS = 1_500;

async function openRawClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

const notes = runNotes;
/** Polls every 25 ms. */
const until = <T>(what: string, probe: () => T | Promise<T>, timeoutMs = 15_000) => eventually(what, probe, timeoutMs, 25);

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`split roles on ${backend}: serve --no-worker + mcp-tasks worker`, () => {
    const temp = makeTempDir();
    const fixture = sharedStore<ServerProcess | WorkerProcess>(backend, temp);
    const { processes } = fixture;

    const common = ['--store', '', '--no-builtins', '--tools', TOOLS, '--lease-ms', String(LEASE_MS)];
    const shared = () => common.map((arg, i) => (i === 1 ? fixture.storeArg : arg));
    // Where a test needs an API process and a worker from the start, they start side by side (the store's schema is
    // made by the observer before the tests).
    const api = async (extra: string[] = []) => {
      const server = await startServerProcess(join(temp.dir, 'api'), ['--no-worker', '--instance-id', 'api-1', ...shared(), ...extra]);
      processes.push(server);
      return server;
    };
    const worker = async (id: string, extra: string[] = []) => {
      const started = await startWorkerProcess(['--data-dir', join(temp.dir, id), ...shared(), '--instance-id', id, '--log-level', 'info', ...extra]);
      processes.push(started);
      return started;
    };
    const call = async (url: string, args: Record<string, unknown>) => {
      const created = await postModern(url, 'tools/call', { name: 'role_job', arguments: args });
      const taskId = created.body.result?.taskId;
      if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
      return taskId;
    };
    /** Every lease owner the store ever recorded for the task: from its rows over time and its attempt events. */
    const leaseOwnersOf = async (taskId: string): Promise<string[]> =>
      (await fixture.observer.readEventsAfter(0, 10_000)).filter((e) => e.taskId === taskId && e.kind === 'attempt').map((e) => String(e.payload?.leaseOwner));

    it('a task created on the API process runs and completes on the worker; the API process never holds a lease', async () => {
      const server = await api();
      const log = join(temp.dir, 'complete.log');
      const taskId = await call(server.url, { log, ms: 300 });
      // Nobody runs it yet: the API-only server leaves it unleased and says so.
      expect(await fixture.observer.getUnscoped(taskId)).toMatchObject({ status: 'working', statusMessage: 'queued', leaseOwner: null, attempt: 0 });
      const w1 = await worker('worker-1');
      // A worker that starts finds the unleased task by its recovery pass (leased first, run counted a moment later).
      const running = await until('the worker to lease and start the task', async () => {
        const row = await fixture.observer.getUnscoped(taskId);
        return row?.leaseOwner && row.attempt > 0 ? row : undefined;
      });
      expect(running).toMatchObject({ leaseOwner: 'worker-1', attempt: 1 });
      const done = await pollModernTask(server.url, taskId);
      expect(done.status).toBe('completed');
      expect(JSON.stringify(done.result)).toContain(`done in ${w1.child.pid}`);
      expect(notes(log).map((n) => [n.event, n.pid])).toEqual([
        ['start', w1.child.pid],
        ['done', w1.child.pid],
      ]);
      expect(await leaseOwnersOf(taskId)).toEqual(['worker-1']);
      // The API process's id appears in no event and no row, ever.
      expect(JSON.stringify(await fixture.observer.readEventsAfter(0, 10_000))).not.toContain('api-1');
      expect(JSON.stringify(await fixture.observer.getUnscoped(taskId))).not.toContain('api-1');
    });

    it('v1 round trips under load, each answered: a blocking tasks/result of a task created here starts from the created record (issue 25), even when the worker ended it before this process saw its own create answered', async () => {
      const server = await api();
      await worker('worker-1', ['--concurrency', '32']);
      const log = join(temp.dir, 'round-trips.log');
      const rounds = async (): Promise<number> => {
        const session = await RawLegacySession.open(server.url, { capabilities: { tasks: {} } });
        let answered = 0;
        for (let i = 0; i < 12; i += 1) {
          const created = await session.request('tools/call', { name: 'role_job', arguments: { log, ms: 0 }, task: {} });
          const taskId = (created.body.result?.task as { taskId: string }).taskId;
          const result = await Promise.race([
            session.request('tasks/result', { taskId }),
            new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`tasks/result of ${taskId} not answered in 20 s`)), 20_000)),
          ]);
          expect(JSON.stringify(result.messages.at(-1))).toContain('done in');
          answered += 1;
        }
        return answered;
      };
      // Before the fix, a create whose events the feed delivered (with the task's end) before the create settled left
      // a stale record, and its tasks/result waited forever: the P7 benchmark hung at once with 16 clients.
      expect(await Promise.all(Array.from({ length: 16 }, rounds))).toEqual(Array.from({ length: 16 }, () => 12));
    }, 120_000);

    it('cancel on the API process reaches the tool running in the worker within a second', async () => {
      const [server] = await Promise.all([api(), worker('worker-2')]);
      const log = join(temp.dir, 'cancel.log');
      const taskId = await call(server.url, { log });
      await until('the run to start', () => notes(log).find((n) => n.event === 'start'));
      const sentAt = Date.now();
      expect((await postModern(server.url, 'tasks/cancel', { taskId })).body.result).toBeDefined();
      const abort = await until('the abort in the worker', () => notes(log).find((n) => n.event === 'abort'), 5_000);
      expect(abort.reason).toBe('cancelled');
      expect(abort.at - sentAt).toBeLessThan(1_000);
      expect((await postModern(server.url, 'tasks/get', { taskId })).body.result).toMatchObject({ status: 'cancelled' });
    });

    it('kill -9 of the worker mid-run: a restarted worker recovers the task and completes it', async () => {
      const [server, first] = await Promise.all([api(), worker('worker-3')]);
      const log = join(temp.dir, 'kill.log');
      const taskId = await call(server.url, { log });
      await until('the run to start', () => notes(log).find((n) => n.event === 'start'));
      await first.kill9();
      processes.splice(processes.indexOf(first), 1);
      writeFileSync(`${log}.release`, '');
      const second = await worker('worker-3');
      const done = await pollModernTask(server.url, taskId, { timeoutMs: 20_000 });
      expect(done.status).toBe('completed');
      expect(notes(log).map((n) => [n.event, n.pid])).toEqual([
        ['start', first.child.pid],
        ['start', second.child.pid],
        ['done', second.child.pid],
      ]);
      expect((await fixture.observer.getUnscoped(taskId))?.attempt).toBe(2);
    });

    it('SIGTERM drains: a run shorter than --drain-ms completes; a longer one is aborted with shutdown, released and recovered at once by another worker', async () => {
      // A long lease and recovery interval: only the released event can explain a quick takeover. The API process
      // has the same settings as its workers (a worker with another settings digest refuses to start).
      const slowLease = ['--lease-ms', '60000'];
      const [server, draining] = await Promise.all([api(slowLease), worker('worker-4', [...slowLease, '--drain-ms', '1500'])]);
      const shortLog = join(temp.dir, 'drain-short.log');
      const longLog = join(temp.dir, 'drain-long.log');
      const short = await call(server.url, { log: shortLog, ms: 800 });
      const long = await call(server.url, { log: longLog });
      await until('both runs to start', () => notes(shortLog).length > 0 && notes(longLog).length > 0);
      const other = await worker('worker-5', slowLease);
      const stoppedAt = Date.now();
      expect(await draining.stop('SIGTERM')).toBe(0);
      const exitedAfter = Date.now() - stoppedAt;
      expect(exitedAfter).toBeGreaterThanOrEqual(1_400);
      expect(exitedAfter).toBeLessThan(10_000);
      // The short run finished inside the drain, once, on the draining worker.
      expect(await fixture.observer.getUnscoped(short)).toMatchObject({ status: 'completed', attempt: 1 });
      expect(notes(shortLog).map((n) => [n.event, n.pid])).toEqual([
        ['start', draining.child.pid],
        ['done', draining.child.pid],
      ]);
      // The long one was aborted with reason shutdown and its lease given back with a released event…
      expect(
        notes(longLog)
          .slice(0, 2)
          .map((n) => [n.event, n.pid, n.reason]),
      ).toEqual([
        ['start', draining.child.pid, undefined],
        ['abort', draining.child.pid, 'shutdown'],
      ]);
      const events = (await fixture.observer.readEventsAfter(0, 10_000)).filter((e) => e.taskId === long);
      expect(events.some((e) => e.kind === 'released' && e.payload?.leaseOwner === 'worker-4')).toBe(true);
      // …and the other worker took it over at once: seconds, not its 60 s lease.
      const restarted = await until(
        'the other worker to start the long task',
        () => notes(longLog).find((n) => n.event === 'start' && n.pid === other.child.pid),
        5_000,
      );
      expect(restarted.at - stoppedAt).toBeLessThan(5_000);
      writeFileSync(`${longLog}.release`, '');
      expect((await pollModernTask(server.url, long)).status).toBe('completed');
      expect(await leaseOwnersOf(long)).toEqual(['worker-4', 'worker-5']);
      expect(draining.log()).toMatch(/"reason":"shutdown".*tool run aborted; its outcome is discarded/);
    });

    if (backend === 'postgres')
      it('pg_terminate_backend of every LISTEN connection loses no pick-up and no cancel (reconnect + poll fallback)', async () => {
        const [server] = await Promise.all([api(), worker('worker-6')]);
        const admin = await openRawClient(fixture.storeArg);
        try {
          const listeners = async () =>
            (
              await admin.query<{ pid: number }>(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'mcp-tasks-listen'",
              )
            ).rows.map((r) => r.pid);
          // The API process and the worker each keep one LISTEN connection.
          const before = await until('both LISTEN connections', async () => ((await listeners()).length === 2 ? listeners() : undefined));
          await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [before]);
          const log = join(temp.dir, 'listen-drop.log');
          const taskId = await call(server.url, { log });
          await until('the worker to pick the task up', () => notes(log).find((n) => n.event === 'start'), 5_000);
          await admin.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'mcp-tasks-listen'",
          );
          expect((await postModern(server.url, 'tasks/cancel', { taskId })).body.result).toBeDefined();
          const abort = await until('the abort in the worker', () => notes(log).find((n) => n.event === 'abort'), 5_000);
          expect(abort.reason).toBe('cancelled');
          // Both came back on new connections.
          const after = await until('the LISTEN connections to come back', async () => {
            const pids = await listeners();
            return pids.length === 2 && pids.every((pid) => !before.includes(pid)) ? pids : undefined;
          });
          expect(after).toHaveLength(2);
        } finally {
          await admin.end();
        }
      });
  });
}
