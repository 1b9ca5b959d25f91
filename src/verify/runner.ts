/**
 * Runs the selected checks against a target and gives a verdict per gate. Checks run a few at a time; those that
 * measure timings (the load gate's) run last and one by one, so other checks do not disturb them. Every check has a time bound; a check that overruns it fails (a hang
 * is a finding), and its tasks are cancelled all the same.
 */
import { type CheckDefinition, CheckFailed, type CheckResult, CheckSkipped, type Gate, GATES, type Generation, HARD_GATES } from './check.js';
import { CheckContext, type Target, type TargetProfile } from './context.js';
import { CheckFailedAt } from './expect.js';
import { probeTarget } from './probe.js';
import { checkSpecLink } from './rules.js';
import type { ToolMap } from './tool-map.js';
import { type Exchange, TransportError } from './wire/exchange.js';

/** Options of {@link runVerify}. */
export interface VerifyOptions {
  target: Target;
  /** Generations to verify. */
  generations: readonly Generation[];
  map: ToolMap;
  /** The registry to choose from. */
  checks: readonly CheckDefinition[];
  /** Patterns selecting checks (see {@link selectChecks}); empty = all. */
  only?: readonly string[];
  /** Patterns removing checks. */
  exclude?: readonly string[];
  /** Gates whose failures make the exit code non-zero. @defaultValue the hard gate (contract, security) */
  failOn?: readonly Gate[];
  /** Checks run at once (timing checks always run alone). @defaultValue 4 */
  parallel?: number;
  /** Bound of one check (ms), unless it sets its own. @defaultValue 60000 */
  checkTimeoutMs?: number;
  /** Bound of one request (ms). @defaultValue 15000 */
  requestTimeoutMs?: number;
  /** Called as each check ends (progress output). */
  onResult?: (result: CheckResult) => void;
}

/** Counts of one gate. */
export interface GateSummary {
  gate: Gate;
  /** Part of the hard gate. */
  hard: boolean;
  /** Its failures decide the exit code. */
  decides: boolean;
  passed: number;
  warnings: number;
  failed: number;
  skipped: number;
  /** `passed`: every check passed; `failed`: one failed; `incomplete`: none failed but some were skipped; `empty`: none selected. */
  verdict: 'passed' | 'failed' | 'incomplete' | 'empty';
}

/** Exit codes of `mcp-tasks verify`. */
export const VerifyExit = Object.freeze({
  /** Every selected check of the deciding gates passed. */
  passed: 0,
  /** A check of a deciding gate failed. */
  failed: 1,
  /** None failed, but checks of a deciding gate were skipped: not verified. */
  incomplete: 2,
} as const);

/** The outcome of a run. */
export interface VerifyReport {
  tool: { name: 'mcp-tasks verify'; version: string };
  target: { url: string; generations: readonly Generation[]; tokenA: boolean; tokenB: boolean };
  startedAt: string;
  durationMs: number;
  /** What the probe found per generation (served, or why not). */
  profile: Record<string, { served: boolean; reason?: string; tools?: string[] }>;
  probeEvidence: Exchange[];
  gates: GateSummary[];
  results: CheckResult[];
  exitCode: number;
}

function globToRegExp(pattern: string): RegExp {
  return new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replaceAll('*', '.*')
      .replaceAll('?', '.')}$`,
  );
}

/** Whether a check matches a pattern: an id glob (`v1.*`, `*.cross-owner.*`), a gate name, or a rule id (`C-SEC-02`, `R45`). */
export function matches(check: CheckDefinition, pattern: string): boolean {
  return globToRegExp(pattern).test(check.id) || check.gate === pattern || check.rules.includes(pattern);
}

/** The checks selected by generation, `only` and `exclude`, in registry order. */
export function selectChecks(
  checks: readonly CheckDefinition[],
  generations: readonly Generation[],
  only: readonly string[] = [],
  exclude: readonly string[] = [],
): CheckDefinition[] {
  return checks.filter(
    (check) =>
      generations.includes(check.generation) &&
      (only.length === 0 || only.some((pattern) => matches(check, pattern))) &&
      !exclude.some((pattern) => matches(check, pattern)),
  );
}

function result(
  check: CheckDefinition,
  fields: Pick<CheckResult, 'status' | 'message' | 'durationMs' | 'evidence' | 'measurements' | 'failedExchange'>,
): CheckResult {
  return {
    id: check.id,
    title: check.title,
    gate: check.gate,
    generation: check.generation,
    severity: check.severity,
    rules: check.rules,
    spec: checkSpecLink(check.rules),
    ...fields,
  };
}

/** Run one check in its own context; never throws. */
export async function runCheck(
  check: CheckDefinition,
  target: Target,
  profile: TargetProfile,
  map: ToolMap,
  timeoutMs: number,
  requestTimeoutMs: number,
): Promise<CheckResult> {
  const controller = new AbortController();
  const bound = check.timeoutMs ?? timeoutMs;
  const timer = setTimeout(
    () => controller.abort(new CheckFailed(`did not finish within ${bound} ms (a request hung or the server never reached the awaited state)`)),
    bound,
  );
  const ctx = new CheckContext(check.generation, target, profile, map, controller.signal, requestTimeoutMs);
  const started = Date.now();
  let status: CheckResult['status'];
  let message = '';
  let failedExchange: Exchange | undefined;
  try {
    const served = profile[check.generation];
    if (!served?.available) throw new CheckSkipped(served?.reason ?? `${check.generation} not probed`);
    ctx.require(check.needs ?? []);
    await Promise.race([
      check.run(ctx),
      new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true })),
    ]);
    if (ctx.warnings.length > 0) {
      status = 'warning';
      message = ctx.warnings.join('; ');
    } else status = 'passed';
  } catch (error) {
    if (error instanceof CheckSkipped) {
      status = 'skipped';
      message = error.message;
    } else if (error instanceof CheckFailed) {
      // A violated SHOULD is a warning, never a failure.
      status = check.severity === 'warning' ? 'warning' : 'failed';
      message = error.message;
      if (error instanceof CheckFailedAt) failedExchange = error.exchange;
    } else if (error instanceof TransportError) {
      status = check.severity === 'warning' ? 'warning' : 'failed';
      message = `no answer from the server to ${String((error.exchange.request.body as { method?: unknown } | undefined)?.method ?? error.exchange.request.method)}: ${error.message}`;
      failedExchange = error.exchange;
    } else {
      status = 'failed';
      message = `check error: ${error instanceof Error ? error.message : String(error)}`;
    }
  } finally {
    clearTimeout(timer);
  }
  await ctx.cleanUp();
  return result(check, {
    status,
    message,
    durationMs: Date.now() - started,
    evidence: ctx.evidence,
    measurements: ctx.measurements,
    ...(failedExchange ? { failedExchange } : {}),
  });
}

async function pool<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, Math.min(width, items.length)) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  });
  await Promise.all(lanes);
}

/** Per-gate counts and verdicts. */
export function summarise(results: readonly CheckResult[], failOn: readonly Gate[]): GateSummary[] {
  return GATES.map((gate) => {
    const mine = results.filter((entry) => entry.gate === gate);
    const count = (status: CheckResult['status']): number => mine.filter((entry) => entry.status === status).length;
    const failed = count('failed');
    const skipped = count('skipped');
    const verdict = mine.length === 0 ? 'empty' : failed > 0 ? 'failed' : skipped > 0 ? 'incomplete' : 'passed';
    return {
      gate,
      hard: HARD_GATES.includes(gate),
      decides: failOn.includes(gate),
      passed: count('passed'),
      warnings: count('warning'),
      failed,
      skipped,
      verdict,
    };
  });
}

/** The exit code for a set of gate summaries (see {@link VerifyExit}). */
export function exitCodeOf(gates: readonly GateSummary[]): number {
  const deciding = gates.filter((gate) => gate.decides);
  if (deciding.some((gate) => gate.verdict === 'failed')) return VerifyExit.failed;
  if (deciding.some((gate) => gate.verdict === 'incomplete')) return VerifyExit.incomplete;
  return VerifyExit.passed;
}

/** Probe the target, run the selected checks, summarise. */
export async function runVerify(options: VerifyOptions): Promise<VerifyReport> {
  const startedAt = new Date();
  const requestTimeoutMs = options.requestTimeoutMs ?? 15_000;
  const checkTimeoutMs = options.checkTimeoutMs ?? 60_000;
  const selected = selectChecks(options.checks, options.generations, options.only, options.exclude);
  const generations = options.generations.filter((generation) => selected.some((check) => check.generation === generation));
  const { profile, evidence } = await probeTarget(options.target, generations, requestTimeoutMs);
  const results = new Map<CheckDefinition, CheckResult>();
  const run = async (check: CheckDefinition): Promise<void> => {
    const outcome = await runCheck(check, options.target, profile, options.map, checkTimeoutMs, requestTimeoutMs);
    results.set(check, outcome);
    options.onResult?.(outcome);
  };
  // Long checks (by their declared bound) start first, so they do not become the tail of the run.
  const together = selected.filter((check) => !check.alone).sort((a, b) => (b.timeoutMs ?? checkTimeoutMs) - (a.timeoutMs ?? checkTimeoutMs));
  await pool(together, options.parallel ?? 4, run);
  const loadDeadline = Date.now() + options.map.thresholds.loadBudgetMs;
  for (const check of selected.filter((entry) => entry.alone)) {
    if (Date.now() > loadDeadline) {
      const skipped = result(check, {
        status: 'skipped',
        message: `the load gate's time budget (loadBudgetMs ${options.map.thresholds.loadBudgetMs} ms) was used up`,
        durationMs: 0,
        evidence: [],
        measurements: {},
      });
      results.set(check, skipped);
      options.onResult?.(skipped);
    } else await run(check);
  }
  const ordered = selected.map((check) => results.get(check) as CheckResult);
  const gates = summarise(ordered, options.failOn ?? HARD_GATES);
  return {
    tool: { name: 'mcp-tasks verify', version: '0.1.0' },
    target: {
      url: options.target.url,
      generations: options.generations,
      tokenA: options.target.tokenA !== undefined,
      tokenB: options.target.tokenB !== undefined,
    },
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - startedAt.getTime(),
    profile: Object.fromEntries(
      Object.entries(profile).map(([generation, entry]) => [
        generation,
        entry.available ? { served: true, tools: [...entry.tools.keys()].sort() } : { served: false, reason: entry.reason },
      ]),
    ),
    probeEvidence: evidence,
    gates,
    results: ordered,
    exitCode: exitCodeOf(gates),
  };
}
