import { join } from 'node:path';

import { afterAll, beforeAll } from 'vitest';

import type { TaskStore } from '../../src/core/store.js';
import { openPostgresTaskStore } from '../../src/store/postgres/index.js';
import { ensureBuilt } from '../cli/support.js';
import { createTestDatabase, type TestDatabase } from './postgres.js';
import { type ServerProcess, startServerProcess, startWorkerProcess, type WorkerProcess } from './server-process.js';
import { makeTempDir } from './temp-dir.js';

/** What {@link apiAndWorkersOnPostgres} gives a describe block (its fields are set once `beforeAll` ran). */
export interface ApiAndWorkers {
  readonly temp: ReturnType<typeof makeTempDir>;
  database: TestDatabase;
  /** A store of the test's own on the same database, to look at rows as they are. */
  observer: TaskStore;
  /** The `serve --no-worker` process (instance `api-1`). */
  api: ServerProcess;
  /** Start a `worker` process under `instanceId`, with the flags every process of the block shares. */
  startWorker(instanceId: string): Promise<WorkerProcess>;
  /** End every worker started so far (how: see `endWorkers` of {@link apiAndWorkersOnPostgres}). */
  endWorkers(): Promise<void>;
}

/**
 * A describe block's `serve --no-worker` and `mcp-tasks worker` processes on a fresh PostgreSQL database, each given
 * `--store <url>` and `flags()` (tools, lease, attempts). Workers end with `endWorkers`: `stop` (SIGTERM, a drain),
 * or `kill9` when their runs wait for what never comes and a drain would wait its whole `--drain-ms`.
 */
export function apiAndWorkersOnPostgres(prefix: string, flags: () => string[], endWorkers: 'stop' | 'kill9'): ApiAndWorkers {
  const temp = makeTempDir(prefix);
  const workers: WorkerProcess[] = [];
  const shared = (): string[] => ['--store', rig.database.url, ...flags()];
  const rig: ApiAndWorkers = {
    temp,
    database: undefined as unknown as TestDatabase,
    observer: undefined as unknown as TaskStore,
    api: undefined as unknown as ServerProcess,
    async startWorker(instanceId) {
      const worker = await startWorkerProcess(['--data-dir', join(temp.dir, instanceId), ...shared(), '--instance-id', instanceId]);
      workers.push(worker);
      return worker;
    },
    async endWorkers() {
      for (const worker of workers.splice(0)) await (endWorkers === 'kill9' ? worker.kill9() : worker.stop());
    },
  };
  beforeAll(async () => {
    ensureBuilt();
    rig.database = await createTestDatabase();
    rig.observer = await openPostgresTaskStore({ url: rig.database.url });
    rig.api = await startServerProcess(join(temp.dir, 'api'), ['--no-worker', '--instance-id', 'api-1', ...shared()]);
  }, 60_000);
  afterAll(async () => {
    await rig.endWorkers();
    await rig.api?.stop();
    await rig.observer?.close();
    await rig.database?.drop();
    temp.remove();
  });
  return rig;
}
