import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { drainingWorker, type ProcessRecord, settingsDifference, settingsVersionGap, takesTasks } from '../core/process-record.js';
import { mayStartOn, type SchemaCompatibility } from '../core/schema-compatibility.js';
import { secretMatchesVerifier } from '../server/signing-key.js';
import { type ConfiguredKeyIds, type DiagnosedSecret, keysNotConfigured, type StoreDiagnosis } from '../store/diagnosis.js';
import { AesGcmFieldCipher } from '../store/field-cipher.js';
import type { ResolvedConfig } from './config/resolve.js';
import { cliCommand } from './invocation.js';
import { describeStore, resolveStoreSpec, type StoreSpec } from './store-spec.js';

/**
 * `mcp-tasks doctor [--store URL] [--check-threads]`: check a deployment's store from the outside, reading only
 * (issue 11 item 10), and on request whether the configured tools load in the isolated executor's threads (issue
 * 22). One line per finding, `ok` or `FAIL`; exit 0 when every finding is ok, 1 otherwise. What the next `serve` or
 * `worker` start creates by itself — a SQLite file not made yet, an empty database, an older schema — is reported
 * `ok` with what will happen (issue 26 item 8); so is a newer schema whose newer migrations are all marked compatible
 * (this mcp-tasks runs on it: a rolling deploy); a newer schema with a breaking one, or a foreign one, is a FAIL.
 */

/** Options of `mcp-tasks doctor`, as commander parses them. */
export interface DoctorOptions {
  /** Largest tolerated difference between this host's clock and the database's (ms). */
  maxSkewMs: number;
  /** `--check-threads`: also start the warm pool with the configured tools. */
  checkThreads?: boolean;
  /** `--check-upstreams`: also connect to the configured upstreams and list their tools. */
  checkUpstreams?: boolean;
}

/** One line of the report. */
export interface Finding {
  ok: boolean;
  check: 'store' | 'schema' | 'clock' | 'tasks' | 'events' | 'processes' | 'settings' | 'secret' | 'keys' | 'threads' | 'upstream';
  message: string;
}

async function diagnose(spec: StoreSpec): Promise<StoreDiagnosis> {
  if (spec.kind === 'sqlite') return (await import('../store/sqlite/diagnosis.js')).diagnoseSqliteStore(spec.path);
  return (await import('../store/postgres/diagnosis.js')).diagnosePostgresStore(spec.url);
}

/** This host's server secret as a `serve` or `worker` started here would bring it, judged against the store's record. */
export interface LocalSecret {
  /** Where it comes from, for the message: `MCP_TASKS_SECRET` or the data directory's file. */
  shown: string;
  /** Whether it is the one the store's digest was made of. */
  matches: boolean;
}

/**
 * This host's secret (`MCP_TASKS_SECRET`, else an existing `<dataDir>/secret` on SQLite: never created here) judged
 * against a verifier record; `undefined` when there is nothing to judge (no record, a kept secret, no local secret).
 */
export function localSecretOf(
  record: DiagnosedSecret | null,
  spec: StoreSpec,
  dataDir: string,
  configured: { secret: string | undefined; shown: string } = { secret: process.env.MCP_TASKS_SECRET, shown: 'MCP_TASKS_SECRET' },
): LocalSecret | undefined {
  if (record?.mode !== 'verifier') return undefined;
  const { secret } = configured;
  if (secret !== undefined && secret.length > 0) return { shown: configured.shown, matches: secretMatchesVerifier(Buffer.from(secret, 'utf8'), record) };
  const file = join(dataDir, 'secret');
  if (spec.kind !== 'sqlite' || !existsSync(file)) return undefined;
  return { shown: file, matches: secretMatchesVerifier(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64url'), record) };
}

/** The `secret` finding: how the store's instances agree on the server secret, and whether this host's fits. */
function secretFinding(record: DiagnosedSecret | null, local: LocalSecret | undefined): Finding {
  if (record === null) return { ok: true, check: 'secret', message: 'no server secret recorded yet: the first serve or worker start records it' };
  if (record.mode === 'kept') {
    return {
      ok: true,
      check: 'secret',
      message:
        'kept in the store (PostgreSQL without MCP_TASKS_SECRET): every instance signs with it; an instance started with MCP_TASKS_SECRET must be given that same value',
    };
  }
  if (local === undefined) {
    // Not a FAIL: doctor may run on a host that starts nothing. A serve started here as it is would be refused.
    return {
      ok: true,
      check: 'secret',
      message:
        'instances bring their own secret (MCP_TASKS_SECRET or <data dir>/secret); the store keeps a salted digest and refuses one that differs. This host has none (no MCP_TASKS_SECRET, no data-directory secret): a serve or worker started here like this would be refused; set MCP_TASKS_SECRET here to check it',
    };
  }
  return local.matches
    ? { ok: true, check: 'secret', message: `this host's secret (${local.shown}) is the one the store's instances use` }
    : {
        ok: false,
        check: 'secret',
        message: `this host's secret (${local.shown}) differs from the one the store's instances use: a serve or worker started here is refused; give every instance the same MCP_TASKS_SECRET`,
      };
}

/**
 * The `schema` line: what `judgeSchema` found, and what the next `serve` or `worker` start of this mcp-tasks does
 * with it. A newer schema whose newer migrations are all marked compatible is `ok` (a rolling deploy's newer code
 * migrated it, or this host is the one to roll back to); one with a breaking or unmarked newer migration, or a
 * foreign history, FAILs with the verdict's reason.
 */
function schemaMessage(schema: SchemaCompatibility): string {
  const { applied, expected } = schema;
  switch (schema.state) {
    case 'current':
      return `schema version ${applied}, as this mcp-tasks expects`;
    case 'empty':
      return `no schema yet (a fresh database): the first serve or worker start creates it (version ${expected})`;
    case 'older':
      return `schema version ${applied} is older than this mcp-tasks (${expected}): the next serve or worker start migrates it`;
    case 'newer-compatible':
      return `schema version ${applied} is newer than this mcp-tasks knows (${expected}); every newer migration (${schema.newer.join(', ')}) is marked compatible: this mcp-tasks starts and is ready on it (a rolling deploy, or a rollback)`;
    default:
      return schema.problem ?? `schema version ${applied} is not one this mcp-tasks runs on`;
  }
}

/** The `schema` line when a start of this mcp-tasks would refuse to migrate: a breaking migration, processes live. */
function pendingBreakingMessage(schema: SchemaCompatibility, live: number): string {
  const migration = schema.pendingBreaking!;
  return `schema version ${schema.applied} is older than this mcp-tasks (${schema.expected}), and migration ${migration.version} ("${migration.name}") is breaking for older code while ${live} process${live === 1 ? ' is' : 'es are'} live on the store: a serve or worker start of this mcp-tasks refuses to migrate until they stop (docs/operations/upgrades.md)`;
}

/** The findings of one diagnosis (see the module comment); pure but for the secret's digest, for tests of each rule. */
export function findingsOf(d: StoreDiagnosis, maxSkewMs: number, local?: LocalSecret, keys?: LocalKeys | string): Finding[] {
  const findings: Finding[] = [];
  const live = d.processes.filter((process) => process.live);
  // A breaking migration pending while processes run: the next start refuses to apply it (assertNoLiveProcessesFor).
  const blocked = d.schema.pendingBreaking !== undefined && live.length > 0;
  findings.push({
    ok: mayStartOn(d.schema) && !blocked,
    check: 'schema',
    message: blocked ? pendingBreakingMessage(d.schema, live.length) : schemaMessage(d.schema),
  });
  const skew = d.storeNow - d.hostNow;
  findings.push({
    ok: Math.abs(skew) <= maxSkewMs,
    check: 'clock',
    message: `store clock ${skew >= 0 ? '+' : ''}${skew} ms from this host's (at most ±${maxSkewMs} ms; leases and expiry use the store's clock)`,
  });
  // A draining worker is live (it still renews its registration while it finishes or hands back its runs) but takes
  // no new task: counted apart, or a task it will never take looks served (a newcomer's two SIGTERMed workers).
  const workers = live.filter(takesTasks);
  const draining = live.filter(drainingWorker);
  const stuck = d.waitingForWorker > 0 && workers.length === 0;
  const start = `start ${cliCommand()} worker (or serve without --no-worker)${workerKeyAdvice(d, keys)}`;
  findings.push({
    ok: !stuck,
    check: 'tasks',
    message: !stuck
      ? `${waiting(d.waitingForWorker)} for a worker; ${workers.length} live worker ${workers.length === 1 ? 'process' : 'processes'} (live: registration renewed within its lifetime — a killed one counts for a few seconds more)${draining.length > 0 ? `; not counted: ${drainingList(draining, d.storeNow)} (a draining worker takes no new task)` : ''}`
      : draining.length > 0
        ? `${waiting(d.waitingForWorker)} for a worker; no worker takes tasks (${drainingList(draining, d.storeNow)}): ${start}`
        : `${waiting(d.waitingForWorker)} with a lapsed or no lease and no live worker is registered: ${start}`,
  });
  findings.push({
    ok: d.orphanedEvents === 0,
    check: 'events',
    message:
      d.orphanedEvents === 0
        ? 'no orphaned events'
        : `${d.orphanedEvents} events belong to tasks that no longer exist (retention deletes them with their task)`,
  });
  const lapsed = d.processes.filter((process) => !process.live);
  findings.push({
    ok: true,
    check: 'processes',
    message: `${live.length} live (${live.map((process) => `${process.instanceId} ${process.role}${process.drainingSince === null ? '' : ` ${drainingFor(process.drainingSince, d.storeNow)}`}`).join(', ') || 'none'})${lapsed.length > 0 ? `; ${lapsed.length} lapsed, reaped by the next live process (${lapsed.map((process) => process.instanceId).join(', ')})` : ''}`,
  });
  const digests = new Map<string, string[]>();
  for (const process of live) digests.set(process.settingsDigest, [...(digests.get(process.settingsDigest) ?? []), process.instanceId]);
  const differing = pairwise([...digests.keys()], settingsDifference);
  const versionGap = pairwise([...digests.keys()], settingsVersionGap);
  const listed = (): string => [...digests].map(([digest, ids]) => `${ids.join(', ')} (${digest})`).join(' vs ');
  findings.push({
    ok: differing.length === 0,
    check: 'settings',
    message:
      digests.size <= 1
        ? `live processes share one settings digest${digests.size === 1 ? ` (${[...digests.keys()][0]})` : ''}`
        : differing.length > 0
          ? `settings differ in ${differing.join(', ')}: ${listed()} — roots, writable roots, tools, check targets, run limits and the at-rest keys must match`
          : `live processes agree on every setting they share; they run different versions, so ${versionGap.join(', ')} ${versionGap.length === 1 ? 'is' : 'are'} compared once all run the same one: ${listed()}`,
  });
  findings.push(secretFinding(d.serverSecret, local));
  if (typeof keys === 'string') findings.push({ ok: false, check: 'keys', message: keys });
  else if (keys) findings.push(keysFinding(d.unfinishedByKeyId, keys));
  return findings;
}

/**
 * What the `tasks` line adds to "start a worker" when a worker started with this host's at-rest keys would refuse
 * to start (see {@link keysFinding}): a malformed key, no key at all, or no key for some unfinished task's data.
 * Empty otherwise (and when the keys were not checked).
 */
function workerKeyAdvice(d: StoreDiagnosis, keys: LocalKeys | string | undefined): string {
  if (typeof keys === 'string') return " — where the deployment's at-rest keys are set: this host's are unusable (see the keys line)";
  if (keys === undefined || keysNotConfigured(d.unfinishedByKeyId, keys).length === 0) return '';
  if (keys.current === null) return " — where the deployment's at-rest keys are set: one started here, without a key, refuses to start (see the keys line)";
  return " — with the at-rest keys the keys line names: one with this host's keys refuses to start unless given --fail-unreadable-tasks, which fails those tasks";
}

/** "draining for 12 s": how long a process has drained, on the store's clock (both times epoch ms). */
function drainingFor(since: number, storeNow: number): string {
  return `draining for ${Math.max(0, Math.round((storeNow - since) / 1000))} s`;
}

/** "2 draining: w-1 for 12 s, w-2 for 3 s": the draining workers of the tasks line. */
function drainingList(draining: readonly ProcessRecord[], storeNow: number): string {
  const each = draining.map((process) => `${process.instanceId} for ${Math.max(0, Math.round((storeNow - (process.drainingSince ?? storeNow)) / 1000))} s`);
  return `${draining.length} draining: ${each.join(', ')}`;
}

/** "1 working task waits" / "n working tasks wait". */
function waiting(n: number): string {
  return `${n} working ${n === 1 ? 'task waits' : 'tasks wait'}`;
}

/** This host's at-rest key ids as `serve` and `worker` would start with them (none without a key). */
export type LocalKeys = ConfiguredKeyIds;

/**
 * The at-rest keys of this host's configuration, or the one-line reason they are unusable (a malformed key: the
 * message names the variable, never the value).
 */
export function localKeysOf(config: ResolvedConfig['config']): LocalKeys | string {
  try {
    return AesGcmFieldCipher.keyIdsOf(
      AesGcmFieldCipher.fromEnvironment({
        ...(config.encryptionKey === undefined ? {} : { MCP_TASKS_ENCRYPTION_KEY: config.encryptionKey }),
        ...(config.encryptionKeysOld === undefined ? {} : { MCP_TASKS_ENCRYPTION_KEYS_OLD: config.encryptionKeysOld.join(',') }),
      }),
    );
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/**
 * The `keys` finding (stop 41, a newcomer's question "is the old key safe to drop?"): unfinished tasks by the key id
 * their data is encrypted with, against this host's keys. FAIL when some are under a key this host does not have —
 * a `serve` or `worker` started with these keys refuses to start (see `checkKeysCoverUnfinishedTasks`); says which
 * read-only keys no unfinished task uses (they can be dropped).
 */
export function keysFinding(inUse: StoreDiagnosis['unfinishedByKeyId'], keys: LocalKeys): Finding {
  const missing = keysNotConfigured(inUse, keys);
  const role = (keyId: string): string =>
    keyId === keys.current ? 'current' : missing.some((entry) => entry.keyId === keyId) ? 'NOT CONFIGURED here' : 'read only';
  const tasks = (n: number): string => `${n} unfinished ${n === 1 ? 'task' : 'tasks'}`;
  const listed =
    inUse.map((entry) => `key id ${entry.keyId} (${role(entry.keyId)}): ${tasks(entry.taskIds.length)}`).join('; ') +
    (inUse.length > 1 ? ' (a task with data under two keys counts under each)' : '');
  const unused = keys.readOnly.filter((keyId) => !inUse.some((entry) => entry.keyId === keyId));
  const droppable =
    unused.length === 0
      ? ''
      : `; read-only key ${unused.length === 1 ? `id ${unused.join('')} holds` : `ids ${unused.join(', ')} hold`} no unfinished task's data: ${unused.length === 1 ? 'it' : 'they'} can be dropped (every process together)`;
  // A host with no key at all (an operator's, a monitor's) is no fault of the deployment, as on the secret line; a
  // serve or worker started there refuses to start (see `checkKeysCoverUnfinishedTasks`), and the line says so.
  if (missing.length > 0 && keys.current === null)
    return {
      ok: true,
      check: 'keys',
      message: `${listed} — this host has no at-rest key: a serve or worker started like this refuses to start; set MCP_TASKS_ENCRYPTION_KEY and MCP_TASKS_ENCRYPTION_KEYS_OLD as the deployment has them to check them`,
    };
  if (missing.length > 0)
    return {
      ok: false,
      check: 'keys',
      message: `${listed} — a serve or worker with this host's keys refuses to start (it would fail those tasks for good, task_unreadable): keep their keys in MCP_TASKS_ENCRYPTION_KEYS_OLD, or start with --fail-unreadable-tasks to give those tasks up${droppable}`,
    };
  return { ok: true, check: 'keys', message: `${inUse.length === 0 ? 'no unfinished task holds encrypted data' : listed}${droppable}` };
}

/** Longest the threads check waits for the warm pool (ms). */
const THREADS_CHECK_TIMEOUT_MS = 60_000;

/**
 * The `threads` finding: start the isolated executor as `serve` would with `resolved` (its tools, warm pool and heap
 * limit), wait for its warm pool, and report what it took — or why the tools do not load in a thread.
 */
export async function threadsFinding(resolved: ResolvedConfig): Promise<Finding> {
  const { resolveSettings, startConfiguredExecutor } = await import('./settings.js');
  const rssBefore = process.memoryUsage().rss;
  try {
    const settings = await resolveSettings({ ...resolved, config: { ...resolved.config, logLevel: 'silent' } });
    const executor = await startConfiguredExecutor({ ...settings, executorMode: 'isolated' }, undefined, THREADS_CHECK_TIMEOUT_MS);
    const readiness = executor.readiness?.();
    const warm = readiness?.threads?.warm ?? 0;
    const perThreadMb = Math.max(0, Math.round((process.memoryUsage().rss - rssBefore) / 2 ** 20 / Math.max(1, warm)));
    await executor.close();
    return {
      ok: true,
      check: 'threads',
      message: `${settings.tools.length} ${settings.tools.length === 1 ? 'tool loads' : 'tools load'} in a worker thread: ${warm} warm ${warm === 1 ? 'thread' : 'threads'}, ${readiness?.warmUpMs ?? '?'} ms each to start and load them, about ${perThreadMb} MB each (heap limit ${settings.threadHeapMb} MB)`,
    };
  } catch (error) {
    return { ok: false, check: 'threads', message: (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? 'unknown error' };
  }
}

/**
 * The `upstream` findings (issue 28): connect to every configured upstream as `serve` would (the same start, data-dir
 * check and timeout), one line per upstream with the tools it lists here, then close every connection (stdio
 * children end). An upstream that cannot be started is one `FAIL` line saying why.
 */
export async function upstreamFindings(resolved: ResolvedConfig): Promise<Finding[]> {
  const { resolveSettings } = await import('./settings.js');
  const { startConfiguredUpstreams } = await import('./upstream-settings.js');
  const { describeUpstream } = await import('../upstream/spec.js');
  try {
    const settings = await resolveSettings({ ...resolved, config: { ...resolved.config, logLevel: 'silent' } });
    if (settings.upstreams.length === 0)
      return [{ ok: true, check: 'upstream', message: 'no upstream configured (--upstream, or upstreams in the configuration file)' }];
    const startedAt = Date.now();
    const { gateway } = await startConfiguredUpstreams(settings);
    const ms = Date.now() - startedAt;
    const statuses = gateway?.statuses() ?? [];
    await gateway?.close();
    return settings.upstreams.map((spec, index) => {
      const tools = statuses[index]?.tools ?? 0;
      return { ok: true, check: 'upstream', message: `${describeUpstream(spec)}: started in ${ms} ms, ${tools} ${tools === 1 ? 'tool' : 'tools'} listed` };
    });
  } catch (error) {
    return [{ ok: false, check: 'upstream', message: (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? 'unknown error' }];
  }
}

/** Run the checks and print one line per finding; resolves with the exit code. */
export async function doctor(options: DoctorOptions, resolved: ResolvedConfig): Promise<number> {
  // The store, the data directory and the secret as `serve` and `worker` resolve them: flags, environment, the file.
  const { config } = resolved;
  const dataDir = config.dataDir ?? './data';
  const spec = resolveStoreSpec(config.store, undefined, dataDir);
  const secretSource = resolved.sources.get('secret');
  const configured = {
    secret: config.secret,
    shown: secretSource?.startsWith('file ') ? `the secret of ${secretSource.slice('file '.length)}` : 'MCP_TASKS_SECRET',
  };
  const shown = describeStore(spec);
  let findings: Finding[];
  if (spec.kind === 'sqlite' && !existsSync(spec.path) && existsSync(dirname(spec.path))) {
    // Nothing to diagnose, nothing wrong: serve and worker create the file. A wrong path looks the same, so say it.
    findings = [
      {
        ok: true,
        check: 'store',
        message: `${shown} does not exist yet: the first serve or worker start creates it (if you expected a store there, check the path)`,
      },
    ];
  } else {
    try {
      const diagnosis = await diagnose(spec);
      const local = localSecretOf(diagnosis.serverSecret, spec, dataDir, configured);
      const keys = localKeysOf(config);
      findings = [{ ok: true, check: 'store', message: `${shown} is reachable` }, ...findingsOf(diagnosis, options.maxSkewMs, local, keys)];
    } catch (error) {
      findings = [
        { ok: false, check: 'store', message: `${shown} cannot be read: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]}` },
      ];
    }
  }
  if (options.checkThreads) findings.push(await threadsFinding(resolved));
  if (options.checkUpstreams) findings.push(...(await upstreamFindings(resolved)));
  for (const finding of findings) process.stdout.write(`${finding.ok ? 'ok  ' : 'FAIL'}  ${finding.check.padEnd(9)} ${finding.message}\n`);
  return findings.every((finding) => finding.ok) ? 0 : 1;
}

/** Every field `compare` names for any two of `digests` (`settingsDifference`, `settingsVersionGap`), each once. */
function pairwise(digests: readonly string[], compare: (a: string, b: string) => string[]): string[] {
  const fields = new Set<string>();
  for (const [index, a] of digests.entries()) for (const b of digests.slice(index + 1)) for (const field of compare(a, b)) fields.add(field);
  return [...fields];
}
