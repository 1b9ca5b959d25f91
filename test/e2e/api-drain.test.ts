/**
 * SIGTERM on an API-only process (`serve --no-worker`) with a blocked 2025-11-25 `tasks/result` in flight: the drain
 * waits (what is left of `--drain-ms`) for POSTs still being answered, so a request whose task ends on the worker
 * process within the drain gets its result before the process exits 0. Before the fix an API process had no worker
 * runs to wait for and closed its sessions at once, cutting every blocked request without an answer. Negative
 * control: `--drain-ms 0` cuts it as before. Real processes on one SQLite file and one PostgreSQL database.
 */
import { join, resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { eventually, runNotes } from '../helpers/run-notes.js';
import { type ServerProcess, startServerProcess, startWorkerProcess, type WorkerProcess } from '../helpers/server-process.js';
import { sharedStore } from '../helpers/shared-store.js';
import { openListen, RawLegacySession } from '../helpers/sse.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/worker-tools.mjs');
/** How long the task runs on the worker after the API process is told to stop (about). */
const RUN_MS = 1_500;
/** One secret for the API processes of a store (each has a data dir of its own). */
const ENV = { MCP_TASKS_SECRET: 'api-drain-test-secret-0123456789' };

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`API drain on ${backend}: a blocked v1 tasks/result on serve --no-worker`, () => {
    const temp = makeTempDir();
    const fixture = sharedStore<ServerProcess | WorkerProcess>(backend, temp);
    const { processes } = fixture;
    const shared = () => ['--store', fixture.storeArg, '--no-builtins', '--tools', TOOLS];

    /**
     * An API process (with `--drain-ms drainMs`) and a worker; a v1 task of RUN_MS started on the worker, its
     * `tasks/result` blocked on the API process, a GET stream and a v2 listen stream open there; then SIGTERM.
     */
    const blockedThenSigterm = async (name: string, drainMs: number) => {
      const [api, worker] = await Promise.all([
        startServerProcess(join(temp.dir, `api-${name}`), ['--no-worker', '--instance-id', `api-${name}`, '--drain-ms', String(drainMs), ...shared()], ENV),
        startWorkerProcess(['--data-dir', join(temp.dir, `worker-${name}`), '--instance-id', `worker-${name}`, ...shared()], ENV),
      ]);
      processes.push(api, worker);
      const exited = new Promise<{ code: number | null; at: number }>((done) => api.child.once('exit', (code) => done({ code, at: Date.now() })));
      const log = join(temp.dir, `${name}.log`);
      const session = await RawLegacySession.open(api.url, { capabilities: { tasks: {} } });
      const created = await session.request('tools/call', { name: 'role_job', arguments: { log, ms: RUN_MS }, task: {} });
      const taskId = (created.body.result?.task as { taskId: string }).taskId;
      await eventually('the run to start on the worker', () => runNotes(log).find((n) => n.event === 'start'), 15_000, 10);
      // Streams that never end by themselves: the drain must not wait for them (endStreams and the session close end them).
      const getStream = await session.getStream();
      const listen = await openListen(api.url, { taskIds: [taskId] }, { id: `listen-${name}` });
      await listen.sse?.waitFor((m) => m.method === 'notifications/subscriptions/acknowledged', { what: 'the listen acknowledgement' });
      const answered = session.request('tasks/result', { taskId }).then(
        (response) => ({ response, at: Date.now() }),
        (error: unknown) => ({ cut: String(error), at: Date.now() }),
      );
      // The request is held by the API process (its headers go out when the task ends, or after 1 s).
      await new Promise((r) => setTimeout(r, 200));
      const signalledAt = Date.now();
      api.child.kill('SIGTERM');
      const [outcome, exit] = await Promise.all([answered, exited]);
      getStream.close();
      listen.close();
      return { outcome, exit, signalledAt, log, worker };
    };

    it('with --drain-ms 10000 the blocked request gets its result from the worker, then the process exits 0 (streams do not hold the drain)', async () => {
      const { outcome, exit, signalledAt, log, worker } = await blockedThenSigterm('drain', 10_000);
      expect('response' in outcome ? outcome.response.body : outcome).toMatchObject({ result: { content: [{ text: `done in ${worker.child.pid}` }] } });
      expect(exit.code).toBe(0);
      // It ended when its last request was answered, not at the drain's end; the run ended after the signal.
      expect(exit.at - signalledAt).toBeLessThan(8_000);
      expect(runNotes(log).find((n) => n.event === 'done')?.at).toBeGreaterThan(signalledAt);
    }, 60_000);

    it('negative control: with --drain-ms 0 the blocked request is cut without an answer', async () => {
      const { outcome, exit } = await blockedThenSigterm('cut', 0);
      expect('response' in outcome ? outcome.response.body : {}).not.toHaveProperty('result');
      expect(exit.code).toBe(0);
    }, 60_000);
  });
}
