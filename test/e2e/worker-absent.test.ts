/**
 * Issue 26 item 6: an API process without a worker (`serve --no-worker`) on PostgreSQL says when nothing can run
 * its tasks — a new task's status is "waiting for a worker", not the tool's first message as if it ran — and its
 * `/readyz` turns not ready once no worker process has been live for `--worker-absent-ms`; both recover when a
 * worker starts. Real processes, one real PostgreSQL database, observed over HTTP only.
 */
import { join, resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { eventually } from '../helpers/run-notes.js';
import { type ServerProcess, startServerProcess, startWorkerProcess, type WorkerProcess } from '../helpers/server-process.js';
import { sharedStore } from '../helpers/shared-store.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/worker-tools.mjs');
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
