import { createServer, type Server as HttpServer } from 'node:http';
import { createTaskWorker, type TaskWorkerHandle } from '../execution/create-task-worker.js';
import { apiWithOtherSettings, registerProcess } from '../execution/process-registration.js';
import { createConfiguredExecutor, defaultInstanceId, describeDenied, openConfiguredStore, registrationFailure, resolveSettings, type SharedFlags } from './settings.js';
import { StartupError } from './usage-error.js';
import { onShutdownSignal } from './shutdown.js';
import { UsageError } from './usage-error.js';

/**
 * `mcp-tasks worker`: the worker role alone. No MCP endpoint and no server code (the layering test keeps this
 * module's imports away from `server/`): it claims the store's runnable tasks by lease, runs its tools, renews
 * leases, recovers lapsed ones and sweeps, with the same settings resolver as `serve`.
 */

/** Options of `mcp-tasks worker`, as commander parses them. */
export interface WorkerOptions extends SharedFlags {
  /** `--health-port`: serve `GET /healthz` here (none without it). */
  healthPort?: number;
  healthHost: string;
}

/**
 * A `/healthz` endpoint for orchestrators: 200 with `{status: "ok", instanceId, activeRuns}` while the worker runs,
 * 503 `{status: "draining"}` once it drains; 404 for any other path.
 */
function healthServer(handle: TaskWorkerHandle, draining: () => boolean): HttpServer {
  return createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (request.method !== 'GET' || path !== '/healthz') {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found' }));
      return;
    }
    const body = draining() ? { status: 'draining', instanceId: handle.instanceId } : { status: 'ok', instanceId: handle.instanceId, activeRuns: handle.worker.activeRuns };
    response.writeHead(draining() ? 503 : 200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
}

function listenHealth(server: HttpServer, port: number, host: string): Promise<number> {
  return new Promise((resolveListen, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(new UsageError(error.code === 'EADDRINUSE' ? `--health-port ${port} on ${host} is already in use` : `cannot listen on ${host}:${port}: ${error.message}`));
    });
    server.listen(port, host, () => {
      const address = server.address();
      resolveListen(typeof address === 'object' && address ? address.port : port);
    });
  });
}

/**
 * Run a worker until SIGTERM/SIGINT, then drain: stop claiming, let runs finish for `--drain-ms`, abort the rest
 * with `shutdown` and release their leases so another worker recovers them at once.
 * @throws UsageError (exit 64) for invalid settings or a busy health port.
 * @throws StartupError (exit 1) when the store cannot be opened.
 */
export async function worker(options: WorkerOptions): Promise<void> {
  if (options.healthPort !== undefined && options.healthPort > 65535) throw new UsageError(`--health-port ${options.healthPort}: expected 0–65535`);
  const settings = await resolveSettings(options);
  const { logger, tools } = settings;
  const store = await openConfiguredStore(settings);
  const instanceId = options.instanceId ?? defaultInstanceId('worker', options.healthPort);
  const registration = await (async () => {
    const api = await apiWithOtherSettings(store, settings.settingsDigest);
    if (api) {
      throw new StartupError(
        `settings differ from API process ${api.instanceId} (settings digest ${api.settingsDigest}, this worker ${settings.settingsDigest}): roots, writable roots, tools, run limits and the at-rest key must be the same on every process (mcp-tasks doctor lists them)`,
      );
    }
    return registerProcess({
      store,
      instanceId,
      role: 'worker',
      settingsDigest: settings.settingsDigest,
      heartbeatMs: settings.heartbeatMs,
      logger,
      onLost: (holder) => {
        process.stderr.write(`mcp-tasks: instance id ${instanceId} is now held by ${holder}; this worker stops\n`);
        process.exit(1);
      },
    });
  })().catch(async (error: unknown) => {
    await store.close();
    throw registrationFailure(error);
  });
  const executor = createConfiguredExecutor(settings);
  const handle = await createTaskWorker({
    store,
    tools,
    executor,
    roots: settings.roots,
    deniedPaths: settings.deniedPaths,
    limits: settings.limits,
    instanceId,
    logger,
  });
  let draining = false;
  const health = options.healthPort === undefined ? undefined : healthServer(handle, () => draining);
  const healthPort = health ? await listenHealth(health, options.healthPort as number, options.healthHost) : undefined;
  const deniedLines = describeDenied(settings);
  logger.info({ deniedPaths: deniedLines, skippedRoots: settings.skippedRoots }, 'server state is denied to tools and excluded from every root');
  // The worker's own timers are unref'd (a library must not hold its host's process open) and an SQLite store has
  // no socket: without this the process would exit at once. Cleared by the drain.
  const keepAlive = setInterval(() => {}, 2 ** 30);
  onShutdownSignal(logger, async () => {
    draining = true;
    clearInterval(keepAlive);
    await handle.drain(settings.drainMs);
    await executor.close();
    await registration.close();
    await store.close();
    health?.close();
  });
  // Printed once a signal drains: whoever waits for this line may stop the worker at once.
  process.stderr.write(
    `mcp-tasks: worker ${handle.instanceId} running (no MCP endpoint)\n` +
      `  store:    ${settings.storeShown}\n  tools:    ${tools.map((tool) => tool.name).join(', ')}\n  roots:    ${settings.roots.join(', ') || '(none)'}\n` +
      `  writable: ${settings.writableRoots.join(', ') || '(none)'}\n` +
      `  denied:   ${deniedLines.join(',\n            ')}\n` +
      `  at rest:  ${settings.encryptionShown}\n` +
      `  executor: ${settings.executorMode}\n` +
      `  health:   ${healthPort === undefined ? 'off (--health-port N serves GET /healthz)' : `http://${options.healthHost}:${healthPort}/healthz`}\n`,
  );
}
