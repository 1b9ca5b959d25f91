/**
 * Issue 11 item 6 / acceptance 4: the process registry and fast takeover, with real `mcp-tasks serve` and `worker`
 * processes on one SQLite file and on one PostgreSQL database, observed through the store's rows and events and
 * the tool's own run log.
 * - kill -9 of a `serve` with a running task, restarted under the same instance id (the default: host + port): the
 *   task runs again within 2 s of the restart, far inside its 15 s lease;
 * - negative control: restarted under another id, nothing happens until the dead process's heartbeat lapses —
 *   then its leases go at once (still well inside the lease);
 * - two live processes with one id: the second exits 1 with one line; a worker whose settings digest differs from
 *   the API's refuses to start the same way.
 */
import { writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { cliRunner } from '../cli/support.js';
import { eventually, runNotes } from '../helpers/run-notes.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { sharedStore } from '../helpers/shared-store.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/worker-tools.mjs');
/** The default lease: a takeover within seconds cannot be a lapsed lease. */
const LEASE_MS = 15_000;
/** One server secret for every process of a test (hex, 32 bytes). */
const SECRET = 'ab'.repeat(32);
/**
 * Interval of the waits for an attempt event: each look reads every event of the store, and the bounds compare the
 * attempt's database time, not when the test saw it. At the helper's 10 ms the SQLite half of this file read the
 * event table 223 times, at 100 ms 11 times.
 */
const ATTEMPT_POLL_MS = 100;

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`process registry and fast takeover on ${backend}`, () => {
    const temp = makeTempDir();
    const { start } = cliRunner(process.env);
    const fixture = sharedStore<ServerProcess>(backend, temp);
    const { processes } = fixture;

    // A test that fails before it writes its run's release file leaves the run going: a 5 s drain keeps the stop of
    // its processes inside the hook's 30 s (stop 41's CI: one failure, then a hook timeout failing the next test too).
    const shared = () => ['--store', fixture.storeArg, '--no-builtins', '--tools', TOOLS, '--lease-ms', String(LEASE_MS), '--drain-ms', '5000'];
    const serve = async (name: string, extra: string[], port?: number) => {
      // Each process has its own data dir on one store, so they share the secret through the environment (issue 11 item 5).
      const server = await startServerProcess(join(temp.dir, name), [...shared(), ...extra], { MCP_TASKS_SECRET: SECRET }, port);
      processes.push(server);
      return server;
    };
    const kill9 = async (server: ServerProcess) => {
      await server.kill9();
      processes.splice(processes.indexOf(server), 1);
    };
    const call = async (url: string, log: string) => {
      const created = await postModern(url, 'tools/call', { name: 'role_job', arguments: { log } });
      const taskId = created.body.result?.taskId;
      if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(created.body)}`);
      return taskId;
    };
    const attempts = async (taskId: string) => (await fixture.observer.readEventsAfter(0, 10_000)).filter((e) => e.taskId === taskId && e.kind === 'attempt');

    it('kill -9 of serve mid-run, restarted under the same (default) instance id: the task runs again within 2 s, not a lease later', async () => {
      const first = await serve(`${backend}-same-1`, []);
      const port = Number(new URL(first.url).port);
      const log = join(temp.dir, `${backend}-same.log`);
      const taskId = await call(first.url, log);
      await eventually('the run to start', () => runNotes(log).find((n) => n.event === 'start'));
      const leaseOwner = (await fixture.observer.getUnscoped(taskId))?.leaseOwner;
      expect(leaseOwner).toMatch(new RegExp(`:serve:${port}$`));
      expect((await fixture.observer.listProcesses()).find((p) => p.instanceId === leaseOwner)).toMatchObject({
        role: 'serve',
        pid: first.child.pid,
        live: true,
      });
      await kill9(first);
      const second = await serve(`${backend}-same-2`, [], port);
      const restartedAt = Date.now();
      const rerun = await eventually('the second run', async () => (await attempts(taskId)).find((e) => e.payload?.attempt === 2), 5_000, ATTEMPT_POLL_MS);
      expect(rerun.payload?.leaseOwner).toBe(leaseOwner);
      // Database time of the second attempt against this host's time of the restart: generous, and far inside the lease.
      expect(rerun.at - restartedAt).toBeLessThan(2_000);
      expect(second.log()).toContain('took over 1 task of its previous process');
      const released = (await fixture.observer.readEventsAfter(0, 10_000)).filter((e) => e.taskId === taskId && e.kind === 'released');
      expect(released.map((e) => e.payload?.leaseOwner)).toEqual([leaseOwner]);
      writeFileSync(`${log}.release`, '');
      expect((await pollModernTask(second.url, taskId)).status).toBe('completed');
      expect(runNotes(log).map((n) => [n.event, n.pid])).toEqual([
        ['start', first.child.pid],
        ['start', second.child.pid],
        ['done', second.child.pid],
      ]);
    });

    it('negative control: restarted under another id, the task waits for the dead heartbeat to lapse, then its leases go at once', async () => {
      // A 2 s heartbeat lapses 6 s after the last beat: the new process cannot take over in its first 2 s.
      const first = await serve(`${backend}-other-1`, ['--instance-id', `${backend}-old`, '--heartbeat-ms', '2000']);
      const log = join(temp.dir, `${backend}-other.log`);
      const taskId = await call(first.url, log);
      await eventually('the run to start', () => runNotes(log).find((n) => n.event === 'start'));
      await kill9(first);
      const killedAt = Date.now();
      const second = await serve(`${backend}-other-2`, ['--instance-id', `${backend}-new`]);
      const startedAt = Date.now();
      await new Promise((r) => setTimeout(r, Math.max(0, 2_000 - (Date.now() - startedAt))));
      const lastBeat = (await fixture.observer.listProcesses()).find((p) => p.instanceId === `${backend}-old`);
      if (lastBeat && lastBeat.live) expect(await attempts(taskId)).toHaveLength(1);
      const rerun = await eventually(
        'the takeover after the heartbeat lapsed',
        async () => (await attempts(taskId)).find((e) => e.payload?.attempt === 2),
        LEASE_MS,
        ATTEMPT_POLL_MS,
      );
      expect(rerun.payload?.leaseOwner).toBe(`${backend}-new`);
      expect(rerun.at - killedAt).toBeLessThan(LEASE_MS - 3_000);
      expect((await fixture.observer.listProcesses()).map((p) => p.instanceId)).not.toContain(`${backend}-old`);
      // Waited for: the line is logged asynchronously and may reach the pipe after the takeover is in the store.
      await second.logLine('processes stopped heartbeating; their leases were released');
      writeFileSync(`${log}.release`, '');
      expect((await pollModernTask(second.url, taskId)).status).toBe('completed');
    });

    it('a second live process with the same instance id exits 1 with one line', async () => {
      await serve(`${backend}-dup-1`, ['--instance-id', `${backend}-dup`]);
      const run = await start(['serve', '--port', '0', '--data-dir', join(temp.dir, `${backend}-dup-2`), ...shared(), '--instance-id', `${backend}-dup`]).done;
      expect(run.code).toBe(1);
      const lines = run.stderr.trim().split('\n');
      expect(lines.at(-1)).toMatch(new RegExp(`instance id ${backend}-dup is held by a live serve process \\(host \\S+, pid \\d+`));
      expect(run.stderr).not.toMatch(/\n\s+at /);
    });

    it('a worker whose settings digest differs from the API process refuses to start (exit 1, one line naming the field)', async () => {
      await serve(`${backend}-digest-api`, ['--no-worker', '--instance-id', `${backend}-api`]);
      const run = await start([
        'worker',
        '--data-dir',
        join(temp.dir, `${backend}-digest-w`),
        ...shared(),
        '--instance-id',
        `${backend}-w`,
        '--runtime-limit-ms',
        '60000',
      ]).done;
      expect(run.code).toBe(1);
      expect(run.stderr.trim().split('\n').at(-1)).toMatch(
        new RegExp(`settings differ from live api process ${backend}-api in: runLimits \\(its digest roots=[0-9a-f]{8} .*\\); .* this worker does not start`),
      );
      expect(run.stderr).not.toMatch(/\n\s+at /);
      // The same settings start.
      const same = start(['worker', '--data-dir', join(temp.dir, `${backend}-digest-w2`), ...shared(), '--instance-id', `${backend}-w2`]);
      await same.stderrLine(/mcp-tasks: worker \S+ running/);
      same.child.kill('SIGTERM');
      const stopped = await same.done;
      expect(stopped.code, stopped.stderr).toBe(0);
    });

    it('issue 26: --check-target is in the digest, and an API process started after a worker compares too (refused, naming checkTargets)', async () => {
      const worker = start(['worker', '--data-dir', join(temp.dir, `${backend}-ct-w`), ...shared(), '--instance-id', `${backend}-ct-w`]);
      await worker.stderrLine(/mcp-tasks: worker \S+ running/);
      try {
        const api = await start([
          'serve',
          '--port',
          '0',
          '--no-worker',
          '--data-dir',
          join(temp.dir, `${backend}-ct-api`),
          ...shared(),
          '--instance-id',
          `${backend}-ct-api`,
          '--check-target',
          'db.internal:5432',
        ]).done;
        expect(api.code).toBe(1);
        expect(api.stderr.trim().split('\n').at(-1)).toMatch(
          new RegExp(`settings differ from live worker process ${backend}-ct-w in: checkTargets \\(its digest .*\\); .* this api does not start`),
        );
      } finally {
        worker.child.kill('SIGTERM');
        await worker.done;
      }
    });

    it('issue 26: a second worker on this host without --instance-id takes the next slot and runs; a restarted one reclaims the dead slot and releases its leases at once', async () => {
      const base = `${hostname()}:worker`;
      const worker = (name: string) => start(['worker', '--data-dir', join(temp.dir, `${backend}-${name}`), ...shared()]);
      const first = worker('slot-a');
      expect((await first.stderrLine(/mcp-tasks: worker (\S+) running/))[1]).toBe(base);
      const second = worker('slot-b');
      const secondId = (await second.stderrLine(/mcp-tasks: worker (\S+) running/))[1];
      expect(secondId, JSON.stringify(await fixture.observer.listProcesses())).toBe(`${base}:slot2`);
      const api = await serve(`${backend}-slot-api`, ['--no-worker', '--instance-id', `${backend}-slot-api`]);
      const log = join(temp.dir, `${backend}-slots.log`);
      const taskId = await call(api.url, log);
      const leased = await eventually(
        'a worker to lease the task',
        async () => (await fixture.observer.getUnscoped(taskId))?.leaseOwner ?? undefined,
        15_000,
        25,
      );
      const holder = leased === base ? first : second;
      const other = holder === first ? second : first;
      holder.child.kill('SIGKILL');
      await holder.done;
      const killedAt = Date.now();
      // The restart takes the dead slot (not a third one) and its task at once, well before the lease would lapse.
      const restarted = worker('slot-c');
      const restartedId = (await restarted.stderrLine(/mcp-tasks: worker (\S+) running/))[1];
      expect(restartedId, JSON.stringify(await fixture.observer.listProcesses())).toBe(leased);
      const rerun = await eventually(
        'the rerun under the same id',
        async () => (await attempts(taskId)).find((e) => e.payload?.attempt === 2),
        LEASE_MS,
        ATTEMPT_POLL_MS,
      );
      // Released at the restart's registration, the task is claimed at once by a live worker: the restarted one or
      // the other (both wake on the `released` event).
      expect([leased, leased === base ? `${base}:slot2` : base]).toContain(rerun.payload?.leaseOwner);
      expect(rerun.at - killedAt).toBeLessThan(LEASE_MS - 3_000);
      writeFileSync(`${log}.release`, '');
      expect((await pollModernTask(api.url, taskId)).status).toBe('completed');
      for (const running of [other, restarted]) {
        running.child.kill('SIGTERM');
        await running.done;
      }
    });
  });
}
