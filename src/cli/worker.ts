import { createServer, type Server as HttpServer } from 'node:http';

import { createTaskWorker } from '../execution/create-task-worker.js';
import { TasksMetrics } from '../ops/metrics.js';
import { handleProbe, type ProbeSources } from '../ops/probes.js';
import { KillSwitchCache } from '../ops/rollout/kill-switch.js';
import type { ResolvedConfig } from './config/resolve.js';
import { registerCliProcess, registrationFailure } from './registration.js';
import {
  defaultInstanceId,
  describeDenied,
  describeExecutor,
  enforceConfiguredPins,
  openConfiguredStore,
  resolveSettings,
  startConfiguredExecutor,
} from './settings.js';
import { shadowSettingsOf } from './shadow-settings.js';
import { onShutdownSignal } from './shutdown.js';
import { startProcessTracing } from './tracing-setup.js';
import { startConfiguredUpstreams, upstreamLines } from './upstream-settings.js';
import { UsageError } from './usage-error.js';

/**
 * `mcp-tasks worker`: the worker role alone. No MCP endpoint and no server code (the layering test keeps this
 * module's imports away from `server/`): it claims the store's runnable tasks by lease, runs its tools, renews
 * leases, recovers lapsed ones and sweeps, with the same settings resolver as `serve`.
 */

/** The modes of `mcp-tasks worker` that are not configuration. */
export interface WorkerModes {
  /** `--allow-unpinned`: start although the pins do not match. */
  allowUnpinned?: boolean;
  /** `--fail-unreadable-tasks`: start although unfinished tasks need an at-rest key it lacks, failing them first. */
  failUnreadableTasks?: boolean;
}

function listenHealth(server: HttpServer, port: number, host: string): Promise<number> {
  return new Promise((resolveListen, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        new UsageError(
          error.code === 'EADDRINUSE' ? `--health-port ${port} on ${host} is already in use` : `cannot listen on ${host}:${port}: ${error.message}`,
        ),
      );
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
export async function worker(resolved: ResolvedConfig, modes: WorkerModes): Promise<void> {
  const options = { healthPort: resolved.config.worker?.healthPort, healthHost: resolved.config.worker?.healthHost ?? '127.0.0.1' };
  // Upstream tools are listed by their servers; this worker's calls go out on its own connections (issue 28).
  const { settings, gateway } = await startConfiguredUpstreams(await resolveSettings(resolved));
  enforceConfiguredPins(settings, modes.allowUnpinned === true);
  const { logger, tools } = settings;
  const metrics = new TasksMetrics({ role: 'worker' });
  if (gateway) metrics.watchUpstreams(gateway.statuses);
  const traces = await startProcessTracing(resolved, 'worker');
  const shadow = shadowSettingsOf(resolved, tools);
  // The warm pool loads the tools while the store opens; the worker registers (takes work) only once both are ready.
  const starting = startConfiguredExecutor(settings, metrics.workerObserver()).then((executor) => gateway?.executor(executor) ?? executor);
  const store = metrics.instrumentStore(
    await openConfiguredStore(settings).catch(async (error: unknown) => {
      await starting.then(
        (executor) => executor.close(),
        () => undefined,
      );
      throw error;
    }),
  );
  const executor = await starting.catch(async (error: unknown) => {
    await store.close();
    throw error;
  });
  const defaultId = settings.instanceId ?? defaultInstanceId('worker', options.healthPort);
  // Without --instance-id (and without a health port, which names the worker), a further worker on this host takes
  // the next free slot of the default id; a restarted one reclaims the slot of its dead predecessor at once.
  const slots = settings.instanceId === undefined && options.healthPort === undefined;
  const registration = await registerCliProcess(store, settings, 'worker', defaultId, logger, {
    slots,
    ...(modes.failUnreadableTasks ? { failUnreadableTasks: true } : {}),
  }).catch(async (error: unknown) => {
    await executor.close();
    await store.close();
    throw registrationFailure(error);
  });
  const handle = await createTaskWorker({
    observer: metrics.workerObserver(),
    ...(traces.runTracer ? { tracer: traces.runTracer } : {}),
    ...(shadow ? { shadow } : {}),
    store,
    tools,
    executor,
    roots: settings.roots,
    deniedPaths: settings.deniedPaths,
    limits: settings.limits,
    instanceId: registration.instanceId,
    logger,
  });
  let draining = false;
  // A worker obeys no kill switch (it finishes what was created) but reports it, so one probe shows the rollout state.
  const killSwitch = new KillSwitchCache(store, logger, resolved.config.rollout?.killSwitchRefreshMs);
  await killSwitch.start();
  const probes: ProbeSources = { role: 'worker', instanceId: handle.instanceId, store, draining: () => draining, metrics, killSwitch, executor };
  metrics.watchProcess({ draining: probes.draining });
  const health =
    options.healthPort === undefined
      ? undefined
      : createServer((request, response) => {
          metrics.observeHttp(request, response);
          if (!handleProbe(probes, request, response))
            response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found' }));
        });
  const healthPort = health ? await listenHealth(health, options.healthPort as number, options.healthHost) : undefined;
  const deniedLines = describeDenied(settings);
  logger.info({ deniedPaths: deniedLines, skippedRoots: settings.skippedRoots }, 'server state is denied to tools and excluded from every root');
  // The worker's own timers are unref'd (a library must not hold its host's process open) and an SQLite store has
  // no socket: without this the process would exit at once. Cleared by the drain.
  const keepAlive = setInterval(() => {}, 2 ** 30);
  onShutdownSignal(logger, async () => {
    draining = true;
    // Told to the registry beside the drain, not before it: the drain stops claiming at once whatever the store does,
    // and `registration.close` waits for the mark. Then doctor and the API processes count this worker as draining.
    void registration.markDraining();
    clearInterval(keepAlive);
    killSwitch.stop();
    await handle.drain(settings.drainMs);
    await executor.close();
    await gateway?.close();
    await registration.close();
    await store.close();
    await traces.shutdown();
    health?.close();
  });
  // Printed once a signal drains: whoever waits for this line may stop the worker at once.
  process.stderr.write(
    `mcp-tasks: worker ${handle.instanceId} running (no MCP endpoint)\n` +
      `  store:    ${settings.storeShown}\n  tools:    ${tools.map((tool) => tool.name).join(', ')}\n  roots:    ${settings.roots.join(', ') || '(none)'}\n` +
      `  writable: ${settings.writableRoots.join(', ') || '(none)'}\n` +
      `  denied:   ${deniedLines.join(',\n            ')}\n` +
      `  at rest:  ${settings.encryptionShown}\n` +
      `  executor: ${describeExecutor(settings, executor)}\n` +
      upstreamLines(settings, gateway) +
      `  tracing:  ${traces.describe}\n` +
      `  health:   ${healthPort === undefined ? 'off (--health-port N serves GET /healthz, /readyz, /metrics)' : `http://${options.healthHost}:${healthPort}/healthz, /readyz, /metrics`}\n`,
  );
}
