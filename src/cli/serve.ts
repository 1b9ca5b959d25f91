import { existsSync, realpathSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { basename, dirname, join, resolve } from 'node:path';
import { TokenFileAuthenticator } from '../auth/token-file.js';
import { serverStatePaths, type ServerStatePath } from '../core/confinement.js';
import type { Logger } from '../core/logger.js';
import type { AnyToolDefinition } from '../core/tool.js';
import { createTasksServer } from '../server/create-tasks-server.js';
import { resolveLimits, type TasksServerLimits } from '../server/options.js';
import { loadServerSecret } from '../server/secret.js';
import { conformanceFixtureTools } from '../tools/fixtures/conformance.js';
import { builtinTools, cleanupLogsTool, isInsideRoots } from '../tools/index.js';
import { createCliLogger } from './logger.js';
import { loadToolModule } from './tool-modules.js';
import { describeStore, openStore, resolveStoreSpec } from './store-spec.js';
import { StartupError, UsageError } from './usage-error.js';

/** Options of `mcp-tasks serve`, as commander parses them. */
export interface ServeOptions {
  port: number;
  host: string;
  dataDir: string;
  /** `--store`: a `postgres://` URL or a SQLite file path (default: `MCP_TASKS_STORE`, else `<dataDir>/tasks.db`). */
  store?: string;
  stdio?: boolean;
  tools: string[];
  builtins: boolean;
  fixtures?: string;
  root: string[];
  /** `--writable-root`: directories tools may delete in (cleanup_logs is registered only when there is one). */
  writableRoot: string[];
  /** `--check-target`: host patterns check_infrastructure may reach (none: files only). */
  checkTarget: string[];
  auth?: string;
  allowRemoteUnauthenticated?: boolean;
  allowedHosts?: string[];
  logLevel: string;
  concurrency?: number;
  leaseMs?: number;
  defaultTtlMs?: number;
  maxTtlMs?: number;
  runtimeLimitMs?: number;
  pollIntervalMs?: number;
  maxAttempts?: number;
  inputTimeoutMs?: number;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);
const LOG_LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** The real path of `target`, also when it does not exist yet: its nearest existing ancestor resolved, the rest appended. */
function realPathOf(target: string): string {
  const absolute = resolve(target);
  if (existsSync(absolute)) return realpathSync(absolute);
  const parent = dirname(absolute);
  return parent === absolute ? absolute : join(realPathOf(parent), basename(absolute));
}

/** Server state with real paths too, to compare with real roots. */
interface DeniedState extends ServerStatePath {
  real: string;
}

/** The denied state a (real) root lies in, if any: such a root could give tools nothing but server state. */
function stateContaining(root: string, denied: readonly DeniedState[]): DeniedState | undefined {
  return denied.find((state) => isInsideRoots(root, [state.real]));
}

/**
 * Roots tools may read: the given ones, else the current directory and `/var/log`; symlinks resolved. A given root
 * inside the server state is a usage error; a default one is left out (and said so in `skipped`).
 */
function resolveRoots(given: readonly string[], denied: readonly DeniedState[], skipped: string[]): string[] {
  const wanted = given.length > 0 ? given : [process.cwd(), '/var/log'];
  const roots: string[] = [];
  for (const root of wanted) {
    const absolute = resolve(root);
    if (!existsSync(absolute)) {
      if (given.length > 0) throw new UsageError(`--root ${root}: no such directory`);
      continue;
    }
    const real = realpathSync(absolute);
    const state = stateContaining(real, denied);
    if (state && given.length > 0) throw new UsageError(`--root ${root} lies inside the ${state.what} ${state.path}, which tools may never read`);
    if (state) skipped.push(`${real} (inside the ${state.what})`);
    else roots.push(real);
  }
  return roots;
}

/** Directories tools may delete in: only those given (none by default), each an existing directory outside the server state; symlinks resolved. */
function resolveWritableRoots(given: readonly string[], denied: readonly DeniedState[]): string[] {
  return given.map((root) => {
    const absolute = resolve(root);
    if (!existsSync(absolute) || !statSync(absolute).isDirectory()) throw new UsageError(`--writable-root ${root}: no such directory`);
    const real = realpathSync(absolute);
    const state = stateContaining(real, denied);
    if (state) throw new UsageError(`--writable-root ${root} lies inside the ${state.what} ${state.path}, which tools may never touch`);
    return real;
  });
}

/** `"<path> (<what>, excluded from root <root>)"` for each denied path, for the start-up log. */
function describeDenied(denied: readonly DeniedState[], roots: readonly string[]): string[] {
  return denied.map((state) => {
    const inside = [...new Set(roots)].filter((root) => isInsideRoots(state.real, [root]));
    return `${state.path} (${state.what}${inside.length > 0 ? `, excluded from root ${inside.join(', ')}` : ''})`;
  });
}

async function loadTools(options: ServeOptions, roots: string[], writableRoots: string[], deniedPaths: string[]): Promise<AnyToolDefinition[]> {
  const tools: AnyToolDefinition[] = [];
  if (options.builtins) {
    try {
      tools.push(...builtinTools({ roots, checkTargets: options.checkTarget }));
    } catch (error) {
      if (error instanceof RangeError) throw new UsageError(error.message);
      throw error;
    }
  }
  if (options.builtins && writableRoots.length > 0) tools.push(cleanupLogsTool({ writableRoots }));
  if (options.fixtures !== undefined) {
    if (options.fixtures !== 'conformance') throw new UsageError(`--fixtures ${options.fixtures}: only "conformance" exists`);
    tools.push(...conformanceFixtureTools());
  }
  for (const specifier of options.tools) tools.push(...(await loadToolModule(specifier, { roots, writableRoots, deniedPaths })));
  return tools;
}

/** The token file of `--auth tokens:<file>`, absolute. */
function tokenFileOf(spec: string): string {
  const [kind, file] = spec.split(/:(.*)/s);
  if (kind !== 'tokens' || !file) throw new UsageError(`--auth ${spec}: expected tokens:<file>`);
  return resolve(file);
}

/** Run a configuration step; its validation error (a `TasksError`) becomes a usage error (exit 64). */
function asUsageError<T>(step: () => T): T {
  try {
    return step();
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** Bind to `port` on `host` before anything durable happens, so a busy or invalid port fails first. */
function listen(http: ReturnType<typeof createServer>, port: number, host: string): Promise<number> {
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
 * `mcp-tasks serve`: check every setting, bind the port, then open the store, start the runtime and serve MCP over
 * HTTP (default) or stdio until SIGINT/SIGTERM. Nothing is written to the data directory before the settings and
 * the port are known to be good.
 * @throws UsageError (exit 64) for invalid settings: a remote bind without authentication or a Host allow-list,
 *   bad limits, token file or tool module, a short `MCP_TASKS_SECRET`, a busy port.
 * @throws StartupError (exit 1) when the store cannot be opened: unreachable, a newer schema, an unusable file.
 */
export async function serve(options: ServeOptions): Promise<void> {
  if (!LOG_LEVELS.has(options.logLevel)) throw new UsageError(`--log-level ${options.logLevel}: expected one of ${[...LOG_LEVELS].join(', ')}`);
  const logger: Logger = createCliLogger(options.logLevel);
  const dataDir = resolve(options.dataDir);
  const storeSpec = resolveStoreSpec(options.store, process.env.MCP_TASKS_STORE, dataDir);
  const storeShown = describeStore(storeSpec);
  const loopback = LOOPBACK.has(options.host);
  if (!options.stdio && !loopback && !options.auth && !options.allowRemoteUnauthenticated) {
    throw new UsageError(`refusing to listen on ${options.host} without --auth; use --auth tokens:<file> or --allow-remote-unauthenticated`);
  }
  if (!options.stdio && !loopback && !options.allowedHosts) {
    throw new UsageError(
      `listening on ${options.host} needs --allowed-hosts <host names clients use to reach this server> (the Host/Origin allow-list that stops DNS rebinding); --allowed-hosts '*' turns the check off`,
    );
  }
  if (options.port > 65535) throw new UsageError(`--port ${options.port}: expected 0–65535`);
  const tokenFile = options.auth === undefined ? undefined : tokenFileOf(options.auth);
  const auth = tokenFile === undefined ? undefined : asUsageError(() => TokenFileAuthenticator.fromFile(tokenFile));
  // The server's own state is denied to every tool whatever the roots (the checks in tools/roots.ts enforce it
  // again on every path): the data directory (store, WAL/SHM, secret), a store elsewhere, the token file.
  const denied: DeniedState[] = serverStatePaths({ dataDir, ...(storeSpec.kind === 'sqlite' ? { storePath: storeSpec.path } : {}), ...(tokenFile === undefined ? {} : { tokenFile }) }).map((state) => ({ ...state, real: realPathOf(state.path) }));
  const deniedPaths = [...new Set(denied.flatMap((state) => [state.path, state.real]))];
  const skippedRoots: string[] = [];
  const roots = resolveRoots(options.root, denied, skippedRoots);
  const writableRoots = resolveWritableRoots(options.writableRoot, denied);
  const tools = await loadTools(options, roots, writableRoots, deniedPaths).catch((error: unknown) => {
    throw error instanceof UsageError ? error : new UsageError(error instanceof Error ? error.message : String(error));
  });
  const limits: Partial<TasksServerLimits> = {
    concurrency: options.concurrency,
    leaseMs: options.leaseMs,
    defaultTtlMs: options.defaultTtlMs,
    maxTtlMs: options.maxTtlMs,
    runtimeLimitMs: options.runtimeLimitMs,
    pollIntervalMs: options.pollIntervalMs,
    maxAttempts: options.maxAttempts,
    inputTimeoutMs: options.inputTimeoutMs,
  };
  asUsageError(() => resolveLimits(limits));
  const envSecret = process.env.MCP_TASKS_SECRET;
  if (envSecret !== undefined && envSecret.length > 0 && Buffer.byteLength(envSecret) < 16) throw new UsageError('MCP_TASKS_SECRET must be at least 16 bytes');
  const hostList = options.allowedHosts?.includes('*') ? null : options.allowedHosts;

  // The port is bound before the store exists (so a busy port fails first); the few requests that could arrive in
  // the milliseconds before the server is ready are told to retry.
  const route: { handle?: (request: IncomingMessage, response: ServerResponse) => void } = {};
  const http = options.stdio
    ? undefined
    : createServer((request, response) => {
        if (route.handle) route.handle(request, response);
        else response.writeHead(503, { 'retry-after': '1' }).end();
      });
  const port = http ? await listen(http, options.port, options.host) : 0;

  const store = await openStore(storeSpec, logger).catch((error: unknown) => {
    http?.close();
    // One line: the store's message says what and why; no stack trace for an operator's configuration problem.
    throw new StartupError(`cannot open the task store ${storeShown}: ${error instanceof Error ? error.message : String(error)}`);
  });
  const server = await createTasksServer({
    tools,
    store,
    secret: loadServerSecret(dataDir),
    ...(auth ? { auth } : {}),
    roots,
    deniedPaths,
    limits,
    ...(loopback ? {} : { allowedHosts: hostList ?? null, allowedOrigins: hostList ?? null }),
    logger,
  });
  const stop = async (): Promise<void> => {
    await server.close();
    await store.close();
  };
  const deniedLines = describeDenied(denied, [...roots, ...writableRoots]);
  logger.info({ deniedPaths: deniedLines, skippedRoots }, 'server state is denied to tools and excluded from every root');

  if (!http) {
    process.stderr.write(`mcp-tasks: serving MCP on stdio (store ${storeShown}, ${tools.length} tools; denied to tools: ${deniedLines.join(', ')})\n`);
    server.serveStdio();
    process.stdin.on('end', () => void stop().then(() => process.exit(0)));
    return;
  }
  route.handle = (request, response) => void server.handleHttp(request, response);
  const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
  process.stderr.write(
    `mcp-tasks: serving http://${shownHost}:${port}/mcp\n` +
      `  data dir: ${dataDir}\n  store:    ${storeShown}\n  tools:    ${tools.map((tool) => tool.name).join(', ')}\n  roots:    ${roots.join(', ') || '(none)'}\n` +
      `  writable: ${writableRoots.join(', ') || '(none)'}\n` +
      (options.builtins ? `  checks:   ${options.checkTarget.join(', ') || '(no --check-target: check_infrastructure checks files only)'}\n` : '') +
      `  denied:   ${deniedLines.join(',\n            ')}\n` +
      (skippedRoots.length > 0 ? `  skipped:  ${skippedRoots.join(', ')}\n` : '') +
      `  auth:     ${auth ? 'bearer tokens' : 'off (one anonymous owner)'}\n`,
  );
  const shutdown = (): void => {
    http.close();
    http.closeAllConnections();
    void stop().then(() => process.exit(0));
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}
