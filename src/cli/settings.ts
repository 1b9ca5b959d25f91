import { existsSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { serverStatePaths, type ServerStatePath } from '../core/confinement.js';
import { DEFAULT_DRAIN_MS, resolveLimits, type TasksServerLimits } from '../core/limits.js';
import type { Logger } from '../core/logger.js';
import type { TaskStore } from '../core/store.js';
import type { AnyToolDefinition } from '../core/tool.js';
import { loadToolSources, toolSourceOf, type ToolSource } from '../core/tool-source.js';
import { isInsideRoots } from '../tools/roots.js';
import { BUILTIN_TOOL_SOURCE, CONFORMANCE_FIXTURE_SOURCE, VERIFY_FIXTURE_SOURCE } from '../tools/sources.js';
import { AesGcmFieldCipher, type FieldCipher } from '../store/field-cipher.js';
import { createCliLogger } from './logger.js';
import { describeStore, openStore, resolveStoreSpec, type StoreSpec } from './store-spec.js';
import { StartupError, UsageError } from './usage-error.js';

/**
 * The settings `serve` and `worker` share, resolved by one function so a worker runs tools exactly as the API
 * process would: the store, the server state denied to tools, roots and writable roots, the tool sources, the
 * limits and the drain time. Every problem is a {@link UsageError} (exit 64) reported before anything is written.
 */

/** The flags both commands take, as commander parses them. */
export interface SharedFlags {
  dataDir: string;
  /** `--store`: a `postgres://` URL or a SQLite file path (default: `MCP_TASKS_STORE`, else `<dataDir>/tasks.db`). */
  store?: string;
  tools: string[];
  builtins: boolean;
  fixtures?: string;
  root: string[];
  /** `--writable-root`: directories tools may delete in (cleanup_logs is registered only when there is one). */
  writableRoot: string[];
  /** `--check-target`: host patterns check_infrastructure may reach (none: files only). */
  checkTarget: string[];
  /** `--auth tokens:<file>`: `serve` authenticates with it; for both, the file is server state denied to tools. */
  auth?: string;
  logLevel: string;
  concurrency?: number;
  leaseMs?: number;
  defaultTtlMs?: number;
  maxTtlMs?: number;
  runtimeLimitMs?: number;
  pollIntervalMs?: number;
  maxAttempts?: number;
  inputTimeoutMs?: number;
  minResultRetentionMs?: number;
  drainMs?: number;
  /** `serve` only: argument limits and per-owner quotas (issue 10 §2). */
  maxArgumentBytes?: number;
  maxArgumentDepth?: number;
  maxActiveTasksPerOwner?: number;
  maxCreatesPerMinute?: number;
  /** `--instance-id`: the lease owner id of this process (default: random). */
  instanceId?: string;
}

/** Server state with real paths too, to compare with real roots. */
export interface DeniedState extends ServerStatePath {
  real: string;
}

/** What {@link resolveSettings} resolved. */
export interface ResolvedSettings {
  logger: Logger;
  dataDir: string;
  store: StoreSpec;
  /** The store as the banner shows it (password masked). */
  storeShown: string;
  /** `--auth` token file, absolute. */
  tokenFile: string | undefined;
  /**
   * At-rest encryption of arguments, answers and results (`MCP_TASKS_ENCRYPTION_KEY`): every process of a
   * deployment needs the same key, the worker to read arguments and write results.
   */
  encryption: FieldCipher;
  /** How `encryption` is described at start. */
  encryptionShown: string;
  denied: DeniedState[];
  /** Absolute denied paths, as given and resolved, for every tool context. */
  deniedPaths: string[];
  roots: string[];
  /** Default roots left out because they lie in server state (for the banner). */
  skippedRoots: string[];
  writableRoots: string[];
  /** Where the tools come from (the same list on every process of one deployment). */
  toolSources: ToolSource[];
  tools: AnyToolDefinition[];
  /** Limits as given (validated by `resolveLimits`); the library fills in defaults. */
  limits: Partial<TasksServerLimits>;
  /** `--drain-ms`: how long SIGTERM lets runs finish before aborting them with `shutdown`. */
  drainMs: number;
}

const LOG_LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** The real path of `target`, also when it does not exist yet: its nearest existing ancestor resolved, the rest appended. */
function realPathOf(target: string): string {
  const absolute = resolve(target);
  if (existsSync(absolute)) return realpathSync(absolute);
  const parent = dirname(absolute);
  return parent === absolute ? absolute : join(realPathOf(parent), basename(absolute));
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

/** The token file of `--auth tokens:<file>`, absolute; none for `--auth jwt` (`serve-auth.ts` checks the rest). */
function tokenFileOf(spec: string): string | undefined {
  const [kind, file] = spec.split(/:(.*)/s);
  if (kind === 'jwt' && file === undefined) return undefined;
  if (kind !== 'tokens' || !file) throw new UsageError(`--auth ${spec}: expected tokens:<file> or jwt`);
  return resolve(file);
}

/** Run a configuration step; its validation error (a `TasksError`) becomes a usage error (exit 64). */
export function asUsageError<T>(step: () => T): T {
  try {
    return step();
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** The tool sources the flags name: built-ins unless `--no-builtins`, the fixtures, then every `--tools` module. */
function toolSources(flags: SharedFlags): ToolSource[] {
  const sources: ToolSource[] = [];
  if (flags.builtins) sources.push(flags.checkTarget.length > 0 ? { ...BUILTIN_TOOL_SOURCE, options: { checkTargets: flags.checkTarget } } : BUILTIN_TOOL_SOURCE);
  if (flags.fixtures !== undefined) {
    if (flags.fixtures === 'conformance') sources.push(CONFORMANCE_FIXTURE_SOURCE);
    else if (flags.fixtures === 'verify') sources.push(VERIFY_FIXTURE_SOURCE);
    else throw new UsageError(`--fixtures ${flags.fixtures}: expected "conformance" or "verify"`);
  }
  return [...sources, ...flags.tools.map((specifier) => toolSourceOf(specifier))];
}

/**
 * Resolve the shared settings of `serve` and `worker` (see the module comment).
 * @throws UsageError for a bad log level, `--auth`, root, writable root, tool module or limit.
 */
export async function resolveSettings(flags: SharedFlags): Promise<ResolvedSettings> {
  if (!LOG_LEVELS.has(flags.logLevel)) throw new UsageError(`--log-level ${flags.logLevel}: expected one of ${[...LOG_LEVELS].join(', ')}`);
  const logger = createCliLogger(flags.logLevel);
  const dataDir = resolve(flags.dataDir);
  const store = resolveStoreSpec(flags.store, process.env.MCP_TASKS_STORE, dataDir);
  const tokenFile = flags.auth === undefined ? undefined : tokenFileOf(flags.auth);
  // The server's own state is denied to every tool whatever the roots (the checks in tools/roots.ts enforce it
  // again on every path): the data directory (store, WAL/SHM, secret), a store elsewhere, the token file.
  const denied: DeniedState[] = serverStatePaths({ dataDir, ...(store.kind === 'sqlite' ? { storePath: store.path } : {}), ...(tokenFile === undefined ? {} : { tokenFile }) }).map((state) => ({ ...state, real: realPathOf(state.path) }));
  const deniedPaths = [...new Set(denied.flatMap((state) => [state.path, state.real]))];
  const skippedRoots: string[] = [];
  const roots = resolveRoots(flags.root, denied, skippedRoots);
  const writableRoots = resolveWritableRoots(flags.writableRoot, denied);
  const sources = toolSources(flags);
  const tools = await loadToolSources(sources, { roots, writableRoots, deniedPaths }).catch((error: unknown) => {
    throw error instanceof UsageError ? error : new UsageError(error instanceof Error ? error.message : String(error));
  });
  const limits: Partial<TasksServerLimits> = {
    concurrency: flags.concurrency,
    leaseMs: flags.leaseMs,
    defaultTtlMs: flags.defaultTtlMs,
    maxTtlMs: flags.maxTtlMs,
    runtimeLimitMs: flags.runtimeLimitMs,
    pollIntervalMs: flags.pollIntervalMs,
    maxAttempts: flags.maxAttempts,
    inputTimeoutMs: flags.inputTimeoutMs,
    minResultRetentionMs: flags.minResultRetentionMs,
    maxArgumentBytes: flags.maxArgumentBytes,
    maxArgumentDepth: flags.maxArgumentDepth,
    maxActiveTasksPerOwner: flags.maxActiveTasksPerOwner,
    maxCreatesPerMinute: flags.maxCreatesPerMinute,
  };
  asUsageError(() => resolveLimits(limits));
  const encryption = asUsageError(() => AesGcmFieldCipher.fromEnvironment(process.env));
  return {
    logger,
    dataDir,
    store,
    storeShown: describeStore(store),
    tokenFile,
    encryption,
    encryptionShown: encryption instanceof AesGcmFieldCipher ? `AES-256-GCM, key id ${encryption.keyId}` : 'off (set MCP_TASKS_ENCRYPTION_KEY to encrypt arguments and answers)',
    denied,
    deniedPaths,
    roots,
    skippedRoots,
    writableRoots,
    toolSources: sources,
    tools,
    limits,
    drainMs: flags.drainMs ?? DEFAULT_DRAIN_MS,
  };
}

/** `"<path> (<what>, excluded from root <root>)"` for each denied path, for the start-up log. */
export function describeDenied(settings: Pick<ResolvedSettings, 'denied' | 'roots' | 'writableRoots'>): string[] {
  const roots = [...new Set([...settings.roots, ...settings.writableRoots])];
  return settings.denied.map((state) => {
    const inside = roots.filter((root) => isInsideRoots(state.real, [root]));
    return `${state.path} (${state.what}${inside.length > 0 ? `, excluded from root ${inside.join(', ')}` : ''})`;
  });
}

/**
 * Open (and migrate) the configured store.
 * @throws StartupError (exit 1) with one line: what and why (unreachable, a newer schema, an unusable file).
 */
export async function openConfiguredStore(settings: Pick<ResolvedSettings, 'store' | 'storeShown' | 'logger' | 'encryption'>): Promise<TaskStore> {
  return openStore(settings.store, settings.logger, settings.encryption).catch((error: unknown) => {
    // One line: the store's message says what and why; no stack trace for an operator's configuration problem.
    throw new StartupError(`cannot open the task store ${settings.storeShown}: ${error instanceof Error ? error.message : String(error)}`);
  });
}
