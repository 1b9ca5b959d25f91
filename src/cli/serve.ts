import { existsSync, realpathSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { resolve, join } from 'node:path';
import { TokenFileAuthenticator } from '../auth/token-file.js';
import type { Logger } from '../core/logger.js';
import type { AnyToolDefinition } from '../core/tool.js';
import { createTasksServer } from '../server/create-tasks-server.js';
import { resolveLimits, type TasksServerLimits } from '../server/options.js';
import { loadServerSecret } from '../server/secret.js';
import { openSqliteTaskStore } from '../store/sqlite/index.js';
import { conformanceFixtureTools } from '../tools/fixtures/conformance.js';
import { verifyFixtureTools } from '../tools/fixtures/verify.js';
import { builtinTools, cleanupLogsTool } from '../tools/index.js';
import { createCliLogger } from './logger.js';
import { loadToolModule } from './tool-modules.js';
import { UsageError } from './usage-error.js';

/** Options of `mcp-tasks serve`, as commander parses them. */
export interface ServeOptions {
  port: number;
  host: string;
  dataDir: string;
  stdio?: boolean;
  tools: string[];
  builtins: boolean;
  fixtures?: string;
  root: string[];
  /** `--writable-root`: directories tools may delete in (cleanup_logs is registered only when there is one). */
  writableRoot: string[];
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

/** Roots tools may read: the given ones, else the current directory and `/var/log`; symlinks resolved. */
function resolveRoots(given: readonly string[]): string[] {
  const wanted = given.length > 0 ? given : [process.cwd(), '/var/log'];
  const roots: string[] = [];
  for (const root of wanted) {
    const absolute = resolve(root);
    if (!existsSync(absolute)) {
      if (given.length > 0) throw new UsageError(`--root ${root}: no such directory`);
      continue;
    }
    roots.push(realpathSync(absolute));
  }
  return roots;
}

/** Directories tools may delete in: only those given (none by default), each an existing directory; symlinks resolved. */
function resolveWritableRoots(given: readonly string[]): string[] {
  return given.map((root) => {
    const absolute = resolve(root);
    if (!existsSync(absolute) || !statSync(absolute).isDirectory()) throw new UsageError(`--writable-root ${root}: no such directory`);
    return realpathSync(absolute);
  });
}

async function loadTools(options: ServeOptions, roots: string[], writableRoots: string[]): Promise<AnyToolDefinition[]> {
  const tools: AnyToolDefinition[] = [];
  if (options.builtins) tools.push(...builtinTools({ roots }));
  if (options.builtins && writableRoots.length > 0) tools.push(cleanupLogsTool({ writableRoots }));
  if (options.fixtures !== undefined) {
    if (options.fixtures === 'conformance') tools.push(...conformanceFixtureTools());
    else if (options.fixtures === 'verify') tools.push(...verifyFixtureTools());
    else throw new UsageError(`--fixtures ${options.fixtures}: expected "conformance" or "verify"`);
  }
  for (const specifier of options.tools) tools.push(...(await loadToolModule(specifier, { roots, writableRoots })));
  return tools;
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
 */
export async function serve(options: ServeOptions): Promise<void> {
  if (!LOG_LEVELS.has(options.logLevel)) throw new UsageError(`--log-level ${options.logLevel}: expected one of ${[...LOG_LEVELS].join(', ')}`);
  const logger: Logger = createCliLogger(options.logLevel);
  const dataDir = resolve(options.dataDir);
  const storePath = process.env.MCP_TASKS_STORE ? resolve(process.env.MCP_TASKS_STORE) : join(dataDir, 'tasks.db');
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
  let auth: TokenFileAuthenticator | undefined;
  if (options.auth) {
    const [kind, file] = options.auth.split(/:(.*)/s);
    if (kind !== 'tokens' || !file) throw new UsageError(`--auth ${options.auth}: expected tokens:<file>`);
    auth = asUsageError(() => TokenFileAuthenticator.fromFile(resolve(file)));
  }
  const roots = resolveRoots(options.root);
  const writableRoots = resolveWritableRoots(options.writableRoot);
  const tools = await loadTools(options, roots, writableRoots).catch((error: unknown) => {
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

  const store = openSqliteTaskStore({ path: storePath, logger });
  const server = await createTasksServer({
    tools,
    store,
    secret: loadServerSecret(dataDir),
    ...(auth ? { auth } : {}),
    roots,
    limits,
    ...(loopback ? {} : { allowedHosts: hostList ?? null, allowedOrigins: hostList ?? null }),
    logger,
  });
  const stop = async (): Promise<void> => {
    await server.close();
    await store.close();
  };

  if (!http) {
    process.stderr.write(`mcp-tasks: serving MCP on stdio (store ${storePath}, ${tools.length} tools)\n`);
    server.serveStdio();
    process.stdin.on('end', () => void stop().then(() => process.exit(0)));
    return;
  }
  route.handle = (request, response) => void server.handleHttp(request, response);
  const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
  process.stderr.write(
    `mcp-tasks: serving http://${shownHost}:${port}/mcp\n` +
      `  data dir: ${dataDir}\n  store:    ${storePath}\n  tools:    ${tools.map((tool) => tool.name).join(', ')}\n  roots:    ${roots.join(', ') || '(none)'}\n` +
      `  writable: ${writableRoots.join(', ') || '(none)'}\n` +
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
