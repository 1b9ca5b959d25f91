/**
 * One check of `check_infrastructure` per target, and the verdict on it: what is down, slow, has a certificate
 * that is untrusted or near expiry, or (for a file) changed since the last run.
 */
import { isStoreError } from '../../core/store-error.js';
import { ToolInputError } from '../../core/tool.js';
import type { Confinement } from '../roots.js';
import { compareFile, type FileChange, type KeptFile, keptFile, readFileState } from './files.js';
import { probeHttp, probeTcp, type TlsFacts } from './probes.js';
import type { TargetPolicy } from './targets.js';

/** A target, normalised. */
export type Target = {
  /** Unique per call: `GET https://host/path`, `tcp host:port`, `file /path`. */
  id: string;
  name: string;
  kind: 'http' | 'tcp' | 'file';
  url: string | null;
  method: 'GET' | 'HEAD';
  host: string | null;
  port: number | null;
  /** Absolute path of a file target. */
  path: string | null;
  /** Absolute path of a PEM file of CAs to trust for an HTTPS target, or `null`. */
  ca: string | null;
  /** HTTP statuses that count as up (default: 200–399). */
  expectStatus: number[] | null;
  timeoutMs: number;
  slowMs: number;
};

/** A problem of a target, worst first. */
export const PROBLEMS = ['down', 'untrusted', 'expiring', 'changed', 'slow'] as const;
export type Problem = (typeof PROBLEMS)[number];

/** What one check found (JSON: journaled, reported). */
export type TargetResult = {
  id: string;
  name: string;
  kind: Target['kind'];
  /** The worst problem, or `ok`. */
  status: Problem | 'ok';
  problems: Problem[];
  /** Human-readable facts behind the problems. */
  details: string[];
  latencyMs: number | null;
  httpStatus: number | null;
  tls: TlsFacts | null;
  file: {
    digest: string;
    bytes: number;
    truncated: boolean;
    /** Compared with the last run's snapshot: `null` when there was none for this file. */
    changed: boolean | null;
    previousDigest: string | null;
    diff: string | null;
    diffTruncated: boolean;
    note: string | null;
  } | null;
  error: string | null;
  /** A problem now that the last run did not have, or a target the last run had a problem with and now has none. */
  newSinceLastRun: boolean;
  recovered: boolean;
};

/** What the snapshot keeps per target. */
export type KeptTarget = { status: TargetResult['status']; httpStatus: number | null; tlsValidTo: string | null; file: KeptFile | null };

/** Thresholds of a call. */
export interface CheckSettings {
  certWarningDays: number;
  now: number;
  signal: AbortSignal;
  policy: TargetPolicy;
  confinement: Confinement;
}

const number = (n: number) => n.toLocaleString('en-US');

/**
 * Checks one target against the policy, the confinement and the last run's snapshot entry (`previous`).
 *
 * @returns the result and what the next snapshot keeps of the target.
 */
export async function checkTarget(
  target: Target,
  previous: KeptTarget | undefined,
  settings: CheckSettings,
): Promise<{ result: TargetResult; kept: KeptTarget }> {
  const result: TargetResult = {
    id: target.id,
    name: target.name,
    kind: target.kind,
    status: 'ok',
    problems: [],
    details: [],
    latencyMs: null,
    httpStatus: null,
    tls: null,
    file: null,
    error: null,
    newSinceLastRun: false,
    recovered: false,
  };
  const problem = (kind: Problem, detail: string) => {
    if (!result.problems.includes(kind)) result.problems.push(kind);
    result.details.push(detail);
  };
  let kept: KeptFile | null = null;
  if (target.kind === 'file') kept = await checkFile(target, previous?.file ?? null, settings, result, problem);
  else await checkNetwork(target, settings, result, problem);
  result.problems.sort((a, b) => PROBLEMS.indexOf(a) - PROBLEMS.indexOf(b));
  result.status = result.problems[0] ?? 'ok';
  if (previous) {
    result.newSinceLastRun = result.status !== 'ok' && previous.status !== result.status;
    result.recovered = result.status === 'ok' && previous.status !== 'ok';
  }
  return { result, kept: { status: result.status, httpStatus: result.httpStatus, tlsValidTo: result.tls?.validTo ?? null, file: kept } };
}

async function checkNetwork(target: Target, settings: CheckSettings, result: TargetResult, problem: (kind: Problem, detail: string) => void): Promise<void> {
  const allowed = await settings.policy.allow(target.host as string, target.port as number);
  if (!allowed) {
    result.error = `host not allowed by --check-target (${settings.policy.described.join(', ') || 'none given'})`;
    problem('down', result.error);
    return;
  }
  let ca: string | undefined;
  if (target.ca) {
    try {
      const real = await settings.confinement.resolvePath(target.ca);
      const handle = await settings.confinement.openForReading(real);
      try {
        ca = (await handle.readFile()).toString('utf8');
      } finally {
        await handle.close();
      }
    } catch (error) {
      result.error = `cannot read its ca file: ${error instanceof Error ? error.message : String(error)}`;
      problem('down', result.error);
      return;
    }
  }
  const options = { address: allowed.address, timeoutMs: target.timeoutMs, signal: settings.signal, now: settings.now, ...(ca ? { ca } : {}) };
  const probe =
    target.kind === 'http'
      ? await probeHttp(new URL(target.url as string), target.method, options)
      : await probeTcp(allowed.host, target.port as number, options);
  settings.signal.throwIfAborted();
  result.latencyMs = probe.latencyMs;
  result.httpStatus = probe.httpStatus;
  result.tls = probe.tls;
  result.error = probe.error;
  if (!probe.reached) {
    problem('down', probe.error ?? 'unreachable');
    return;
  }
  if (probe.httpStatus !== null) {
    const expected = target.expectStatus ? target.expectStatus.includes(probe.httpStatus) : probe.httpStatus >= 200 && probe.httpStatus < 400;
    if (!expected) problem('down', `HTTP ${probe.httpStatus}${target.expectStatus ? ` (expected ${target.expectStatus.join(', ')})` : ''}`);
  }
  if (probe.tls) {
    const { daysLeft, validTo } = probe.tls;
    if (!probe.tls.trusted) problem('untrusted', `certificate not trusted: ${probe.tls.trustError}`);
    if (daysLeft < 0) problem('expiring', `certificate expired ${number(-daysLeft)} days ago (${validTo.slice(0, 10)})`);
    else if (daysLeft < settings.certWarningDays)
      problem('expiring', `certificate expires ${validTo.slice(0, 10)}, in ${number(daysLeft)} ${daysLeft === 1 ? 'day' : 'days'}`);
  }
  if (probe.latencyMs !== null && probe.latencyMs > target.slowMs) problem('slow', `${number(probe.latencyMs)} ms, slower than ${number(target.slowMs)} ms`);
}

async function checkFile(
  target: Target,
  previous: KeptFile | null,
  settings: CheckSettings,
  result: TargetResult,
  problem: (kind: Problem, detail: string) => void,
): Promise<KeptFile | null> {
  let state;
  try {
    state = await readFileState(await settings.confinement.resolvePath(target.path as string), settings.confinement, previous?.salt);
  } catch (error) {
    if (!(error instanceof ToolInputError) && !isStoreError(error) && !(error as NodeJS.ErrnoException).code) throw error;
    result.error = error instanceof Error ? error.message : String(error);
    problem('down', result.error);
    // A file gone for now keeps its last snapshot, so that its return is compared with what it was.
    return previous;
  }
  const change: FileChange | null = previous ? compareFile(previous, state, target.name) : null;
  result.file = {
    digest: state.digest,
    bytes: state.bytes,
    truncated: state.truncated,
    changed: change ? change.changed : null,
    previousDigest: previous?.digest ?? null,
    diff: change?.diff ?? null,
    diffTruncated: change?.diffTruncated ?? false,
    note: change?.note ?? (previous ? null : 'no earlier snapshot: this run is the baseline'),
  };
  if (change?.changed) problem('changed', `${previous?.digest.slice(0, 19)}… → ${state.digest.slice(0, 19)}…`);
  return keptFile(state);
}
