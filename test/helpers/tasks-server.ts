import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import type { TasksServerLimits } from '../../src/core/limits.js';
import type { Logger } from '../../src/core/logger.js';
import type { Authenticator } from '../../src/core/owner.js';
import type { RunTracer } from '../../src/core/run-tracer.js';
import type { ScopePolicy } from '../../src/core/scopes.js';
import type { TaskStore } from '../../src/core/store.js';
import type { AnyToolDefinition } from '../../src/core/tool.js';
import type { WorkerObserver } from '../../src/core/worker-observer.js';
import type { ShadowSettings } from '../../src/execution/shadow-watch.js';
import { createTasksServer, type TasksServer } from '../../src/server/create-tasks-server.js';
import type { TaskModeGate } from '../../src/service/calls/task-mode-gate.js';
import type { TaskServiceHook } from '../../src/service/hooks.js';
import type { WorkerPresence } from '../../src/service/worker-presence.js';
import { openSqliteTaskStore, type SqliteTaskStore } from '../../src/store/sqlite/index.js';
import { makeTempDir } from './temp-dir.js';

/** A real tasks server on a loopback port with a real SQLite file, for end-to-end tests. */
export interface RunningTasksServer {
  url: string;
  server: TasksServer;
  store: SqliteTaskStore;
  dbPath: string;
  http: HttpServer;
  close(): Promise<void>;
}

/** Start a tasks server on 127.0.0.1 (random port) over a fresh database unless `dbPath` is given. */
export async function startTasksServer(options: {
  tools: AnyToolDefinition[];
  /** An authenticator, or one built for the server's URL once its port is known (a JWT audience is that URL). */
  auth?: Authenticator | ((url: URL) => Authenticator);
  /** This server as an OAuth protected resource of `issuer` (the resource is the server's URL). */
  oauthIssuer?: string;
  scopes?: ScopePolicy;
  limits?: Partial<TasksServerLimits>;
  roots?: string[];
  dbPath?: string;
  /** Whether the fast path answers hot requests (default: the server's default, on). */
  fastPath?: boolean;
  logger?: Logger;
  /** Lease owner id of the server (default: random). */
  instanceId?: string;
  /** Wrap the real store before the server gets it (e.g. to inject latency); the wrapper must delegate every call. */
  wrapStore?: (store: SqliteTaskStore) => TaskStore;
  /** Hooks around every task service operation. */
  hooks?: TaskServiceHook[];
  /** `false`: an API-only server (no embedded worker). */
  worker?: boolean;
  /** Task fallback tools for hosts without task support (`--task-fallback-tools`). */
  taskFallbackTools?: boolean;
  /** Traces the embedded worker's runs. */
  runTracer?: RunTracer;
  /** Told about the embedded worker's runs (metrics). */
  workerObserver?: WorkerObserver;
  /** Shadow mode of the embedded worker. */
  shadow?: ShadowSettings;
  /** The kill switch / canary gate (issue 15). */
  gate?: TaskModeGate;
  /** With `worker: false`: who runs tasks elsewhere, built over the server's store (`serve --no-worker`'s `WorkerPresence`). */
  workers?: (store: SqliteTaskStore) => Pick<WorkerPresence, 'view'>;
}): Promise<RunningTasksServer> {
  const temp = options.dbPath ? undefined : makeTempDir();
  const dbPath = options.dbPath ?? join(temp!.dir, 'tasks.db');
  const store = openSqliteTaskStore({ path: dbPath });
  // Listen first: the URL (and so a JWT audience) is known only once the port is.
  const route: { handle?: (request: IncomingMessage, response: ServerResponse) => void } = {};
  const http = createServer((request, response) => route.handle?.(request, response));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  const url = new URL(`http://127.0.0.1:${port}/mcp`);
  const auth = typeof options.auth === 'function' ? options.auth(url) : options.auth;
  const server = await createTasksServer({
    tools: options.tools,
    store: options.wrapStore ? options.wrapStore(store) : store,
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.instanceId ? { instanceId: options.instanceId } : {}),
    secret: randomBytes(32),
    ...(auth ? { auth } : {}),
    ...(options.oauthIssuer ? { oauth: { resource: url, issuer: options.oauthIssuer } } : {}),
    ...(options.scopes ? { scopes: options.scopes } : {}),
    roots: options.roots ?? [],
    // No 2026-07-28 inline grace unless a test asks for it (issue 27 §5): most tests follow a short task as a task;
    // test/e2e/inline-grace.test.ts sets it.
    limits: { leaseMs: 2000, inlineGraceMs: 0, ...options.limits },
    ...(options.fastPath === undefined ? {} : { fastPath: options.fastPath }),
    ...(options.hooks ? { hooks: options.hooks } : {}),
    ...(options.worker === undefined ? {} : { worker: options.worker }),
    ...(options.taskFallbackTools ? { taskFallbackTools: true } : {}),
    ...(options.runTracer ? { runTracer: options.runTracer } : {}),
    ...(options.workerObserver ? { workerObserver: options.workerObserver } : {}),
    ...(options.shadow ? { shadow: options.shadow } : {}),
    ...(options.gate ? { gate: options.gate } : {}),
    ...(options.workers ? { workers: options.workers(store) } : {}),
  });
  route.handle = (request, response) => void server.handleHttp(request, response);
  return {
    url: url.href,
    server,
    store,
    dbPath,
    http,
    async close() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
      await server.close();
      await store.close();
      temp?.remove();
    },
  };
}
