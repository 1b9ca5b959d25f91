// The settings every `serve` and `worker` start resolves, in one place so the two roles cannot drift (the settings
// digest compares them across a deployment): ~500 lines because each setting's rule lives beside its field.
import { createHash } from 'node:crypto';
import { existsSync, realpathSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

import { type ServerStatePath, serverStatePaths } from '../core/confinement.js';
import type { Executor } from '../core/executor.js';
import {
  DEFAULT_DRAIN_MS,
  DEFAULT_MIN_THREADS,
  DEFAULT_THREAD_HEAP_MB,
  DEFAULT_WORKER_ABSENT_MS,
  resolveLimits,
  type TasksServerLimits,
} from '../core/limits.js';
import type { Logger } from '../core/logger.js';
import { composeSettingsDigest } from '../core/process-record.js';
import type { TaskStore } from '../core/store.js';
import type { AnyToolDefinition } from '../core/tool.js';
import { ToolRegistry } from '../core/tool-registry.js';
import { loadToolSources, type ToolSource, toolSourceOf } from '../core/tool-source.js';
import type { WorkerObserver } from '../core/worker-observer.js';
import { InProcessExecutor } from '../execution/in-process-executor.js';
import { IsolatedExecutor } from '../execution/isolated-executor.js';
import { AesGcmFieldCipher, type FieldCipher } from '../store/field-cipher.js';
import { isInsideRoots } from '../tools/roots.js';
import { BUILTIN_TOOL_SOURCE, CONFORMANCE_FIXTURE_SOURCE, VERIFY_FIXTURE_SOURCE } from '../tools/sources.js';
import type { UpstreamToolRules } from '../upstream/policy.js';
import { DEFAULT_UPSTREAM_START_TIMEOUT_MS, parseUpstreamSpec, type UpstreamSpec } from '../upstream/spec.js';
import type { ResolvedConfig } from './config/resolve.js';
import type { McpTasksConfig } from './config/schema.js';
import { createCliLogger } from './logger.js';
import { enforcePins } from './pins.js';
import { describeStore, openStore, resolveStoreSpec, type StoreSpec } from './store-spec.js';
import { StartupError, UsageError } from './usage-error.js';

/**
 * The settings `serve` and `worker` share, resolved by one function so a worker runs tools exactly as the API
 * process would: the store, the server state denied to tools, roots and writable roots, the tool sources, the
 * limits and the drain time. Every problem is a {@link UsageError} (exit 64) reported before anything is written.
 */

/** Server state with real paths too, to compare with real roots. */
export interface DeniedState extends ServerStatePath {
  real: string;
}

/** What {@link resolveSettings} resolved. */
export interface ResolvedSettings {
  /** The effective configuration with the source of each value (`config print` shows it). */
  resolved: ResolvedConfig;
  logger: Logger;
  dataDir: string;
  store: StoreSpec;
  /** The store as the banner shows it (password masked). */
  storeShown: string;
  /** `--auth` token file, absolute. */
  tokenFile: string | undefined;
  /**
   * At-rest encryption of arguments, input requests and answers, and journaled steps (`MCP_TASKS_ENCRYPTION_KEY`;
   * results are not encrypted, see docs/security): every process of a deployment needs the same key, the worker to
   * read arguments.
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
  /**
   * The tools of the tool sources, and — once {@link startConfiguredUpstreams} connected them — the upstreams' tools
   * (listed by the upstreams themselves, so they are known only after a connection).
   */
  tools: AnyToolDefinition[];
  /** `--upstream`: MCP servers whose tools this process forwards (issue 28), parsed. */
  upstreams: UpstreamSpec[];
  /** `upstreamStartTimeoutMs`: longest wait for an upstream's `initialize` and `tools/list` answers (ms). */
  upstreamStartTimeoutMs: number;
  /** `upstreamsAllowDataDir`: stdio upstreams that may be given this server's state as an argument. */
  upstreamsAllowDataDir: string[];
  /** `upstreamsForwardIdentity`: HTTP upstreams that get the caller's identity with each call. */
  upstreamsForwardIdentity: string[];
  /** `upstreamTools`: the policy rules of upstream tools. */
  upstreamRules: UpstreamToolRules;
  /** Limits as given (validated by `resolveLimits`); the library fills in defaults. */
  limits: Partial<TasksServerLimits>;
  /** `--drain-ms`: how long SIGTERM lets runs finish before aborting them with `shutdown`. */
  drainMs: number;
  /** `--executor`. */
  executorMode: 'isolated' | 'in-process';
  /** `--min-threads`: the isolated executor's warm pool. */
  minThreads: number;
  /** `--thread-heap-mb`: heap limit of each tool thread. */
  threadHeapMb: number;
  /**
   * Digest of what must agree across every process of a deployment: roots, writable roots, tool names, the limits
   * a run is held to, and the at-rest key id (see {@link settingsDigest}).
   */
  settingsDigest: string;
  /** `--heartbeat-ms`. */
  heartbeatMs: number;
  /** `--worker-absent-ms`: an API process without a worker is not ready once none was live this long (0: never). */
  workerAbsentMs: number;
  /** `--instance-id`. */
  instanceId: string | undefined;
  /** The server secret when configured (`MCP_TASKS_SECRET` or the file); else `<dataDir>/secret` is used. */
  secret: string | undefined;
}

/** The real path of `target`, also when it does not exist yet: its nearest existing ancestor resolved, the rest appended. */
export function realPathOf(target: string): string {
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
function resolveRoots(given: readonly string[], denied: readonly DeniedState[], skipped: string[], problems: string[]): string[] {
  const wanted = given.length > 0 ? given : [process.cwd(), '/var/log'];
  const roots: string[] = [];
  for (const root of wanted) {
    const absolute = resolve(root);
    if (!existsSync(absolute)) {
      if (given.length > 0) problems.push(`--root ${root}: no such directory`);
      continue;
    }
    const real = realpathSync(absolute);
    const state = stateContaining(real, denied);
    if (state && given.length > 0) problems.push(`--root ${root} lies inside the ${state.what} ${state.path}, which tools may never read`);
    else if (state) skipped.push(`${real} (inside the ${state.what})`);
    else roots.push(real);
  }
  return roots;
}

/** Directories tools may delete in: only those given (none by default), each an existing directory outside the server state; symlinks resolved. */
function resolveWritableRoots(given: readonly string[], denied: readonly DeniedState[], problems: string[]): string[] {
  return given.flatMap((root) => {
    const absolute = resolve(root);
    if (!existsSync(absolute) || !statSync(absolute).isDirectory()) {
      problems.push(`--writable-root ${root}: no such directory`);
      return [];
    }
    const real = realpathSync(absolute);
    const state = stateContaining(real, denied);
    if (state) {
      problems.push(`--writable-root ${root} lies inside the ${state.what} ${state.path}, which tools may never touch`);
      return [];
    }
    return [real];
  });
}

/** The token file of `--auth tokens:<file>`, absolute; none for `--auth jwt` (`serve-auth.ts` checks the rest). */
function tokenFileOf(spec: string, problems: string[]): string | undefined {
  const [kind, file] = spec.split(/:(.*)/s);
  if (kind === 'jwt' && file === undefined) return undefined;
  if (kind !== 'tokens' || !file) {
    problems.push(`--auth ${spec}: expected tokens:<file> or jwt`);
    return undefined;
  }
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

/** The tool sources the configuration names: built-ins unless `builtins: false`, the fixtures, then every tool module. */
function toolSources(config: McpTasksConfig): ToolSource[] {
  const sources: ToolSource[] = [];
  const checkTargets = config.checkTargets ?? [];
  if (config.builtins !== false) sources.push(checkTargets.length > 0 ? { ...BUILTIN_TOOL_SOURCE, options: { checkTargets } } : BUILTIN_TOOL_SOURCE);
  if (config.fixtures === 'conformance') sources.push(CONFORMANCE_FIXTURE_SOURCE);
  else if (config.fixtures === 'verify') sources.push(VERIFY_FIXTURE_SOURCE);
  return [...sources, ...(config.tools ?? []).map((specifier) => toolSourceOf(specifier))];
}

/**
 * The configuration of an operator command (`ops`, `audit`): the same settings as `serve` (store, tools, roots),
 * with logs at `warn` unless a log level was configured, so its output is the answer, not start-up noise.
 */
export function operatorConfig(resolved: ResolvedConfig): ResolvedConfig {
  return resolved.sources.get('logLevel') === 'default' ? { ...resolved, config: { ...resolved.config, logLevel: 'warn' } } : resolved;
}

/**
 * Resolve the shared settings of `serve` and `worker` from the effective configuration (see the module comment).
 * Every problem of the paths and limits is reported at once.
 * @throws UsageError listing a bad `auth`, root, writable root or limit; a tool module that fails to load.
 */
export async function resolveSettings(resolved: ResolvedConfig): Promise<ResolvedSettings> {
  const { config } = resolved;
  const logger = createCliLogger(config.logLevel ?? 'info');
  const problems: string[] = [];
  const dataDir = resolve(config.dataDir ?? './data');
  const store = resolveStoreSpec(config.store, undefined, dataDir);
  const tokenFile = config.auth === undefined ? undefined : tokenFileOf(config.auth, problems);
  // The server's own state is denied to every tool whatever the roots (the checks in tools/roots.ts enforce it
  // again on every path): the data directory (store, WAL/SHM, secret), a store elsewhere, the token file, the
  // configuration file (it may hold the secret, the at-rest key and a store password).
  const denied: DeniedState[] = serverStatePaths({
    dataDir,
    ...(store.kind === 'sqlite' ? { storePath: store.path } : {}),
    ...(tokenFile === undefined ? {} : { tokenFile }),
    ...(resolved.configFile === undefined ? {} : { configFile: resolved.configFile }),
  }).map((state) => ({ ...state, real: realPathOf(state.path) }));
  const deniedPaths = [...new Set(denied.flatMap((state) => [state.path, state.real]))];
  const skippedRoots: string[] = [];
  const roots = resolveRoots(config.roots ?? [], denied, skippedRoots, problems);
  const writableRoots = resolveWritableRoots(config.writableRoots ?? [], denied, problems);
  const upstreams = (config.upstreams ?? []).flatMap((text) => {
    try {
      return [parseUpstreamSpec(text)];
    } catch (error) {
      problems.push(error instanceof Error ? error.message : String(error));
      return [];
    }
  });
  const duplicate = upstreams.find((spec, index) => upstreams.findIndex((other) => other.name === spec.name) !== index);
  if (duplicate) problems.push(`--upstream ${duplicate.name}=… is given twice: each upstream needs a name of its own`);
  const limits: Partial<TasksServerLimits> = { ...config.limits };
  try {
    resolveLimits(limits);
  } catch (error) {
    problems.push(...(error instanceof Error ? error.message : String(error)).split('\n- ').slice(1));
  }
  if (problems.length > 0)
    throw new UsageError(`invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n  - ${problems.join('\n  - ')}`);
  const sources = toolSources(config);
  const tools = await loadToolSources(sources, { roots, writableRoots, deniedPaths }).catch((error: unknown) => {
    throw error instanceof UsageError ? error : new UsageError(error instanceof Error ? error.message : String(error));
  });
  // The at-rest key is configuration too (env or file, never a flag): the cipher reads it as its variables.
  const encryption = asUsageError(() =>
    AesGcmFieldCipher.fromEnvironment({
      ...(config.encryptionKey === undefined ? {} : { MCP_TASKS_ENCRYPTION_KEY: config.encryptionKey }),
      ...(config.encryptionKeysOld === undefined ? {} : { MCP_TASKS_ENCRYPTION_KEYS_OLD: config.encryptionKeysOld.join(',') }),
    }),
  );
  return {
    resolved,
    logger,
    dataDir,
    store,
    storeShown: describeStore(store),
    tokenFile,
    encryption,
    encryptionShown:
      encryption instanceof AesGcmFieldCipher
        ? `AES-256-GCM, key id ${encryption.keyId}${encryption.readOnlyKeyIds.length > 0 ? ` (also reads key ids ${encryption.readOnlyKeyIds.join(', ')})` : ''}`
        : 'off (set MCP_TASKS_ENCRYPTION_KEY to encrypt arguments and answers)',
    denied,
    deniedPaths,
    roots,
    skippedRoots,
    writableRoots,
    toolSources: sources,
    tools,
    upstreams,
    upstreamStartTimeoutMs: config.upstreamStartTimeoutMs ?? DEFAULT_UPSTREAM_START_TIMEOUT_MS,
    upstreamsAllowDataDir: config.upstreamsAllowDataDir ?? [],
    upstreamsForwardIdentity: config.upstreamsForwardIdentity ?? [],
    upstreamRules: config.upstreamTools ?? {},
    limits,
    drainMs: config.drainMs ?? DEFAULT_DRAIN_MS,
    instanceId: config.instanceId,
    secret: config.secret,
    executorMode: config.executor ?? 'isolated',
    minThreads: config.minThreads ?? DEFAULT_MIN_THREADS,
    threadHeapMb: config.threadHeapMb ?? DEFAULT_THREAD_HEAP_MB,
    settingsDigest: settingsDigestOf({ resolved, roots, writableRoots, tools, limits, encryption }),
    heartbeatMs: config.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    workerAbsentMs: config.workerAbsentMs ?? DEFAULT_WORKER_ABSENT_MS,
  };
}

/**
 * The {@link settingsDigest} of resolved settings (with `tools` as they are now: the upstreams' tools join them
 * once connected, see `startConfiguredUpstreams`).
 */
export function settingsDigestOf(settings: Pick<ResolvedSettings, 'resolved' | 'roots' | 'writableRoots' | 'tools' | 'limits' | 'encryption'>): string {
  const { encryption } = settings;
  return settingsDigest({
    roots: settings.roots,
    writableRoots: settings.writableRoots,
    tools: settings.tools,
    checkTargets: settings.resolved.config.checkTargets ?? [],
    limits: resolveLimits(settings.limits),
    keyId: encryption instanceof AesGcmFieldCipher ? encryption.keyId : null,
    oldKeyIds: encryption instanceof AesGcmFieldCipher ? encryption.readOnlyKeyIds : [],
  });
}

/** Interval of the process registry heartbeat (ms); a process counts as gone after three missed beats. */
export const DEFAULT_HEARTBEAT_MS = 1000;

/**
 * The settings digest of the process registry (issue 11 item 2, by field since issue 26 item 7): every setting that
 * changes what a tool may do or how a run is held — roots, writable roots, the tool names, the hosts
 * `check_infrastructure` may reach (`--check-target`), the run limits (lease, runtime limit, attempts, input
 * timeout, abort grace, TTLs, result sizes) and the at-rest key ids (never the keys) — each hashed on its own
 * (see `composeSettingsDigest`), so a refusal names the field that differs. Concurrency, intervals, ports and the
 * data directory are per process and left out.
 */
export function settingsDigest(input: {
  roots: readonly string[];
  writableRoots: readonly string[];
  tools: readonly AnyToolDefinition[];
  checkTargets: readonly string[];
  limits: Readonly<TasksServerLimits>;
  keyId: string | null;
  /**
   * Ids of the keys that only decrypt: a process without one of them cannot run the tasks written with it (their
   * runs fail as `task_unreadable`), so every process must have the same (issue 25's notes, stop 41).
   */
  oldKeyIds?: readonly string[];
}): string {
  const { limits } = input;
  return composeSettingsDigest(
    {
      roots: [...input.roots].sort(),
      writableRoots: [...input.writableRoots].sort(),
      tools: input.tools.map((tool) => tool.name).sort(),
      // How each tool runs (an upstream tool's policy comes from upstreamTools): whichever process runs a call decides
      // whether it is re-run after a crash and how long it may run, so every process must agree.
      toolPolicies: [...input.tools]
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        .map((tool) => [
          tool.name,
          tool.execution,
          tool.idempotent ?? false,
          tool.journaled ?? false,
          tool.elicits ?? false,
          tool.runtimeLimitMs ?? null,
          tool.defaultTtlMs ?? null,
        ]),
      checkTargets: [...input.checkTargets].sort(),
      runLimits: {
        leaseMs: limits.leaseMs,
        runtimeLimitMs: limits.runtimeLimitMs,
        maxAttempts: limits.maxAttempts,
        inputTimeoutMs: limits.inputTimeoutMs,
        abortGraceMs: limits.abortGraceMs,
      },
      ttls: { defaultTtlMs: limits.defaultTtlMs, maxTtlMs: limits.maxTtlMs, minTtlMs: limits.minTtlMs },
      resultSizes: { maxResultBytes: limits.maxResultBytes, maxStoredResultBytes: limits.maxStoredResultBytes },
      keyId: input.keyId,
      oldKeyIds: [...(input.oldKeyIds ?? [])].sort(),
    },
    (text) => createHash('sha256').update(text).digest('hex'),
  );
}

/**
 * The instance id of a process started without `--instance-id`: stable across restarts on one host, so a restarted
 * process takes its predecessor's tasks over at once — `<host>:serve:<port>` (HTTP), `<host>:serve:stdio-<pid>` (one per client),
 * `<host>:worker` or `<host>:worker:<health port>`. More workers on one host without `--instance-id` take further
 * slots of the worker id (see {@link registerCliProcess}).
 */
export function defaultInstanceId(role: 'serve' | 'worker', port?: number | string): string {
  return [hostname(), role, ...(port === undefined ? [] : [String(port)])].join(':');
}

/** Longest `serve` and `worker` wait at start for the warm pool to load the tools (ms). */
const WARM_UP_TIMEOUT_MS = 120_000;

/**
 * The executor `--executor` names, for the resolved tools, ready to run: `isolated` loads the same tool sources in
 * each thread of a pool sized for the worker's slots plus inline calls, and resolves once its warm pool
 * (`--min-threads`) has loaded them; `in-process` runs them on this loop. `observer` counts terminated threads.
 * @throws StartupError (exit 1) when the tool modules fail to load in a thread, or do not load in `warmUpTimeoutMs`.
 */
export async function startConfiguredExecutor(settings: ResolvedSettings, observer?: WorkerObserver, warmUpTimeoutMs = WARM_UP_TIMEOUT_MS): Promise<Executor> {
  if (settings.executorMode === 'in-process') return new InProcessExecutor(new ToolRegistry(settings.tools));
  const limits = resolveLimits(settings.limits);
  const executor = new IsolatedExecutor({
    sources: settings.toolSources,
    moduleOptions: { roots: settings.roots, writableRoots: settings.writableRoots, deniedPaths: settings.deniedPaths },
    maxThreads: limits.concurrency + INLINE_THREADS,
    minThreads: settings.minThreads,
    threadHeapMb: settings.threadHeapMb,
    abortGraceMs: limits.abortGraceMs,
    logger: settings.logger,
    ...(observer ? { observer } : {}),
  });
  try {
    await executor.warm(warmUpTimeoutMs);
  } catch (error) {
    await executor.close();
    throw new StartupError(`cannot start the isolated executor: ${error instanceof Error ? error.message : String(error)}`);
  }
  return executor;
}

/** How the executor is described at start: its mode and, when isolated, its warm pool. */
export function describeExecutor(settings: Pick<ResolvedSettings, 'executorMode' | 'threadHeapMb'>, executor: Executor): string {
  const readiness = executor.readiness?.();
  if (settings.executorMode === 'in-process' || !readiness?.threads) return settings.executorMode;
  const { threads } = readiness;
  return `isolated (${threads.warm} warm ${threads.warm === 1 ? 'thread' : 'threads'} of at most ${threads.max}, tools loaded in ${readiness.warmUpMs ?? '?'} ms each; heap limit ${settings.threadHeapMb} MB per thread)`;
}

/** Threads of the isolated pool beyond the worker's slots, for inline (non-task) calls. */
const INLINE_THREADS = 4;

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

/**
 * Check the configuration's pins against what this process is about to run (installed SDK versions, served
 * protocol versions, registered tools, effective limits).
 * @throws UsageError (exit 64) listing every mismatch, unless `allowUnpinned` (then each is a warning).
 */
export function enforceConfiguredPins(settings: Pick<ResolvedSettings, 'resolved' | 'tools' | 'limits' | 'logger'>, allowUnpinned: boolean): void {
  const limits = resolveLimits(settings.limits);
  enforcePins(
    {
      config: settings.resolved.config,
      tools: settings.tools.map((tool) => tool.name),
      maxTtlMs: limits.maxTtlMs,
      defaultTtlMs: limits.defaultTtlMs,
      concurrency: limits.concurrency,
    },
    allowUnpinned,
    (message) => settings.logger.warn({}, message),
  );
}
