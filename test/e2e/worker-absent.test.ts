/**
 * Issue 26 item 6: an API process without a worker (`serve --no-worker`) on PostgreSQL says when nothing can run
 * its tasks — a new task's status is "waiting for a worker", not the tool's first message as if it ran — and its
 * `/readyz` turns not ready once no worker process has been live for `--worker-absent-ms`; both recover when a
 * worker starts. The same line reaches every other reader too: both generations' create answers, the v1 GET
 * stream, the v2 listen stream and the dashboard. Real processes, one real PostgreSQL database, observed over HTTP.
 */
import { join, resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { cliRunner } from '../cli/support.js';
import { eventually } from '../helpers/run-notes.js';
import { type ServerProcess, startServerProcess, startWorkerProcess, type WorkerProcess } from '../helpers/server-process.js';
import { sharedStore } from '../helpers/shared-store.js';
import { openListen, type OpenStream, RawLegacySession, type SseMessages } from '../helpers/sse.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/worker-tools.mjs');
const ANNOUNCED = resolve(import.meta.dirname, '../fixtures/announced-tools.mjs');
const WAITING = /^waiting for a worker \(no worker process is running: none seen since this server started\); the task starts when one runs$/;
const ABSENT_MS = 1_500;

describe('serve --no-worker on postgres with no live worker', () => {
  const temp = makeTempDir();
  const fixture = sharedStore<ServerProcess | WorkerProcess>('postgres', temp);
  const common = () => ['--store', fixture.storeArg, '--no-builtins', '--tools', TOOLS, '--heartbeat-ms', '200'];

  const readyz = async (url: string): Promise<{ status: number; body: { ready: boolean; checks: { workers?: Record<string, unknown> } } }> => {
    const response = await fetch(new URL('/readyz', url));
    return { status: response.status, body: (await response.json()) as never };
  };

  it('a new task says "waiting for a worker" and /readyz turns not ready after --worker-absent-ms; a worker that starts runs it and both recover', async () => {
    const api = await startServerProcess(join(temp.dir, 'api'), [
      '--no-worker',
      '--instance-id',
      'api-absent',
      '--worker-absent-ms',
      String(ABSENT_MS),
      ...common(),
    ]);
    fixture.processes.push(api);
    const created = await postModern(api.url, 'tools/call', { name: 'role_job', arguments: { log: join(temp.dir, 'absent.log'), ms: 100 } });
    const taskId = created.body.result?.taskId as string;
    expect(typeof taskId).toBe('string');
    const waiting = await postModern(api.url, 'tasks/get', { taskId });
    expect(waiting.body.result).toMatchObject({
      status: 'working',
      statusMessage: expect.stringMatching(/^waiting for a worker \(no worker process is running/),
    });
    // Within the window the API is still ready (workers come up after it); past it, not ready, and it says why.
    const notReady = await eventually(
      '/readyz to turn not ready',
      async () => ((await readyz(api.url)).status === 503 ? readyz(api.url) : undefined),
      10_000,
      100,
    );
    expect(notReady.body).toMatchObject({ ready: false, checks: { workers: { ok: false, live: 0, lastSeenAt: null, absentAfterMs: ABSENT_MS } } });

    const worker = await startWorkerProcess(['--data-dir', join(temp.dir, 'w1'), ...common(), '--instance-id', 'worker-absent-1']);
    fixture.processes.push(worker);
    const done = await pollModernTask(api.url, taskId);
    expect(done.status).toBe('completed');
    const ready = await eventually(
      '/readyz to be ready again',
      async () => ((await readyz(api.url)).status === 200 ? readyz(api.url) : undefined),
      10_000,
      100,
    );
    expect(ready.body).toMatchObject({ ready: true, checks: { workers: { ok: true, live: 1, lastSeenAt: expect.any(String) } } });
  });
});

describe('serve --no-worker with no live worker: every reader is told the task waits (issue 26 item 6)', () => {
  const temp = makeTempDir();
  const fixture = sharedStore<ServerProcess | WorkerProcess>('postgres', temp);
  const streams: OpenStream[] = [];
  const sse = (stream: OpenStream): SseMessages => {
    streams.push(stream);
    if (!stream.sse) throw new Error(`no SSE stream (HTTP ${stream.status}): ${JSON.stringify(stream.json?.body)}`);
    return stream.sse;
  };
  const about = (method: string, taskId: string) => (message: Record<string, unknown>) =>
    message.method === method && (message.params as { taskId?: unknown } | undefined)?.taskId === taskId;

  it('R12/R14/R15, E11/E15, R34, E33 and the dashboard: the create answers of both generations, the v1 GET stream, the v2 listen stream and the dashboard say "waiting for a worker", not the tool\'s "Started scanning"; with a worker the same call says what the tool said', async () => {
    // Two API processes on one store (sessions shared through the secret): a v1 session's GET stream on the second
    // follows the task its tools/call created on the first, and sends its current status first (SessionStreams).
    const shared = ['--store', fixture.storeArg, '--no-builtins', '--tools', ANNOUNCED, '--heartbeat-ms', '200'];
    const apiArgs = (id: string) => ['--no-worker', '--dashboard', '--instance-id', id, ...shared];
    const env = { MCP_TASKS_SECRET: 'worker-absent-e2e-secret-0123456789abcdef' };
    const [api, other] = await Promise.all([
      startServerProcess(join(temp.dir, 'api'), apiArgs('api-waiting'), env),
      startServerProcess(join(temp.dir, 'api-2'), apiArgs('api-waiting-2'), env),
    ]);
    fixture.processes.push(other, api);
    const call = { name: 'announced_scan', arguments: { target: 'fleet-a' } };

    // v2: the flat CreateTaskResult (E8) — its statusMessage (E11: shown to user or model) is the waiting line; the
    // tool's words stay the immediate response in `_meta`, what a host hands the model for the call itself.
    const modern = await postModern(api.url, 'tools/call', call);
    const v2Task = modern.body.result as Record<string, any>;
    expect(v2Task).toMatchObject({ resultType: 'task', status: 'working', statusMessage: expect.stringMatching(WAITING) });
    expect(JSON.stringify(v2Task._meta)).toContain('Started scanning fleet-a');

    // v1: the nested CreateTaskResult (R12, working per R14) and the GET stream's notifications/tasks/status (R34:
    // the full Task, as tasks/get shows it). (tasks/list, advertised only with authentication, reads the same way.)
    const session = await RawLegacySession.open(api.url);
    const legacy = await session.request('tools/call', { ...call, task: {} });
    const v1Task = (legacy.body.result as { task: Record<string, unknown> }).task;
    expect(v1Task).toMatchObject({ status: 'working', statusMessage: expect.stringMatching(WAITING) });
    const getStream = sse(await session.getStream(other.url));
    const pushed = await getStream.waitFor(about('notifications/tasks/status', v1Task.taskId as string), { what: 'the v1 status notification' });
    expect(pushed.params).toMatchObject({ status: 'working', statusMessage: expect.stringMatching(WAITING) });

    // v2 subscriptions/listen: notifications/tasks is identical to tasks/get at that moment (E33).
    const listen = sse(await openListen(api.url, { taskIds: [v2Task.taskId] }, { id: 'waiting-listen' }));
    const snapshot = await listen.waitFor(about('notifications/tasks', v2Task.taskId as string), { what: 'the v2 task notification' });
    expect(snapshot.params).toMatchObject({ status: 'working', statusMessage: expect.stringMatching(WAITING) });

    // The dashboard's list, its task page and its event stream.
    const base = api.url.replace(/\/mcp$/, '');
    const rows = ((await (await fetch(`${base}/dashboard/api/tasks`)).json()) as { tasks: Array<Record<string, unknown>> }).tasks;
    expect(rows.map((row) => row.statusMessage)).toEqual([expect.stringMatching(WAITING), expect.stringMatching(WAITING)]);
    const page = (await (await fetch(`${base}/dashboard/api/tasks/${v2Task.taskId as string}`)).json()) as { task: Record<string, unknown> };
    expect(page.task.statusMessage).toMatch(WAITING);

    // Negative control: a worker starts; the next call's answer says what the tool said (the API has seen the
    // worker once its registry look finds it live).
    fixture.processes.push(await startWorkerProcess(['--data-dir', join(temp.dir, 'w'), '--instance-id', 'worker-waiting', ...shared]));
    const withWorker = await eventually(
      "a create answer with the tool's own words",
      async () => {
        const answer = (await postModern(api.url, 'tools/call', { ...call, arguments: { target: 'fleet-b' } })).body.result as Record<string, unknown>;
        return WAITING.test(String(answer.statusMessage)) ? undefined : answer;
      },
      10_000,
      250,
    );
    expect(withWorker.statusMessage).toBe('Started scanning fleet-b');
    expect((await pollModernTask(api.url, v2Task.taskId as string)).status).toBe('completed');
    for (const stream of streams.splice(0)) stream.close();
  });
});

describe('mcp-tasks call against serve --no-worker with no live worker', () => {
  const temp = makeTempDir();
  const fixture = sharedStore<ServerProcess>('postgres', temp);

  it("prints the task's own status beside the tool's words when they differ: 'waiting for a worker', not only 'Started scanning'", async () => {
    const api = await startServerProcess(join(temp.dir, 'api'), [
      '--no-worker',
      '--instance-id',
      'api-cli',
      '--store',
      fixture.storeArg,
      '--no-builtins',
      '--tools',
      ANNOUNCED,
    ]);
    fixture.processes.push(api);
    const env: NodeJS.ProcessEnv = { ...process.env, MCP_TASKS_CLIENT_STATE: join(temp.dir, 'cli-journal.json') };
    delete env.MCP_TASKS_URL;
    const detached = await cliRunner(env).cli(['call', 'announced_scan', '--args', JSON.stringify({ target: 'fleet-c' }), '--detach', '--url', api.url]);
    expect(detached.code, detached.stderr).toBe(0);
    expect(detached.stderr).toContain('server says: Started scanning fleet-c');
    expect(detached.stderr).toMatch(/task status: waiting for a worker \(no worker process is running/);
  });
});
