import { existsSync, realpathSync } from 'node:fs';
import { createServer } from 'node:http';
import { resolve, join } from 'node:path';
import { TokenFileAuthenticator } from '../auth/token-file.js';
import type { Logger } from '../core/logger.js';
import type { AnyToolDefinition } from '../core/tool.js';
import { createTasksServer } from '../server/create-tasks-server.js';
import { resolveLimits, type TasksServerLimits } from '../server/options.js';
import { loadServerSecret } from '../server/secret.js';
import { openSqliteTaskStore } from '../store/sqlite/index.js';
import { conformanceFixtureTools } from '../tools/fixtures/conformance.js';
import { builtinTools } from '../tools/index.js';
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
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

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

async function loadTools(options: ServeOptions, roots: string[]): Promise<AnyToolDefinition[]> {
  const tools: AnyToolDefinition[] = [];
  if (options.builtins) tools.push(...builtinTools({ roots }));
  if (options.fixtures !== undefined) {
    if (options.fixtures !== 'conformance') throw new UsageError(`--fixtures ${options.fixtures}: only "conformance" exists`);
    tools.push(...conformanceFixtureTools());
  }
  for (const specifier of options.tools) tools.push(...(await loadToolModule(specifier, { roots, writableRoots: [] })));
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

/**
 * `mcp-tasks serve`: open the store, start the runtime and serve MCP over HTTP (default) or stdio until SIGINT/SIGTERM.
 * @throws UsageError for invalid combinations (e.g. a remote bind without authentication).
 */
export async function serve(options: ServeOptions): Promise<void> {
  const logger: Logger = createCliLogger(options.logLevel);
  const dataDir = resolve(options.dataDir);
  const storePath = process.env.MCP_TASKS_STORE ? resolve(process.env.MCP_TASKS_STORE) : join(dataDir, 'tasks.db');
  const loopback = LOOPBACK.has(options.host);
  if (!options.stdio && !loopback && !options.auth && !options.allowRemoteUnauthenticated) {
    throw new UsageError(`refusing to listen on ${options.host} without --auth; use --auth tokens:<file> or --allow-remote-unauthenticated`);
  }
  let auth: TokenFileAuthenticator | undefined;
  if (options.auth) {
    const [kind, file] = options.auth.split(/:(.*)/s);
    if (kind !== 'tokens' || !file) throw new UsageError(`--auth ${options.auth}: expected tokens:<file>`);
    auth = asUsageError(() => TokenFileAuthenticator.fromFile(resolve(file)));
  }
  const roots = resolveRoots(options.root);
  const tools = await loadTools(options, roots);
  const limits: Partial<TasksServerLimits> = {
    concurrency: options.concurrency,
    leaseMs: options.leaseMs,
    defaultTtlMs: options.defaultTtlMs,
    maxTtlMs: options.maxTtlMs,
    runtimeLimitMs: options.runtimeLimitMs,
    pollIntervalMs: options.pollIntervalMs,
    maxAttempts: options.maxAttempts,
  };
  asUsageError(() => resolveLimits(limits));
  const store = openSqliteTaskStore({ path: storePath, logger });
  const server = await createTasksServer({
    tools,
    store,
    secret: loadServerSecret(dataDir),
    ...(auth ? { auth } : {}),
    roots,
    limits,
    allowedHosts: loopback ? undefined : (options.allowedHosts ?? null),
    allowedOrigins: loopback ? undefined : (options.allowedHosts ?? null),
    logger,
  });
  const stop = async (): Promise<void> => {
    await server.close();
    await store.close();
  };

  if (options.stdio) {
    process.stderr.write(`mcp-tasks: serving MCP on stdio (store ${storePath}, ${tools.length} tools)\n`);
    server.serveStdio();
    process.stdin.on('end', () => void stop().then(() => process.exit(0)));
  } else {
    const http = createServer((request, response) => void server.handleHttp(request, response));
    await new Promise<void>((resolveListen, reject) => {
      http.once('error', reject);
      http.listen(options.port, options.host, () => resolveListen());
    });
    const address = http.address();
    const port = typeof address === 'object' && address ? address.port : options.port;
    const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
    process.stderr.write(
      `mcp-tasks: serving http://${shownHost}:${port}/mcp\n` +
        `  data dir: ${dataDir}\n  store:    ${storePath}\n  tools:    ${tools.map((tool) => tool.name).join(', ')}\n  roots:    ${roots.join(', ') || '(none)'}\n` +
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
}
