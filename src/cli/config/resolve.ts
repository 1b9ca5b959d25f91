import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';

import { DEFAULT_DRAIN_MS, DEFAULT_LIMITS, DEFAULT_MIN_THREADS, DEFAULT_THREAD_HEAP_MB, DEFAULT_WORKER_ABSENT_MS } from '../../core/limits.js';
import { DEFAULT_UPSTREAM_START_TIMEOUT_MS } from '../../upstream/spec.js';
import { ConfigSchema, type McpTasksConfig } from './schema.js';

/**
 * The one resolver of mcp-tasks configuration. Precedence, highest first: **flag > environment variable > config
 * file > default**. Every setting of {@link ConfigSchema} has one dotted key (`limits.leaseMs`), at most one
 * environment variable (`MCP_TASKS_LEASE_MS`) and at most one flag (`--lease-ms`); pins are file-only (a reviewed
 * file is what they pin). Every invalid value — from any source — is reported at once, each with its source.
 */

/** Where a value came from: `default`, `file <path>`, `env <NAME>` or `flag --<name>`. */
export type SettingSource = 'default' | `file ${string}` | `env ${string}` | `flag --${string}`;

type LeafKind = 'string' | 'number' | 'nullable-number' | 'boolean' | 'list' | 'object';

/** One setting: its key, its kind, and how the environment and the command line name it. */
export interface SettingLeaf {
  /** Dotted key in the file (`limits.leaseMs`). */
  key: string;
  kind: LeafKind;
  env?: string;
  /** The flag as typed (`--lease-ms`). */
  flag?: string;
  /** The commander attribute of the flag (`leaseMs`). */
  attribute?: string;
  /** Masked by `config print`. */
  secret?: boolean;
  /** A file path: relative values in the config file are relative to the file. */
  path?: boolean;
}

const kebab = (name: string): string => name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
const snake = (name: string): string => name.replace(/[A-Z]/g, (letter) => `_${letter}`).toUpperCase();

/** A setting with flag `--kebab(name)` and variable `MCP_TASKS_SNAKE(name)`. */
function leaf(key: string, kind: LeafKind, extra: Partial<SettingLeaf> = {}): SettingLeaf {
  const name = key.split('.').at(-1) as string;
  return { key, kind, env: `MCP_TASKS_${snake(name)}`, flag: `--${kebab(name)}`, attribute: name, ...extra };
}

const LIMIT_KINDS: Record<keyof typeof DEFAULT_LIMITS, LeafKind> = {
  concurrency: 'number',
  leaseMs: 'number',
  defaultTtlMs: 'nullable-number',
  maxTtlMs: 'nullable-number',
  minTtlMs: 'number',
  runtimeLimitMs: 'number',
  pollIntervalMs: 'number',
  maxAttempts: 'number',
  recoveryIntervalMs: 'number',
  claimIntervalMs: 'number',
  sweepIntervalMs: 'number',
  tailIntervalMs: 'number',
  statusFlushIntervalMs: 'number',
  listPageSize: 'number',
  maxRequestBodyBytes: 'number',
  sessionIdleMs: 'number',
  maxSessions: 'number',
  inputTimeoutMs: 'number',
  progressKeepAliveMs: 'number',
  inlineGraceMs: 'number',
  structuredContentMaxBytes: 'number',
  minResultRetentionMs: 'number',
  maxArgumentBytes: 'number',
  maxArgumentDepth: 'number',
  maxActiveTasksPerOwner: 'nullable-number',
  maxCreatesPerMinute: 'nullable-number',
  maxResultBytes: 'number',
  maxStoredResultBytes: 'number',
  idempotencyWindowMs: 'number',
  auditRetentionMs: 'number',
  abortGraceMs: 'number',
};

/** Every setting (a test checks this table against every leaf of {@link ConfigSchema}). */
export const SETTINGS: readonly SettingLeaf[] = Object.freeze([
  leaf('dataDir', 'string', { path: true }),
  leaf('store', 'string', { secret: true, path: true }),
  // No flag: a secret on the command line is visible in the process list.
  { key: 'secret', kind: 'string', env: 'MCP_TASKS_SECRET', secret: true },
  leaf('tools', 'list', { env: 'MCP_TASKS_TOOLS' }),
  { key: 'builtins', kind: 'boolean', env: 'MCP_TASKS_BUILTINS', flag: '--no-builtins', attribute: 'builtins' },
  leaf('fixtures', 'string'),
  // No variable: a list variable splits on commas, which a command line may hold.
  { key: 'upstreams', kind: 'list', flag: '--upstream', attribute: 'upstream' },
  leaf('upstreamStartTimeoutMs', 'number'),
  { key: 'upstreamsAllowDataDir', kind: 'list', flag: '--upstream-allow-data-dir', attribute: 'upstreamAllowDataDir' },
  { key: 'upstreamsForwardIdentity', kind: 'list', flag: '--upstream-forward-identity', attribute: 'upstreamForwardIdentity' },
  { key: 'upstreamTools', kind: 'object' },
  leaf('roots', 'list', { flag: '--root', attribute: 'root', path: true }),
  leaf('writableRoots', 'list', { flag: '--writable-root', attribute: 'writableRoot', path: true }),
  leaf('checkTargets', 'list', { flag: '--check-target', attribute: 'checkTarget' }),
  leaf('taskFallbackTools', 'boolean'),
  leaf('dashboard', 'boolean'),
  ...(['clientId', 'scopes', 'redirectUri', 'secureCookie', 'sessionTtlMs'] as const).map((name): SettingLeaf => {
    const dashed = `dashboard${name[0]?.toUpperCase()}${name.slice(1)}`;
    return {
      ...leaf(`dashboardOptions.${name}`, name === 'secureCookie' ? 'boolean' : name === 'sessionTtlMs' ? 'number' : 'string'),
      env: `MCP_TASKS_${snake(dashed)}`,
      flag: `--${kebab(dashed)}`,
      attribute: dashed,
    };
  }),
  leaf('auth', 'string'),
  ...['issuer', 'audience', 'jwksUrl', 'tenantClaim', 'scopeClaim'].map((name) => leaf(`jwt.${name}`, 'string')),
  ...['jwksMaxAgeMs', 'jwksCooldownMs'].map((name) => leaf(`jwt.${name}`, 'number')),
  leaf('toolScopes', 'list', { flag: '--tool-scope', attribute: 'toolScope' }),
  // No flags: keys on the command line are visible in the process list.
  { key: 'encryptionKey', kind: 'string', env: 'MCP_TASKS_ENCRYPTION_KEY', secret: true },
  { key: 'encryptionKeysOld', kind: 'list', env: 'MCP_TASKS_ENCRYPTION_KEYS_OLD', secret: true },
  leaf('instanceId', 'string'),
  leaf('heartbeatMs', 'number'),
  leaf('workerAbsentMs', 'number'),
  leaf('executor', 'string'),
  leaf('minThreads', 'number'),
  leaf('threadHeapMb', 'number'),
  leaf('logLevel', 'string'),
  leaf('drainMs', 'number'),
  ...Object.entries(LIMIT_KINDS).map(([name, kind]) => leaf(`limits.${name}`, kind)),
  leaf('http.port', 'number'),
  leaf('http.host', 'string'),
  leaf('http.allowedHosts', 'list'),
  leaf('http.allowRemoteUnauthenticated', 'boolean'),
  leaf('worker.healthPort', 'number'),
  leaf('worker.healthHost', 'string'),
  // The OpenTelemetry SDK's own variable names, so a deployment that already sets them needs nothing else.
  leaf('tracing.otlpEndpoint', 'string', { env: 'OTEL_EXPORTER_OTLP_ENDPOINT' }),
  leaf('tracing.serviceName', 'string', { env: 'OTEL_SERVICE_NAME' }),
  leaf('shadow.tools', 'list', { env: 'MCP_TASKS_SHADOW_TOOLS', flag: '--shadow-tool', attribute: 'shadowTool' }),
  leaf('shadow.intervalMs', 'number', { env: 'MCP_TASKS_SHADOW_INTERVAL_MS', flag: '--shadow-interval-ms', attribute: 'shadowIntervalMs' }),
  leaf('shadow.settleChecks', 'number', { env: 'MCP_TASKS_SHADOW_SETTLE_CHECKS', flag: '--shadow-settle-checks', attribute: 'shadowSettleChecks' }),
  ...['protocolVersions', 'allowedTools'].map((name): SettingLeaf => ({ key: `pins.${name}`, kind: 'list' })),
  { key: 'pins.sdk', kind: 'object' },
  ...['maxTtlMs', 'retentionMs'].map((name): SettingLeaf => ({ key: `pins.${name}`, kind: 'nullable-number' })),
  { key: 'pins.concurrency', kind: 'number' },
  { key: 'rollout.fallback', kind: 'string', env: 'MCP_TASKS_KILL_SWITCH_FALLBACK', flag: '--kill-switch-fallback', attribute: 'killSwitchFallback' },
  leaf('rollout.maxSyncMs', 'number'),
  leaf('rollout.killSwitchRefreshMs', 'number'),
  { key: 'rollout.canary', kind: 'object' },
  ...['owner', 'contact'].map((name): SettingLeaf => ({ key: `pins.${name}`, kind: 'string' })),
]);

/** Defaults of the settings that have one outside `limits` (limits default in `core/limits.ts`). */
const DEFAULTS: Record<string, unknown> = {
  dataDir: './data',
  tools: [],
  builtins: true,
  roots: [],
  writableRoots: [],
  checkTargets: [],
  taskFallbackTools: false,
  dashboard: false,
  logLevel: 'info',
  drainMs: DEFAULT_DRAIN_MS,
  upstreamStartTimeoutMs: DEFAULT_UPSTREAM_START_TIMEOUT_MS,
  heartbeatMs: 1000,
  workerAbsentMs: DEFAULT_WORKER_ABSENT_MS,
  executor: 'isolated',
  minThreads: DEFAULT_MIN_THREADS,
  threadHeapMb: DEFAULT_THREAD_HEAP_MB,
  'http.port': 3100,
  'http.host': '127.0.0.1',
  'http.allowRemoteUnauthenticated': false,
  'worker.healthHost': '127.0.0.1',
  'rollout.fallback': 'reject',
  'rollout.maxSyncMs': 30_000,
  'rollout.killSwitchRefreshMs': 500,
  ...Object.fromEntries(Object.entries(DEFAULT_LIMITS).map(([name, value]) => [`limits.${name}`, value])),
};

/** What the resolver reads. */
export interface ConfigSources {
  /** `--config` (else `MCP_TASKS_CONFIG`); none means no file. */
  configFile?: string | undefined;
  env: NodeJS.ProcessEnv;
  /** Flag values by commander attribute — only those typed on the command line (see {@link flagsGiven}). */
  flags: Record<string, unknown>;
}

/** One invalid value. */
export interface ConfigProblem {
  key: string;
  source: SettingSource;
  message: string;
}

/** The effective configuration: values (defaults filled in) and where each came from. */
export interface ResolvedConfig {
  config: McpTasksConfig;
  /** The value of every dotted key that has one. */
  values: Map<string, unknown>;
  sources: Map<string, SettingSource>;
  configFile: string | undefined;
}

/** Raised with every problem at once. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly ConfigProblem[]) {
    super(
      `invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map((problem) => `  - ${problem.key} (${problem.source}): ${problem.message}`).join('\n')}`,
    );
    this.name = 'ConfigError';
  }
}

/** A text from the environment or a flag, as the setting's kind (left as text when it does not parse, so the schema reports it). */
function fromText(kind: LeafKind, text: string): unknown {
  const trimmed = text.trim();
  if (kind === 'number' || kind === 'nullable-number') {
    if (kind === 'nullable-number' && (trimmed === 'null' || trimmed === 'unlimited')) return null;
    return /^-?\d+$/.test(trimmed) ? Number(trimmed) : trimmed;
  }
  if (kind === 'boolean') return ({ true: true, '1': true, false: false, '0': false } as Record<string, boolean>)[trimmed.toLowerCase()] ?? trimmed;
  if (kind === 'list')
    return trimmed === ''
      ? []
      : trimmed
          .split(',')
          .map((item) => item.trim())
          .filter((item) => item.length > 0);
  return text;
}

function getPath(object: unknown, key: string): unknown {
  let current = object;
  for (const part of key.split('.')) {
    if (typeof current !== 'object' || current === null || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

function setPath(object: Record<string, unknown>, key: string, value: unknown): void {
  const parts = key.split('.');
  let current = object;
  for (const part of parts.slice(0, -1)) current = (current[part] ??= {}) as Record<string, unknown>;
  current[parts.at(-1) as string] = value;
}

/** A relative path of the config file, made relative to the file's directory (a URL or `tokens:` spec kept apart). */
function rebase(value: unknown, directory: string): unknown {
  const one = (item: unknown): unknown => {
    if (typeof item !== 'string' || /^[a-z][a-z0-9+.-]*:\/\//i.test(item) || isAbsolute(item)) return item;
    return resolve(directory, item);
  };
  return Array.isArray(value) ? value.map(one) : one(value);
}

function readConfigFile(path: string, problems: ConfigProblem[]): Record<string, unknown> | undefined {
  const source: SettingSource = `file ${path}`;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    problems.push({ key: '--config', source, message: `cannot read: ${(error as NodeJS.ErrnoException).code ?? String(error)}` });
    return undefined;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      problems.push({ key: '--config', source, message: 'expected a JSON object' });
      return undefined;
    }
    return parsed as Record<string, unknown>;
  } catch (error) {
    problems.push({ key: '--config', source, message: `not JSON: ${error instanceof Error ? error.message : String(error)}` });
    return undefined;
  }
}

/** Copy the file's members that no setting took (unknown keys, wrong shapes) into `into`, at every level. */
function carryUnknown(from: Record<string, unknown>, into: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(from)) {
    if (key === '$schema') continue;
    const taken = into[key];
    if (taken === undefined) into[key] = value;
    else if (typeof value === 'object' && value !== null && !Array.isArray(value) && typeof taken === 'object' && taken !== null && !Array.isArray(taken))
      carryUnknown(value as Record<string, unknown>, taken as Record<string, unknown>);
  }
}

/**
 * Resolve the effective configuration (see the module comment).
 * @throws ConfigError listing every invalid value with its key and source (unknown file keys included).
 */
export function resolveConfig(input: ConfigSources): ResolvedConfig {
  const problems: ConfigProblem[] = [];
  const configFile = input.configFile ?? (input.env.MCP_TASKS_CONFIG || undefined);
  const filePath = configFile === undefined ? undefined : resolve(configFile);
  const file = filePath === undefined ? undefined : readConfigFile(filePath, problems);
  const merged: Record<string, unknown> = {};
  const sources = new Map<string, SettingSource>();
  for (const setting of SETTINGS) {
    const flagValue = setting.attribute === undefined ? undefined : input.flags[setting.attribute];
    const envText = setting.env === undefined ? undefined : input.env[setting.env];
    const fileValue = getPath(file, setting.key);
    let value: unknown;
    let source: SettingSource | undefined;
    if (flagValue !== undefined) {
      value = typeof flagValue === 'string' ? fromText(setting.kind, flagValue) : flagValue;
      source = `flag ${setting.flag ?? ''}` as SettingSource;
    } else if (envText !== undefined && envText !== '') {
      value = fromText(setting.kind, envText);
      source = `env ${setting.env}` as SettingSource;
    } else if (fileValue !== undefined && filePath !== undefined) {
      value = setting.path ? rebase(fileValue, dirname(filePath)) : fileValue;
      source = `file ${filePath}`;
    }
    if (source !== undefined) {
      setPath(merged, setting.key, value);
      sources.set(setting.key, source);
    }
  }
  // Unknown keys of the file are reported too (the schema is strict): carry them over for the schema to see.
  if (file) carryUnknown(file, merged);
  const parsed = ConfigSchema.safeParse(merged);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const keys = issue.code === 'unrecognized_keys' ? issue.keys.map((name) => [...issue.path, name].join('.')) : [issue.path.join('.')];
      for (const key of keys) {
        const source = sources.get(key) ?? (filePath ? (`file ${filePath}` as SettingSource) : 'default');
        problems.push({ key: key || '(file)', source, message: issue.code === 'unrecognized_keys' ? 'unknown setting' : issue.message });
      }
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const values = new Map<string, unknown>();
  for (const setting of SETTINGS) {
    const given = getPath(merged, setting.key);
    if (given !== undefined) values.set(setting.key, given);
    else if (setting.key in DEFAULTS) {
      values.set(
        setting.key,
        setting.key === 'limits.recoveryIntervalMs' && values.has('limits.leaseMs') ? values.get('limits.leaseMs') : DEFAULTS[setting.key],
      );
      sources.set(setting.key, 'default');
    }
  }
  const config: Record<string, unknown> = {};
  for (const [key, value] of values) setPath(config, key, value);
  return { config: config as McpTasksConfig, values, sources, configFile: filePath };
}

/**
 * The flag values a user typed (commander's `getOptionValueSource(...) === "cli"`), by attribute: defaults never
 * shadow the environment or the file.
 */
export function flagsGiven(options: Record<string, unknown>, sourceOf: (attribute: string) => string | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(options).filter(([attribute]) => sourceOf(attribute) === 'cli'));
}
