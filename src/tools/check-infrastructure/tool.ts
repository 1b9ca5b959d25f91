/**
 * The `check_infrastructure` tool: the morning check. It checks a list of targets — HTTP(S) endpoints (status,
 * latency, TLS certificate trust and expiry), TCP ports (connect latency) and configuration files (content digest,
 * redacted diff against the last run) — with bounded concurrency, a timeout per target, progress per target and
 * cancellation, and reports what is down, slow, expiring or changed since the last run. The last run's snapshot is
 * per-owner state kept by the server (`ctx.ownerState`), never a file. Targets are confined: hosts by the
 * `--check-target` patterns (see `targets.ts`), files by the roots and denied paths.
 */
import path from 'node:path';

import { z } from 'zod';

import type { PathConfinement } from '../../core/confinement.js';
import { MAX_TOOL_STATE_BYTES } from '../../core/store.js';
import { isStoreError } from '../../core/store-error.js';
import type { JsonObject, JsonValue } from '../../core/task.js';
import { type AnyToolDefinition, defineTool, textResult, ToolInputError } from '../../core/tool.js';
import { confine, isInsideRoots } from '../roots.js';
import { detailArgument, summarized, SUMMARY_FIELDS } from '../structured-summary.js';
import { checkTarget, type KeptTarget, PROBLEMS, type Target, type TargetResult } from './check.js';
import { TargetPolicy } from './targets.js';

const ms = (max: number) => z.number().int().min(1).max(max);
const common = {
  name: z.string().min(1).max(200).optional().describe('How the report names it (default: the target itself).'),
  timeoutMs: ms(120_000).optional().describe("Timeout of this target (ms; default: the call's timeoutMs)."),
  slowMs: ms(120_000).optional().describe("Slower than this (ms) counts as slow (default: the call's slowMs)."),
};
const target = z.union([
  z.string().min(1).describe('"https://host/path", "http://…", "tcp://host:port", or the absolute path of a file.'),
  z.object({
    url: z.string().min(1).describe('http:// or https:// URL.'),
    method: z.enum(['GET', 'HEAD']).default('GET'),
    expectStatus: z.array(z.number().int().min(100).max(599)).min(1).max(20).optional().describe('Statuses that count as up (default 200–399).'),
    ca: z.string().min(1).optional().describe('Absolute path (inside the roots) of PEM CA certificates to trust besides the system ones.'),
    ...common,
  }),
  z.object({ tcp: z.string().min(1).describe('host:port ([v6]:port for IPv6).'), ...common }),
  z.object({ file: z.string().min(1).describe('Absolute path of a configuration file inside the roots.'), name: common.name }),
]);

const inputSchema = z.object({
  detail: detailArgument('the result of every target, in the order given'),
  targets: z.array(target).min(1).max(200).describe('What to check.'),
  baseline: z
    .string()
    .regex(/^[\w.-]{1,64}$/)
    .default('default')
    .describe('Name of the snapshot to compare with and to update: each owner keeps one per name (e.g. "prod", "staging").'),
  updateBaseline: z.boolean().default(true).describe('Keep this run as the new snapshot (default true).'),
  concurrency: z.number().int().min(1).max(32).default(8).describe('Targets checked at once.'),
  timeoutMs: ms(120_000).default(5000).describe('Timeout per target (ms).'),
  slowMs: ms(120_000).default(1000).describe('A target answering later than this (ms) is slow.'),
  certWarningDays: z.number().int().min(0).max(365).default(14).describe('A certificate expiring within this many days is reported.'),
  errorOn: z
    .enum(['down', 'problem', 'never'])
    .default('down')
    .describe(
      'When the result is marked isError, so a scheduled run fails on it (mcp-tasks call exits 1): "down" (default) when a target is down, "problem" when any target is not ok, "never".',
    ),
});

type Args = z.output<typeof inputSchema>;
type TargetArg = Args['targets'][number];

const tls = z.object({
  subject: z.string(),
  issuer: z.string(),
  validFrom: z.string(),
  validTo: z.string(),
  daysLeft: z.number().int(),
  trusted: z.boolean(),
  trustError: z.string().nullable(),
});
const problem = z.enum(PROBLEMS);
const result = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(['http', 'tcp', 'file']),
  status: z.enum([...PROBLEMS, 'ok']),
  problems: z.array(problem),
  details: z.array(z.string()),
  latencyMs: z.number().nullable(),
  httpStatus: z.number().int().nullable(),
  tls: tls.nullable(),
  file: z
    .object({
      digest: z.string(),
      bytes: z.number().int(),
      truncated: z.boolean(),
      changed: z.boolean().nullable(),
      previousDigest: z.string().nullable(),
      diff: z.string().nullable(),
      diffTruncated: z.boolean(),
      note: z.string().nullable(),
    })
    .nullable(),
  error: z.string().nullable(),
  newSinceLastRun: z.boolean(),
  recovered: z.boolean(),
});
const outputSchema = z.object({
  ...SUMMARY_FIELDS,
  checkedAt: z.string(),
  durationMs: z.number(),
  baseline: z.object({ name: z.string(), previousRunAt: z.string().nullable(), updated: z.boolean(), note: z.string().nullable() }),
  summary: z.object({ targets: z.number().int(), ok: z.number().int(), ...Object.fromEntries(PROBLEMS.map((p) => [p, z.number().int()])) }),
  results: z.array(result),
});

/** The report (`structuredContent`). */
export type InfrastructureReport = {
  checkedAt: string;
  durationMs: number;
  baseline: { name: string; previousRunAt: string | null; updated: boolean; note: string | null };
  summary: { targets: number; ok: number } & Record<(typeof PROBLEMS)[number], number>;
  results: TargetResult[];
};

/** The snapshot kept per owner and baseline name. */
type Snapshot = { version: 1; checkedAt: string; targets: Record<string, KeptTarget> };

function isSnapshot(value: JsonValue | undefined | null): value is Snapshot & JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && value['version'] === 1 && typeof value['targets'] === 'object';
}

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 };

/** Normalises the targets of a call. @throws ToolInputError for a target that does not parse or a duplicate. */
function parseTargets(args: Args): Target[] {
  const targets = args.targets.map((arg) => parseTarget(arg, args));
  const seen = new Set<string>();
  for (const t of targets) {
    if (seen.has(t.id)) throw new ToolInputError(`target listed twice: ${t.id}`);
    seen.add(t.id);
  }
  return targets;
}

function parseTarget(arg: TargetArg, args: Args): Target {
  const base = {
    method: 'GET' as const,
    url: null,
    host: null,
    port: null,
    path: null,
    ca: null,
    expectStatus: null,
    timeoutMs: args.timeoutMs,
    slowMs: args.slowMs,
  };
  const withCommon = (t: Target, a: { name?: string | undefined; timeoutMs?: number | undefined; slowMs?: number | undefined }): Target => ({
    ...t,
    name: a.name ?? t.name,
    timeoutMs: a.timeoutMs ?? t.timeoutMs,
    slowMs: a.slowMs ?? t.slowMs,
  });
  if (typeof arg === 'string') {
    if (/^https?:\/\//i.test(arg)) return httpTarget(arg, 'GET', base);
    if (/^tcp:\/\//i.test(arg)) return tcpTarget(arg.slice(6), base);
    if (path.isAbsolute(arg)) return fileTarget(arg, base);
    throw new ToolInputError(`target is not an http(s):// URL, a tcp://host:port or an absolute path: ${arg}`);
  }
  if ('url' in arg) {
    const t = httpTarget(arg.url, arg.method, base);
    return withCommon({ ...t, expectStatus: arg.expectStatus ?? null, ca: arg.ca ?? null }, arg);
  }
  if ('tcp' in arg) return withCommon(tcpTarget(arg.tcp, base), arg);
  return withCommon(fileTarget(arg.file, base), arg);
}

function httpTarget(text: string, method: 'GET' | 'HEAD', base: Omit<Target, 'id' | 'name' | 'kind'>): Target {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ToolInputError(`not a URL: ${text}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ToolInputError(`only http and https URLs can be checked: ${text}`);
  if (url.username || url.password) throw new ToolInputError('a URL with credentials cannot be checked (they would end up in the report)');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = url.port ? Number(url.port) : (DEFAULT_PORTS[url.protocol] as number);
  const id = `${method} ${url.href}`;
  return { ...base, id, name: id, kind: 'http', url: url.href, method, host, port };
}

function tcpTarget(text: string, base: Omit<Target, 'id' | 'name' | 'kind'>): Target {
  const m = /^\[([^\]]+)\]:(\d{1,5})$|^([^:[\]]+):(\d{1,5})$/.exec(text.trim());
  const host = m?.[1] ?? m?.[3];
  const port = Number(m?.[2] ?? m?.[4]);
  if (!host || !(port >= 1 && port <= 65535)) throw new ToolInputError(`a tcp target is host:port (or [v6]:port): ${text}`);
  const id = `tcp ${host.includes(':') ? `[${host}]` : host}:${port}`;
  return { ...base, id, name: id, kind: 'tcp', host, port };
}

function fileTarget(file: string, base: Omit<Target, 'id' | 'name' | 'kind'>): Target {
  if (!path.isAbsolute(file)) throw new ToolInputError(`a file target must be an absolute path: ${file}`);
  const resolved = path.resolve(file);
  return { ...base, id: `file ${resolved}`, name: resolved, kind: 'file', path: resolved };
}

/** Everything that can be refused before any target is contacted. */
function checkArguments(args: Args, policy: TargetPolicy, spec: PathConfinement): Target[] {
  const targets = parseTargets(args);
  for (const t of targets) {
    if (t.kind !== 'file' && !policy.allowsLexically(t.host as string, t.port as number)) {
      throw new ToolInputError(
        `target ${t.id} is not allowed: its host matches no --check-target pattern (${policy.described.join(', ') || 'none given: the server checks no network target'})`,
      );
    }
    for (const file of [t.path, t.ca]) {
      if (file !== null && !isInsideRoots(path.resolve(file), spec.roots)) throw new ToolInputError(`path is outside the allowed roots: ${file}`);
    }
  }
  return targets;
}

/** Runs `work` over `items` with at most `limit` at once, in order of completion; results in input order. */
async function pool<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Room kept free in the snapshot document for everything but file texts. */
const SNAPSHOT_MARGIN = 64 * 1024;

/** The snapshot to keep: within the per-document bound, dropping the largest kept texts first. */
function boundedSnapshot(snapshot: Snapshot): Snapshot {
  const size = () => Buffer.byteLength(JSON.stringify(snapshot));
  const texts = Object.values(snapshot.targets)
    .filter((t) => t.file?.text)
    .sort((a, b) => (b.file?.text?.length ?? 0) - (a.file?.text?.length ?? 0));
  for (const kept of texts) {
    if (size() <= MAX_TOOL_STATE_BYTES - SNAPSHOT_MARGIN) break;
    const file = kept.file as NonNullable<KeptTarget['file']>;
    file.text = null;
    file.lineTags = null;
  }
  return snapshot;
}

/**
 * The `check_infrastructure` tool for a server whose operator allowed `checkTargets` host patterns.
 *
 * @throws RangeError for a pattern that does not parse.
 */
export function checkInfrastructureTool(checkTargets: readonly string[]): AnyToolDefinition {
  const policy = new TargetPolicy(checkTargets);
  return defineTool({
    name: 'check_infrastructure',
    title: 'Check infrastructure',
    description:
      'The morning check: checks HTTP(S) endpoints (status, latency, TLS certificate trust and expiry), TCP ports ' +
      '(connect latency) and configuration files (content digest, and a redacted diff against the last run), with ' +
      'bounded concurrency and a timeout per target, and reports what is down, slow, expiring or changed since the ' +
      'last run, with the raw result per target in structuredContent. The last run is a snapshot the server keeps ' +
      "for the caller (one per baseline name). Hosts must match the server's --check-target patterns " +
      `(${policy.described.join(', ') || 'none: only files can be checked'}); files must be inside the allowed roots. ` +
      'Follows no redirect and reads no response body.',
    inputSchema,
    outputSchema,
    execution: 'task-optional',
    idempotent: true,
    journaled: true,
    immediateResponse: (args) =>
      `Started checking ${args.targets.length} target${args.targets.length === 1 ? '' : 's'} (endpoints, ports, files); ` +
      'this takes about as long as the slowest target, at most its timeout.',
    async preflight(args, context) {
      checkArguments(args, policy, context);
    },
    async run(args, ctx) {
      const targets = checkArguments(args, policy, ctx);
      const confinement = await confine(ctx);
      const key = `baseline:${args.baseline}`;
      // Journaled, so that a re-run after a crash compares with the same snapshot as the first run did.
      const previousValue = await ctx.step('check_infrastructure/previous', async () => (await ctx.ownerState.get(key)) ?? null);
      const previous = isSnapshot(previousValue) ? previousValue : null;
      const started = performance.now();
      const checked = await ctx.step('check_infrastructure/results', async () => {
        const now = Date.now();
        let done = 0;
        ctx.progress(0, targets.length, 'checked targets');
        const outcomes = await pool(targets, args.concurrency, async (t) => {
          ctx.signal.throwIfAborted();
          const outcome = await checkTarget(t, previous?.targets[t.id], {
            certWarningDays: args.certWarningDays,
            now,
            signal: ctx.signal,
            policy,
            confinement,
          });
          ctx.progress(++done, targets.length, 'checked targets');
          return outcome;
        });
        ctx.signal.throwIfAborted();
        return {
          checkedAt: new Date(now).toISOString(),
          durationMs: Math.round(performance.now() - started),
          results: outcomes.map((o) => o.result),
          kept: Object.fromEntries(outcomes.map((o) => [o.result.id, o.kept])),
        } as unknown as JsonObject;
      });
      const { checkedAt, durationMs, results, kept } = checked as unknown as {
        checkedAt: string;
        durationMs: number;
        results: TargetResult[];
        kept: Record<string, KeptTarget>;
      };
      let note: string | null = null;
      let updated = false;
      if (args.updateBaseline) {
        // Targets not checked this time keep what the last run knew of them.
        const snapshot = boundedSnapshot({ version: 1, checkedAt, targets: { ...(previous?.targets ?? {}), ...kept } });
        try {
          await ctx.ownerState.put(key, snapshot as unknown as JsonObject);
          updated = true;
        } catch (error) {
          if (!isStoreError(error, 'invalid')) throw error;
          note = `the snapshot could not be kept: ${error.message}`;
        }
      }
      const summary = { targets: results.length, ok: 0, ...Object.fromEntries(PROBLEMS.map((p) => [p, 0])) } as InfrastructureReport['summary'];
      for (const r of results) {
        if (r.status === 'ok') summary.ok++;
        for (const p of r.problems) summary[p]++;
      }
      const report: InfrastructureReport = {
        checkedAt,
        durationMs,
        baseline: { name: args.baseline, previousRunAt: previous?.checkedAt ?? null, updated, note },
        summary,
        results,
      };
      ctx.logger.info({ targets: summary.targets, down: summary.down, changed: summary.changed }, 'infrastructure checked');
      // structuredContent, which a client may give the model instead of the text, is a summary by default (issue 27
      // §2): targets with a problem first, then the rest, cut to the first entries.
      const ordered =
        args.detail === 'full' ? report : { ...report, results: [...results.filter((r) => r.status !== 'ok'), ...results.filter((r) => r.status === 'ok')] };
      // A check is a finding, not a tool failure; isError only as the caller asked (errorOn), so a scheduled run can fail on it.
      const failing = args.errorOn === 'down' ? summary.down > 0 : args.errorOn === 'problem' ? summary.ok < summary.targets : false;
      return textResult(summarize(report), {
        structuredContent: summarized(ordered, args.detail, ['results']) as unknown as JsonObject,
        ...(failing ? { isError: true } : {}),
      });
    },
  });
}

const number = (n: number) => n.toLocaleString('en-US');
const plural = (count: number, one: string, many = `${one}s`) => `${number(count)} ${count === 1 ? one : many}`;
const LABEL: Record<(typeof PROBLEMS)[number], [string, string]> = {
  down: ['down', 'Down'],
  untrusted: ['with an untrusted certificate', 'Untrusted certificates'],
  expiring: ['with a certificate expiring', 'Certificates expiring'],
  changed: ['changed since the last run', 'Changed since the last run'],
  slow: ['slow', 'Slow'],
};

/** The text report: a one-line verdict, then the problems by kind (worst first), then what is fine. */
export function summarize(report: InfrastructureReport): string {
  const { summary, baseline } = report;
  const since = baseline.previousRunAt ? `last run ${baseline.previousRunAt.slice(0, 19).replace('T', ' ')} UTC` : 'no earlier run: this run is the baseline';
  const counts = PROBLEMS.filter((p) => summary[p] > 0).map((p) => `${number(summary[p])} ${LABEL[p][0]}`);
  const lines = [
    `Checked ${plural(summary.targets, 'target')} in ${(report.durationMs / 1000).toFixed(1)} s (baseline "${baseline.name}", ${since}): ` +
      `${counts.length > 0 ? `${counts.join(', ')}; ` : ''}${number(summary.ok)} ok.`,
  ];
  for (const kind of PROBLEMS) {
    const hit = report.results.filter((r) => r.status === kind);
    if (hit.length === 0) continue;
    lines.push('', `${LABEL[kind][1]}:`);
    for (const r of hit) {
      const flags = [r.newSinceLastRun ? 'new since the last run' : null].filter(Boolean);
      lines.push(`  ${kind.toUpperCase().padEnd(9)} ${r.name} — ${r.details.join('; ')}${flags.length > 0 ? ` (${flags.join(', ')})` : ''}`);
      if (r.file?.diff) lines.push(...r.file.diff.split('\n').map((line) => `      ${line}`), ...(r.file.diffTruncated ? ['      … (diff cut)'] : []));
      else if (r.file?.note && r.file.changed) lines.push(`      ${r.file.note}`);
    }
  }
  const fine = report.results.filter((r) => r.status === 'ok');
  if (fine.length > 0) {
    const facts = (r: TargetResult) =>
      [
        r.httpStatus !== null ? `HTTP ${r.httpStatus}` : null,
        r.latencyMs !== null ? `${number(r.latencyMs)} ms` : null,
        r.tls ? `certificate until ${r.tls.validTo.slice(0, 10)}` : null,
        r.file ? (r.file.changed === false ? 'unchanged' : r.file.note) : null,
        r.recovered ? 'recovered since the last run' : null,
      ]
        .filter(Boolean)
        .join(', ');
    lines.push('', `OK: ${fine.map((r) => `${r.name} (${facts(r)})`).join('; ')}.`);
  }
  lines.push(
    '',
    baseline.updated
      ? `Baseline "${baseline.name}" updated with this run.`
      : baseline.note
        ? `Baseline not updated: ${baseline.note}.`
        : `Baseline "${baseline.name}" left as it was.`,
  );
  return lines.join('\n');
}
