import { writeFileSync } from 'node:fs';

import { remoteLine } from '../client/remote-text.js';
import { type Gate, GATES, type Generation, HARD_GATES } from '../verify/check.js';
import {
  ALL_CHECKS,
  type CheckResult,
  checkSpecLink,
  loadToolMap,
  parseThresholds,
  renderCheckList,
  renderJunit,
  renderText,
  runVerify,
  selectChecks,
  TargetUnreachableError,
  ToolMapError,
  type VerifyReport,
} from '../verify/index.js';
import { cliCommand } from './invocation.js';
import { jsonDocument, writeJson } from './json-output.js';
import { ExitCode, UsageError } from './usage-error.js';

/** Options of `mcp-tasks verify`, as commander parses them. */
export interface VerifyFlags {
  url?: string;
  protocol: '2025-11-25' | '2026-07-28' | 'both';
  tokenA?: string;
  tokenB?: string;
  toolsMap?: string;
  only: string[];
  exclude: string[];
  failOn?: string;
  threshold: string[];
  parallel: number;
  checkTimeoutMs: number;
  requestTimeoutMs: number;
  json?: string;
  junit?: string;
  list?: boolean;
  quiet?: boolean;
}

const GENERATIONS: Record<VerifyFlags['protocol'], Generation[]> = { '2025-11-25': ['v1'], '2026-07-28': ['v2'], both: ['v1', 'v2'] };

/** Split `a,b` and repeated flags into one list. */
function patterns(values: readonly string[]): string[] {
  return values
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter(Boolean);
}

function failOnGates(value: string | undefined): Gate[] {
  if (value === undefined) return [...HARD_GATES];
  const gates = patterns([value]).flatMap((name) => (name === 'hard' ? [...HARD_GATES] : name === 'all' ? [...GATES] : [name]));
  for (const gate of gates) if (!GATES.includes(gate as Gate)) throw new UsageError(`--fail-on ${gate}: expected hard, all or gates of ${GATES.join(', ')}`);
  return [...new Set(gates)] as Gate[];
}

/** One check's line while the suite runs; its message may quote the server (an error it answered), hence `remoteLine`. */
function progressLine(result: CheckResult): string {
  const mark = { passed: '✓', warning: '!', failed: '✗', skipped: '-' }[result.status];
  return `${mark} ${result.id} (${(result.durationMs / 1000).toFixed(1)} s)${result.status === 'passed' ? '' : `: ${remoteLine(result.message, 160)}`}\n`;
}

/**
 * `mcp-tasks verify`: run the contract, fault, security and load suite against any MCP tasks server and give a
 * verdict per gate. Exit 0 when every selected check of the deciding gates (default: the hard gate, contract +
 * security) passed, 1 when one failed, 2 when none failed but some were skipped (not verified), 5 when the server
 * cannot be reached at all, 64 for usage errors.
 */
export async function verifyCommand(flags: VerifyFlags): Promise<void> {
  const generations = GENERATIONS[flags.protocol];
  const only = patterns(flags.only);
  const exclude = patterns(flags.exclude);
  if (flags.list) {
    const checks = selectChecks(ALL_CHECKS, generations, only, exclude);
    const listed = checks.map((check) => ({
      id: check.id,
      title: check.title,
      gate: check.gate,
      generation: check.generation,
      severity: check.severity,
      rules: check.rules,
      spec: checkSpecLink(check.rules),
      needs: check.needs ?? [],
    }));
    process.stdout.write(flags.json !== undefined ? jsonDocument(listed) : renderCheckList(checks, checkSpecLink));
    return;
  }
  if (!flags.url) throw new UsageError('verify needs --url <MCP endpoint> (or --list)');
  let url: URL;
  try {
    url = new URL(flags.url);
  } catch {
    throw new UsageError(`--url ${flags.url}: not a URL`);
  }
  const tokenA = flags.tokenA ?? process.env.MCP_TASKS_VERIFY_TOKEN_A;
  const tokenB = flags.tokenB ?? process.env.MCP_TASKS_VERIFY_TOKEN_B;
  if (tokenB && !tokenA) throw new UsageError('--token-b needs --token-a (two principals)');
  if (tokenA && tokenB && tokenA === tokenB) throw new UsageError('--token-a and --token-b are the same token; cross-owner checks need two principals');
  let map;
  try {
    map = loadToolMap(flags.toolsMap, parseThresholds(flags.threshold));
  } catch (error) {
    if (error instanceof ToolMapError) throw new UsageError(error.message);
    throw error;
  }
  const selected = selectChecks(ALL_CHECKS, generations, only, exclude);
  if (selected.length === 0)
    throw new UsageError(
      `no check matches --only ${only.join(',')}${exclude.length > 0 ? ` --exclude ${exclude.join(',')}` : ''} for ${flags.protocol}; see ${cliCommand()} verify --list`,
    );
  const toStdout = flags.json === '-';
  let report: VerifyReport;
  try {
    report = await runVerify({
      target: { url: url.toString(), ...(tokenA ? { tokenA } : {}), ...(tokenB ? { tokenB } : {}) },
      generations,
      map,
      checks: ALL_CHECKS,
      only,
      exclude,
      failOn: failOnGates(flags.failOn),
      parallel: flags.parallel,
      checkTimeoutMs: flags.checkTimeoutMs,
      requestTimeoutMs: flags.requestTimeoutMs,
      ...(flags.quiet ? {} : { onResult: (result: CheckResult) => void process.stderr.write(progressLine(result)) }),
    });
  } catch (error) {
    if (!(error instanceof TargetUnreachableError)) throw error;
    process.stderr.write(`mcp-tasks verify: ${remoteLine(error.message)}\n`);
    process.exitCode = ExitCode.connectionOrProtocol;
    return;
  }
  if (flags.json !== undefined && !toStdout) writeFileSync(flags.json, jsonDocument(report));
  if (flags.junit !== undefined) writeFileSync(flags.junit, renderJunit(report));
  if (toStdout) {
    process.stderr.write(renderText(report));
    writeJson(report);
  } else {
    process.stdout.write(renderText(report));
  }
  process.exitCode = report.exitCode;
}
