import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';

import { discoverAuthorizationServer } from '../auth/discovery.js';
import { systemClock } from '../core/clock.js';
import { ANONYMOUS_OWNER_KEY } from '../core/owner.js';
import { isPathInside } from '../core/path-inside.js';
import { createDashboard, type Dashboard } from '../dashboard/http.js';
import { OidcSignIn } from '../dashboard/oidc-sign-in.js';
import { viewerVerifier } from '../dashboard/verifier.js';
import { createAdminApi } from '../ops/admin-api.js';
import { TasksMetrics } from '../ops/metrics.js';
import { handleProbe, type ProbeSources } from '../ops/probes.js';
import { rolloutGate } from '../ops/rollout/gate.js';
import { KillSwitchCache } from '../ops/rollout/kill-switch.js';
import { createKillSwitchControl } from '../ops/rollout/kill-switch-control.js';
import { TASK_SCOPES } from '../protocol/scopes.js';
import { createTasksServer } from '../server/create-tasks-server.js';
import { agreeOnServerSecret } from '../server/signing-key.js';
import { reserveStdoutForProtocol } from '../server/stdio-output.js';
import { WorkerPresence } from '../service/worker-presence.js';
import type { ResolvedConfig } from './config/resolve.js';
import { registerCliProcess, registrationFailure } from './registration.js';
import { resolveServeAuth, type ServeAuthOptions } from './serve-auth.js';
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
import { drainThenExit, onShutdownSignal } from './shutdown.js';
import type { StoreSpec } from './store-spec.js';
import { startProcessTracing } from './tracing-setup.js';
import { startConfiguredUpstreams, upstreamLines } from './upstream-settings.js';
import { StartupError, UsageError } from './usage-error.js';

const SECRET_SHOWN = {
  env: 'MCP_TASKS_SECRET (the store keeps its digest)',
  'data-dir': '<data dir>/secret (the store keeps its digest)',
  store: 'kept in the database (mcp_tasks.server_secret)',
} as const;

/**
 * What the data directory holds for this process, after its path in the banner: nothing said when the tasks are in
 * it; else the secret file only, or nothing (a newcomer on PostgreSQL took the path for where the tasks are written).
 */
function dataDirUse(store: StoreSpec, dataDir: string, secret: keyof typeof SECRET_SHOWN): string {
  if (store.kind === 'sqlite' && isPathInside(dataDir, store.path)) return '';
  return secret === 'data-dir' ? ' (the secret file only: the tasks are in the store below)' : ' (not used: the tasks and the secret are elsewhere)';
}

/** The modes of `mcp-tasks serve` that are not configuration (they choose what this one process is). */
export interface ServeModes {
  stdio?: boolean;
  /** `--no-worker` makes it `false`: an API-only server that never holds a lease. */
  worker: boolean;
  /** `--allow-unpinned`: start although the pins do not match what is installed and configured. */
  allowUnpinned?: boolean;
  /** `--fail-unreadable-tasks`: start although unfinished tasks need an at-rest key it lacks, failing them first. */
  failUnreadableTasks?: boolean;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/** Bind to `port` on `host` before anything durable happens, so a busy or invalid port fails first. */
export function listen(http: HttpServer, port: number, host: string): Promise<number> {
  return new Promise((resolveListen, reject) => {
    http.once('error', (error: NodeJS.ErrnoException) => {
      reject(new UsageError(error.code === 'EADDRINUSE' ? `port ${port} on ${host} is already in use` : `cannot listen on ${host}:${port}: ${error.message}`));
    });
    http.listen(port, host, () => {
      const address = http.address();
      resolveListen(typeof address === 'object' && address ? address.port : port);
    });
  });
}

/**
 * `mcp-tasks serve`: check every setting, bind the port, then open the store, start the task service (and, unless
 * `--no-worker`, an embedded worker and the sweeper) and serve MCP over HTTP (default) or stdio. SIGINT/SIGTERM
 * drain: the listener closes, listen streams end with their result, runs get `--drain-ms` to finish, the rest are
 * aborted with `shutdown` and their leases released for another worker, and HTTP requests still in flight (a blocked
 * `tasks/result`) get what is left of `--drain-ms` before the sessions close. Nothing is written to the data directory
 * before the settings and the port are known to be good.
 * @throws UsageError (exit 64) for invalid settings: a remote bind without authentication or a Host allow-list,
 *   bad limits, token file or tool module, a short `MCP_TASKS_SECRET`, a busy port.
 * @throws StartupError (exit 1) when the store cannot be opened: unreachable, a newer schema, an unusable file.
 */
export async function serve(resolved: ResolvedConfig, modes: ServeModes): Promise<void> {
  // Before any tool module loads or thread starts: on stdio, stdout is the protocol's alone.
  const protocolStdout = modes.stdio ? reserveStdoutForProtocol() : undefined;
  const http = resolved.config.http ?? {};
  const options = {
    ...modes,
    port: http.port ?? 3100,
    host: http.host ?? '127.0.0.1',
    allowedHosts: http.allowedHosts,
    allowRemoteUnauthenticated: http.allowRemoteUnauthenticated,
    auth: resolved.config.auth,
    dashboard: resolved.config.dashboard === true,
  };
  const loopback = LOOPBACK.has(options.host);
  if (!options.stdio && !loopback && !options.auth && !options.allowRemoteUnauthenticated) {
    throw new UsageError(`refusing to listen on ${options.host} without --auth; use --auth tokens:<file>, --auth jwt or --allow-remote-unauthenticated`);
  }
  if (options.stdio && options.dashboard)
    throw new UsageError("dashboard (--dashboard, MCP_TASKS_DASHBOARD or the config file's dashboard) is served over HTTP; it does not apply to --stdio");
  if (!options.stdio && !loopback && !options.allowedHosts) {
    throw new UsageError(
      `listening on ${options.host} needs --allowed-hosts <host names clients use to reach this server> (the Host/Origin allow-list that stops DNS rebinding); --allowed-hosts '*' turns the check off`,
    );
  }
  // Upstream tools are listed by their servers: connected before anything else needs the tool list (issue 28).
  const { settings, gateway } = await startConfiguredUpstreams(await resolveSettings(resolved));
  try {
    enforceConfiguredPins(settings, modes.allowUnpinned === true);
  } catch (error) {
    await gateway?.close();
    throw error;
  }
  const { logger, tools } = settings;
  const shadow = shadowSettingsOf(resolved, tools);
  const { jwt = {}, toolScopes } = resolved.config;
  const authOptions: ServeAuthOptions = {
    ...jwt,
    ...(options.auth === undefined ? {} : { auth: options.auth }),
    ...(toolScopes ? { toolScope: toolScopes } : {}),
    ...(options.stdio ? { stdio: true } : {}),
  };
  const auth = await resolveServeAuth(authOptions, logger);
  // A misspelt tool name would leave the real tool without its scope.
  const unscoped = auth.scopes.scopedTools().filter((name) => !tools.some((tool) => tool.name === name));
  if (unscoped.length > 0) {
    auth.close();
    throw new UsageError(`--tool-scope names no served tool: ${unscoped.join(', ')} (tools: ${tools.map((tool) => tool.name).join(', ')})`);
  }
  const hostList = options.allowedHosts?.includes('*') ? null : options.allowedHosts;
  const dashboardOptions = resolved.config.dashboardOptions ?? {};
  if (dashboardOptions.clientId !== undefined && !auth.oauth) {
    auth.close();
    throw new UsageError('--dashboard-client-id (dashboardOptions.clientId) signs in at the JWT issuer: it needs --auth jwt');
  }

  // The port is bound before the store exists (so a busy port fails first); the few requests that could arrive in
  // the milliseconds before the server is ready are told to retry.
  const route: { handle?: (request: IncomingMessage, response: ServerResponse) => void } = {};
  const listener = options.stdio
    ? undefined
    : createServer((request, response) => {
        if (route.handle) route.handle(request, response);
        else response.writeHead(503, { 'retry-after': '1' }).end();
      });
  const port = listener ? await listen(listener, options.port, options.host) : 0;

  const metrics = new TasksMetrics({ role: modes.worker ? 'serve' : 'api' });
  if (gateway) metrics.watchUpstreams(gateway.statuses);
  const traces = await startProcessTracing(resolved, modes.worker ? 'serve' : 'api');
  // The warm pool loads the tools while the store opens; this process registers (takes work) only once both are ready.
  const starting = startConfiguredExecutor(settings, metrics.workerObserver()).then((executor) => gateway?.executor(executor) ?? executor);
  const store = metrics.instrumentStore(
    await openConfiguredStore(settings).catch(async (error: unknown) => {
      listener?.close();
      auth.close();
      await starting.then(
        (executor) => executor.close(),
        () => undefined,
      );
      throw error;
    }),
  );
  const executor = await starting.catch(async (error: unknown) => {
    listener?.close();
    auth.close();
    await store.close();
    throw error;
  });
  metrics.readInputsFrom(store);
  // stdio servers are spawned one per client, several on one store: each gets an id of its own (its pid).
  const instanceId = settings.instanceId ?? defaultInstanceId('serve', listener ? port : `stdio-${process.pid}`);
  const registration = await registerCliProcess(
    store,
    settings,
    options.worker ? 'serve' : 'api',
    instanceId,
    logger,
    modes.failUnreadableTasks ? { failUnreadableTasks: true } : {},
  ).catch(async (error: unknown) => {
    listener?.close();
    auth.close();
    await executor.close();
    await store.close();
    throw registrationFailure(error);
  });
  // Every instance of one store signs cursors and requestStates with one secret; a different one is refused here.
  const agreed = await agreeOnServerSecret(store.serverSecret, {
    dataDir: settings.dataDir,
    keptInStore: settings.store.kind === 'postgres',
    env: settings.secret === undefined ? {} : { MCP_TASKS_SECRET: settings.secret },
  }).catch(async (error: unknown) => {
    listener?.close();
    auth.close();
    await executor.close();
    await registration.close();
    await store.close();
    throw new StartupError(`cannot agree on the server secret with store ${settings.storeShown}: ${error instanceof Error ? error.message : String(error)}`);
  });
  const rollout = resolved.config.rollout ?? {};
  const killSwitch = new KillSwitchCache(store, logger, rollout.killSwitchRefreshMs);
  await killSwitch.start();
  // An API process without a worker watches the registry: its tasks say when nothing can run them, /readyz too.
  const workers = options.worker
    ? undefined
    : new WorkerPresence(store, systemClock, { absentAfterMs: settings.workerAbsentMs, refreshMs: settings.heartbeatMs, logger });
  await workers?.start();
  const server = await createTasksServer({
    tools,
    store,
    executor,
    secret: agreed.secret,
    ...(auth.authenticator ? { auth: auth.authenticator } : {}),
    ...(auth.oauth ? { oauth: auth.oauth } : {}),
    scopes: auth.scopes,
    roots: settings.roots,
    deniedPaths: settings.deniedPaths,
    limits: settings.limits,
    worker: options.worker,
    instanceId,
    taskFallbackTools: resolved.config.taskFallbackTools === true,
    ...(loopback ? {} : { allowedHosts: hostList ?? null, allowedOrigins: hostList ?? null }),
    // Tracing outermost: the request span covers the metrics and everything the call does.
    hooks: [...traces.hooks, metrics.serviceHook()],
    gate: rolloutGate(killSwitch, { fallback: rollout.fallback ?? 'reject', maxSyncMs: rollout.maxSyncMs ?? 30_000, canary: rollout.canary ?? {} }),
    workerObserver: metrics.workerObserver(),
    ...(traces.runTracer ? { runTracer: traces.runTracer } : {}),
    ...(shadow ? { shadow } : {}),
    pollObserver: metrics.pollObserver(),
    ...(workers ? { workers } : {}),
    logger,
  });
  let draining = false;
  const probes: ProbeSources = { role: modes.worker ? 'serve' : 'api', instanceId, store, draining: () => draining, metrics, killSwitch, executor, workers };
  metrics.watchProcess({ draining: probes.draining, workers: workers ? () => workers.state() : undefined });
  const deniedLines = describeDenied(settings);
  logger.info({ deniedPaths: deniedLines, skippedRoots: settings.skippedRoots }, 'server state is denied to tools and excluded from every root');
  /** The drain, then everything closed; `afterDrain` runs between (the HTTP listener's last connections). */
  const stop = async (afterDrain?: () => void): Promise<void> => {
    // In the registry beside the drain (see `worker`): from now on no process counts this one as taking tasks.
    void registration.markDraining();
    killSwitch.stop();
    workers?.stop();
    await server.drain(settings.drainMs);
    afterDrain?.();
    await executor.close();
    await gateway?.close();
    await registration.close();
    auth.close();
    await store.close();
    await traces.shutdown();
  };
  const role = `instance ${instanceId}${registration.takenOver.length > 0 ? ` (took over ${registration.takenOver.length} ${registration.takenOver.length === 1 ? 'task' : 'tasks'} of its previous process)` : ''}, ${options.worker ? 'worker: embedded' : 'worker: none (--no-worker: tasks wait for a worker process)'}`;

  if (!listener) {
    // A client that spawned this stdio server ends it with SIGTERM as often as by closing stdin: drain either way
    // (tasks handed back, upstream children ended), and before the banner, which is what such clients wait for.
    onShutdownSignal(logger, () => stop());
    process.stderr.write(
      `mcp-tasks: serving MCP on stdio (store ${settings.storeShown}, ${tools.length} tools, ${role}; at rest: ${settings.encryptionShown}; denied to tools: ${deniedLines.join(', ')})\n`,
    );
    server.serveStdio(protocolStdout);
    process.stdin.on('end', () => drainThenExit(logger, () => stop()));
    return;
  }
  let dashboard: Dashboard | undefined;
  if (options.dashboard) {
    dashboard = createDashboard({
      service: server.service.viewer,
      ...(gateway ? { upstreams: () => gateway.statuses() } : {}),
      ...(auth.authenticator ? { verify: viewerVerifier(auth.authenticator) } : {}),
      ...(auth.oauth && dashboardOptions.clientId !== undefined
        ? {
            oidc: new OidcSignIn({
              issuer: auth.oauth.issuer,
              discover: (issuer) => discoverAuthorizationServer(issuer),
              clientId: dashboardOptions.clientId,
              resource: auth.oauth.resource.href,
              ...(dashboardOptions.scopes === undefined ? {} : { scopes: dashboardOptions.scopes }),
              ...(dashboardOptions.redirectUri === undefined ? {} : { redirectUri: dashboardOptions.redirectUri }),
            }),
            issuerName: auth.oauth.issuer,
          }
        : {}),
      ...(dashboardOptions.secureCookie === undefined ? {} : { secureCookie: dashboardOptions.secureCookie }),
      ...(dashboardOptions.sessionTtlMs === undefined ? {} : { sessionTtlMs: dashboardOptions.sessionTtlMs }),
      killSwitch: createKillSwitchControl({
        store,
        cache: killSwitch,
        tools: tools.map((tool) => tool.name),
        defaultFallback: rollout.fallback ?? 'reject',
        logger,
      }),
      anonymous: { ownerKey: ANONYMOUS_OWNER_KEY, scopes: TASK_SCOPES },
      allowedHosts: loopback ? ['localhost', '127.0.0.1', '[::1]'] : (hostList ?? null),
      logger,
    });
  }
  const admin = createAdminApi({
    store,
    killSwitch,
    tools: tools.map((tool) => tool.name),
    defaultFallback: rollout.fallback ?? 'reject',
    authenticator: auth.authenticator,
    logger,
    allowedHosts: loopback ? ['localhost', '127.0.0.1', '[::1]'] : (hostList ?? null),
  });
  route.handle = (request, response) => {
    metrics.observeHttp(request, response);
    // Probes and metrics first (never behind sign-in), then /admin/… and the dashboard's /dashboard…, then MCP and /.well-known.
    if (handleProbe(probes, request, response)) return;
    if (admin.owns(request)) void admin.handle(request, response);
    else if (dashboard?.owns(request)) void dashboard.handle(request, response);
    else void server.handleHttp(request, response);
  };
  // Before the banner: whoever waits for the banner may stop the server at once, and a SIGTERM that came before the
  // handler would end the process without a drain (upstream children left running).
  if (auth.reload) process.on('SIGHUP', auth.reload);
  onShutdownSignal(logger, async () => {
    // Not ready from now on (the load balancer stops sending); stop accepting connections; requests in flight
    // finish (idle keep-alive sockets close now).
    draining = true;
    listener.close();
    listener.closeIdleConnections();
    dashboard?.close();
    await stop(() => listener.closeAllConnections());
  });
  const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
  process.stderr.write(
    `mcp-tasks: serving http://${shownHost}:${port}/mcp\n` +
      `  data dir: ${settings.dataDir}${dataDirUse(settings.store, settings.dataDir, agreed.source)}\n  store:    ${settings.storeShown}\n  tools:    ${tools.map((tool) => tool.name).join(', ')}\n  roots:    ${settings.roots.join(', ') || '(none)'}\n` +
      `  writable: ${settings.writableRoots.join(', ') || '(none)'}\n` +
      (resolved.config.builtins !== false
        ? `  checks:   ${(resolved.config.checkTargets ?? []).join(', ') || '(no --check-target: check_infrastructure checks files only)'}\n`
        : '') +
      `  denied:   ${deniedLines.join(',\n            ')}\n` +
      (settings.skippedRoots.length > 0 ? `  skipped:  ${settings.skippedRoots.join(', ')}\n` : '') +
      `  auth:     ${auth.describe}\n` +
      `  at rest:  ${settings.encryptionShown}\n` +
      `  executor: ${describeExecutor(settings, executor)}\n` +
      upstreamLines(settings, gateway) +
      `  secret:   ${SECRET_SHOWN[agreed.source]}\n` +
      (auth.scopes.scopedTools().length > 0
        ? `  scopes:   ${auth.scopes
            .scopedTools()
            .map((name) => `${name} needs ${auth.scopes.toolScopes(name).join(' ')}`)
            .join(', ')}\n`
        : '') +
      `  probes:   http://${shownHost}:${port}/healthz, /readyz, /metrics\n` +
      `  tracing:  ${traces.describe}\n` +
      `  admin:    http://${shownHost}:${port}/admin/ (kill-switch, in-flight, operations, audit; ${auth.authenticator ? 'scopes admin:read / admin:write' : 'no --auth: loopback clients only'})\n` +
      (dashboard ? `  dashboard: http://${shownHost}:${port}/dashboard\n` : '') +
      `  ${role}\n`,
  );
}
