import type { IncomingMessage, ServerResponse } from 'node:http';

import type { OAuthMetadata } from '@modelcontextprotocol/server';
import { serveStdio, type StdioServerHandle } from '@modelcontextprotocol/server/stdio';

import { type Clock, systemClock } from '../core/clock.js';
import { TasksError } from '../core/errors.js';
import { TaskEventFeed } from '../core/event-feed.js';
import type { Executor } from '../core/executor.js';
import { newInstanceId } from '../core/ids.js';
import { resolveLimits, type TasksServerLimits } from '../core/limits.js';
import { type Logger, silentLogger } from '../core/logger.js';
import type { Authenticator } from '../core/owner.js';
import type { RunTracer } from '../core/run-tracer.js';
import { ScopePolicy } from '../core/scopes.js';
import type { TaskStore } from '../core/store.js';
import type { AnyToolDefinition } from '../core/tool.js';
import { ToolRegistry } from '../core/tool-registry.js';
import type { WorkerObserver } from '../core/worker-observer.js';
import { createExecutionParts, type ExecutionParts } from '../execution/create-task-worker.js';
import { InProcessExecutor } from '../execution/in-process-executor.js';
import type { ShadowSettings } from '../execution/shadow-watch.js';
import { StructuredContentBound } from '../execution/structured-content-bound.js';
import { Sweeper } from '../execution/sweeper.js';
import type { TaskWorker } from '../execution/task-worker.js';
import { ErrorCode } from '../protocol/constants.js';
import { FALLBACK_TOOLS } from '../service/calls/fallback-tools.js';
import type { TaskModeGate } from '../service/calls/task-mode-gate.js';
import type { TaskServiceHook } from '../service/hooks.js';
import type { PollObserver } from '../service/poll-throttle.js';
import { ScopeCheck } from '../service/scope-check.js';
import { createTaskServices, type TaskServices } from '../service/services.js';
import type { WorkerPresence } from '../service/worker-presence.js';
import type { HandlerDeps } from './deps.js';
import { createServerFactory } from './factory.js';
import type { ProtectedResource } from './http/bearer-auth.js';
import { FastPath } from './http/fast-path.js';
import { createHttpFront, type HttpFront } from './http/node-handler.js';
import { TaskListenRoute } from './http/task-listen.js';
import type { LegacySessions } from './http/v1-sessions.js';
import { createGatherStateCodec } from './input-gathering.js';
import { ANONYMOUS_IDENTITY } from './request-caller.js';
import { SessionStreams } from './session-streams.js';
import { InputRoutingStdioTransport } from './stdio-transport.js';
import { isJsonRpcResponse, parseInputRequestId, routeInputResponse } from './v1-elicitation.js';

/** The embedded worker of {@link createTasksServer}. */
export interface EmbeddedWorkerOptions {
  /** Runs the tools of task runs. @defaultValue the server's `executor` */
  executor?: Executor;
}

/** Options of {@link createTasksServer}. */
export interface CreateTasksServerOptions {
  /** Tools to serve (see `defineTool`). Names must be unique. */
  tools: readonly AnyToolDefinition[];
  /** Where tasks live (e.g. `openSqliteTaskStore`). The server does not close it. */
  store: TaskStore;
  /** Secret that signs `tasks/list` cursors (see `loadServerSecret`); at least 16 bytes. */
  secret: Buffer;
  /**
   * Bearer-token authentication (`TokenFileAuthenticator`, `TokenFileWatcher`, `JwtAuthenticator`). Without it one
   * `anonymous` owner exists, holding every scope, and v1 `tasks/list` is not offered (R51).
   */
  auth?: Authenticator;
  /**
   * With `auth` verifying tokens of an OAuth authorization server: this server as a protected resource. Tokens must
   * be issued for `resource` (RFC 8707 audience, checked again by the SDK's `expectedResource`), 401/403 challenges
   * carry `resource_metadata`, and the RFC 9728 document is served at `/.well-known/oauth-protected-resource` and
   * its path-suffixed variant. `resource` is the public URL clients use (behind a TLS proxy: the proxy's URL).
   */
  oauth?: { resource: URL; issuer: string };
  /**
   * Scope names: the task scopes and the per-tool scopes (`--tool-scope`). The HTTP front checks the method-level
   * ones (HTTP 403 `insufficient_scope`). @defaultValue no tool scopes
   */
  scopes?: ScopePolicy;
  /** Absolute directories tools may read. @defaultValue [] */
  roots?: readonly string[];
  /**
   * Absolute paths no tool may read or delete whatever the roots: the server's own state (see
   * `serverStatePaths`: the data directory with the store and secret, the token file). Handed to every tool
   * context next to `roots`. @defaultValue []
   */
  deniedPaths?: readonly string[];
  /** Limits and timings; see {@link TasksServerLimits}. */
  limits?: Partial<TasksServerLimits>;
  /**
   * Run tasks in this process too: `true` (the default) or options embeds a worker that claims and runs tasks;
   * `false` makes an API-only server that never holds a lease — its tasks wait for a worker process
   * (`createTaskWorker`, `mcp-tasks worker`) on the same store. @defaultValue true
   */
  worker?: boolean | EmbeddedWorkerOptions;
  /**
   * Runs the tools, inline calls and (unless `worker.executor`) task runs: `IsolatedExecutor` for a worker thread
   * per run, so a blocking tool cannot stall leases or HTTP answers. Not closed by the server.
   * @defaultValue an `InProcessExecutor` of `tools` (closed with the server)
   */
  executor?: Executor;
  /** Sweep expired and timed-out tasks in this process (holds no lease). @defaultValue true */
  sweeper?: boolean;
  /** Run around every task service operation, for every entry path (see `TaskServiceHook`). @defaultValue none */
  hooks?: readonly TaskServiceHook[];
  /** Told about the embedded worker's runs (metrics). @defaultValue none */
  workerObserver?: WorkerObserver;
  /** Traces the embedded worker's runs (see `TasksTracing`); the request spans are a hook of `hooks`. @defaultValue none */
  runTracer?: RunTracer;
  /** Shadow mode of the embedded worker (see `ShadowSettings`). @defaultValue none */
  shadow?: ShadowSettings;
  /**
   * Without an embedded worker: who runs tasks elsewhere (see `WorkerPresence`), so a task no worker can start says
   * "waiting for a worker" in its status. @defaultValue none (statuses as stored)
   */
  workers?: Pick<WorkerPresence, 'view'>;
  /** Told about held-back polls and polls per task (metrics). @defaultValue none */
  pollObserver?: PollObserver;
  /** Host header allow-list for HTTP (DNS-rebinding protection); `null` disables it. @defaultValue localhost names */
  allowedHosts?: string[] | null;
  /** Origin allow-list (host names) for HTTP requests with an `Origin` header. @defaultValue localhost names */
  allowedOrigins?: string[] | null;
  /** @defaultValue a silent logger */
  logger?: Logger;
  /** @defaultValue the system clock */
  clock?: Clock;
  /** Lease owner id of the embedded worker. @defaultValue random */
  instanceId?: string;
  /**
   * Answer the hot task requests (task-creating `tools/call`, `tasks/get`, terminal v1 `tasks/result`) without the
   * SDK's per-request machinery; responses are identical either way. @defaultValue true
   */
  fastPath?: boolean;
  /**
   * Task fallback tools for hosts without task support (a 2025-era session whose client declares no
   * `capabilities.tasks`, or a 2026-07-28 request without the Tasks Extension — issue 27 §4): their calls of
   * task-required tools answer at once with a text result naming the task, which they follow through the
   * synchronous tools `get_task_status`, `get_task_result` and `cancel_task` (owner-bound and hooked like
   * `tasks/get` / `tasks/cancel`). Without it such hosts do not see task-required tools, and a 2026-07-28 call of
   * one is `-32021` (SEP-2663 E6).
   * @defaultValue false
   */
  taskFallbackTools?: boolean;
  /**
   * Who may use task mode for which tool now: the kill switch and canary (issue 15). Refused callers see such a
   * tool as it runs without a task in `tools/list` and get its fallback at `tools/call`. @defaultValue every caller
   */
  gate?: TaskModeGate;
  /** @defaultValue `{ name: "mcp-tasks", version: <package version> }` */
  serverInfo?: { name: string; version: string };
}

/** A running tasks server. */
export interface TasksServer {
  /** Node `http` request handler for the MCP endpoint (`/mcp`). */
  handleHttp(request: IncomingMessage, response: ServerResponse): Promise<void>;
  /**
   * Serve MCP over this process's stdin/stdout (both generations, same tools and store).
   * @param stdout - where the messages go: `process.stdout` by default; `serve --stdio` passes the stream it reserved
   *   for the protocol, so what tools print cannot land among the messages (see `reserveStdoutForProtocol`).
   */
  serveStdio(stdout?: NodeJS.WritableStream): StdioServerHandle;
  /** The task service every entry path goes through (for embedding and tests). */
  readonly service: TaskServices;
  /** The embedded worker, or `undefined` for an API-only server (`worker: false`). */
  readonly worker: TaskWorker | undefined;
  /** The HTTP front (2025 session count, for tests). */
  readonly http: HttpFront;
  /**
   * Stop: end listen streams with their result, drain the worker — stop claiming, let runs finish for up to
   * `drainMs`, abort the rest with `shutdown` and release their leases for another worker — then wait what is left
   * of `drainMs` for HTTP POSTs still in flight (a blocked `tasks/result`), then close the sessions (cutting what is
   * left) and the rest.
   */
  drain(drainMs: number): Promise<void>;
  /** `drain(0)`: every run still going is aborted at once (its lease released for recovery). */
  close(): Promise<void>;
}

const LOCALHOST_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/** The SDK's protected-resource settings for `oauth` (its metadata builder reads only `issuer` of the AS metadata). */
function protectedResource(oauth: { resource: URL; issuer: string }, scopes: ScopePolicy, name: string): ProtectedResource {
  return {
    url: oauth.resource,
    metadata: {
      oauthMetadata: { issuer: oauth.issuer } as OAuthMetadata,
      resourceServerUrl: oauth.resource,
      scopesSupported: scopes.supported(),
      resourceName: name,
    },
  };
}

/**
 * Create a durable MCP tasks server for both protocol generations on one endpoint: the task service, its
 * adapters (HTTP, stdio), and — unless `worker: false` — an embedded worker and the sweeper, started (recovery,
 * leases, TTL sweeper, event tail) before this resolves.
 * @throws TasksError `-32602` for invalid limits (every problem listed), duplicate tool names (also with a task
 *   fallback tool when `taskFallbackTools` is on), an elicting tool
 *   that is not safe to re-run, or a secret shorter than 16 bytes.
 */
export async function createTasksServer(options: CreateTasksServerOptions): Promise<TasksServer> {
  const limits = resolveLimits(options.limits);
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? systemClock;
  const tools = new ToolRegistry(options.tools);
  const shadowing = options.taskFallbackTools ? FALLBACK_TOOLS.find((fallback) => tools.get(fallback.name)) : undefined;
  if (shadowing)
    throw new TasksError(
      ErrorCode.InvalidParams,
      `tool ${shadowing.name} has the name of a task fallback tool; rename it or serve without task fallback tools`,
    );
  if (options.secret.length < 16) throw new TasksError(ErrorCode.InvalidParams, 'the server secret must be at least 16 bytes');
  if (options.oauth && !options.auth) throw new TasksError(ErrorCode.InvalidParams, 'oauth needs auth (the authenticator that verifies its tokens)');
  const confinement = { roots: options.roots ?? [], deniedPaths: options.deniedPaths ?? [] };
  const feed = new TaskEventFeed(options.store, logger);
  const executor = options.executor ?? new InProcessExecutor(tools);
  const embedded = options.worker === false ? undefined : options.worker === true || options.worker === undefined ? {} : options.worker;
  const execution: ExecutionParts | undefined = embedded
    ? createExecutionParts({
        store: options.store,
        tools,
        feed,
        limits,
        instanceId: options.instanceId ?? newInstanceId(),
        confinement,
        executor: embedded.executor ?? executor,
        sweeper: options.sweeper !== false,
        clock,
        logger,
        observer: options.workerObserver,
        tracer: options.runTracer,
        shadow: options.shadow,
      })
    : undefined;
  const sweeper = execution
    ? undefined
    : options.sweeper === false
      ? undefined
      : new Sweeper(
          options.store,
          { sweepIntervalMs: limits.sweepIntervalMs, inputTimeoutMs: limits.inputTimeoutMs, auditRetentionMs: limits.auditRetentionMs },
          clock,
          logger,
        );
  const scopes = options.scopes ?? new ScopePolicy();
  const service = createTaskServices({
    store: options.store,
    tools,
    feed,
    // Inline calls; task runs are bounded in the execution parts (one warning per run either way).
    executor: new StructuredContentBound(executor, { maxBytes: limits.structuredContentMaxBytes, logger, observer: options.workerObserver }),
    ...(execution ? { handOff: execution.worker.handOff } : {}),
    limits,
    confinement,
    clock,
    logger,
    // The scope re-checks run first (outermost): nothing else of an operation happens on stale authority.
    hooks: [new ScopeCheck(scopes, logger), ...(options.hooks ?? [])],
    taskFallbackTools: options.taskFallbackTools === true,
    ...(options.gate ? { gate: options.gate } : {}),
    secret: options.secret,
    ...(options.pollObserver ? { pollObserver: options.pollObserver } : {}),
    ...(options.workers && !execution ? { workers: options.workers } : {}),
  });
  const deps: HandlerDeps = {
    service,
    requestStates: createGatherStateCodec(options.secret),
    sessionNotifiers: new WeakMap(),
    clock,
    logger,
    authEnabled: options.auth !== undefined,
    serverInfo: options.serverInfo ?? { name: 'mcp-tasks', version: '0.1.0' },
  };
  const factory = createServerFactory(deps);
  const sessionStreams = new SessionStreams(feed, options.store.sessions, deps);
  const http = createHttpFront({
    factory,
    maxRequestBodyBytes: limits.maxRequestBodyBytes,
    sessionIdleMs: limits.sessionIdleMs,
    maxSessions: limits.maxSessions,
    sessions: options.store.sessions,
    onSessionStream: (sessionId, server, ownerKey, authInfo) => sessionStreams.attach(sessionId, server, ownerKey, authInfo),
    ...(options.auth
      ? {
          auth: { authenticator: options.auth, scopes, ...(options.oauth ? { resource: protectedResource(options.oauth, scopes, deps.serverInfo.name) } : {}) },
        }
      : {}),
    scopes,
    allowedHosts: options.allowedHosts === undefined ? LOCALHOST_NAMES : options.allowedHosts,
    allowedOrigins: options.allowedOrigins === undefined ? LOCALHOST_NAMES : options.allowedOrigins,
    routeResponse: (identity, message) => routeInputResponse(deps, identity, message),
    taskListen: new TaskListenRoute(deps),
    ...(options.fastPath === false ? {} : { fastPath: (sessions: LegacySessions) => new FastPath(deps, sessions) }),
    logger,
  });
  await feed.start(limits.tailIntervalMs);
  await execution?.start();
  sweeper?.start();
  const stdioHandles: StdioServerHandle[] = [];
  let stopping: Promise<void> | undefined;
  const drain = (drainMs: number): Promise<void> => {
    stopping ??= (async () => {
      const deadline = performance.now() + drainMs;
      // Listen streams never end by themselves; blocking requests in flight are answered as their runs finish.
      http.endStreams();
      await execution?.stop(drainMs);
      // Then the requests still in flight (a blocked tasks/result waits on a run of another worker process, or, in an
      // API-only process, on every run) get what is left of the drain; closing the sessions would cut them unanswered.
      await http.settle(deadline - performance.now());
      await Promise.allSettled(stdioHandles.map((handle) => handle.close()));
      await http.close();
      await sweeper?.close();
      sessionStreams.close();
      feed.close();
      if (!options.executor) await executor.close();
    })();
    return stopping;
  };
  return {
    handleHttp: (request, response) => http.handle(request, response),
    serveStdio(stdout) {
      const transport = new InputRoutingStdioTransport(
        (message) => isJsonRpcResponse(message) && parseInputRequestId(message.id) !== undefined,
        (message) => routeInputResponse(deps, ANONYMOUS_IDENTITY, message),
        (error) => logger.error({ err: error }, 'routing an elicitation reply failed'),
        stdout,
      );
      const handle = serveStdio(factory, { legacy: 'serve', transport, onerror: (error) => logger.debug({ err: error }, 'stdio error') });
      stdioHandles.push(handle);
      return handle;
    },
    service,
    worker: execution?.worker,
    http,
    drain,
    close: () => drain(0),
  };
}
