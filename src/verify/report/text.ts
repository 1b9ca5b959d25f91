/**
 * The human report: one row per gate (passed / warnings / failed / skipped / verdict), then one entry per failure
 * with the request and the answer it is about, warnings, skips grouped by reason, and the load figures.
 */
import { remoteLine } from '../../client/remote-text.js';
import type { CheckDefinition, CheckResult } from '../check.js';
import type { VerifyReport } from '../runner.js';
import type { Exchange } from '../wire/exchange.js';

/**
 * Most characters of an answer shown in a report line. What the report quotes of a server (its answers, check
 * messages that quote them) goes through the requestor's rule for a server's text (`remoteLine`: one visible line,
 * escape sequences removed, role markers neutralised): an agent reads this report too. An answer is quoted as its
 * JSON text, so a control character in it still shows as its escape (`\u001b`).
 */
const ANSWER_CHARS = 400;

/** The request and the answer of an exchange, two lines. */
export function exchangeLines(exchange: Exchange): string[] {
  const body = exchange.request.body as { method?: string; params?: unknown } | string | undefined;
  const method = typeof body === 'object' && body ? (body.method ?? '(response)') : exchange.request.method;
  const params = typeof body === 'object' && body ? JSON.stringify(body.params ?? {}) : String(body ?? '');
  const headers = Object.entries(exchange.request.headers)
    .filter(([name]) => /^(mcp-|authorization)/i.test(name))
    .map(([name, value]) => `${name}: ${value}`)
    .join(', ');
  const request = `→ ${exchange.request.method} ${method} ${remoteLine(params, 200)}${headers ? ` [${headers}]` : ''}`;
  const response = exchange.response
    ? `← HTTP ${exchange.response.status} ${remoteLine(exchange.response.messages.length > 0 ? JSON.stringify(exchange.response.messages.at(-1)) : (exchange.response.text ?? ''), ANSWER_CHARS)}`
    : `← ${exchange.error ?? 'no answer'}`;
  return [request, response];
}

function pad(text: string, width: number): string {
  return text.length >= width ? text : text + ' '.repeat(width - text.length);
}

function padStart(text: string, width: number): string {
  return text.length >= width ? text : ' '.repeat(width - text.length) + text;
}

function label(result: CheckResult): string {
  return `${result.id}  [${result.rules.join(' ')}]`;
}

function figures(result: CheckResult): string {
  return Object.entries(result.measurements)
    .map(([name, value]) => `${name}=${value}`)
    .join(' ');
}

/** One reason for checks of both generations, and for those that needed any task-capable tool. */
export function skipReason(message: string): string {
  return message.replace(/^no mapped tool can run as a task: /, '').replace(/\b(the server's) v[12] /g, '$1 ');
}

/** How many check ids a skip group names before `…`. */
const SKIP_IDS_SHOWN = 8;

/**
 * Skipped checks grouped by reason (most checks first), each reason once with the ids it covers, and one line on
 * how to get a full verdict: a server that skips 85 checks for one missing tool prints one group, not 85 entries.
 * The JSON report (`--json`) keeps every check with its own reason and spec link.
 */
function skippedSection(lines: string[], skipped: CheckResult[]): void {
  if (skipped.length === 0) return;
  const groups = new Map<string, string[]>();
  for (const result of skipped) {
    const reason = skipReason(result.message);
    groups.set(reason, [...(groups.get(reason) ?? []), result.id]);
  }
  lines.push('', `SKIPPED (${skipped.length}, ${groups.size === 1 ? 'one reason' : `${groups.size} reasons`}) — not verified, a skip is not a pass`);
  for (const [reason, ids] of [...groups].sort(([, a], [, b]) => b.length - a.length)) {
    lines.push(`  - ${ids.length === 1 ? '1 check' : `${ids.length} checks`}: ${remoteLine(reason, 600)}`);
    lines.push(
      `      ${ids.slice(0, SKIP_IDS_SHOWN).join(', ')}${ids.length > SKIP_IDS_SHOWN ? `, … (${ids.length - SKIP_IDS_SHOWN} more; --json lists them)` : ''}`,
    );
  }
  if (skipped.some((result) => /--tools-map/.test(result.message))) {
    lines.push(
      '  For a full verdict: name your tools per role in a tool map (--tools-map FILE; docs/verify.md), or verify a server',
      '  that serves the fixture tools (mcp-tasks serve --fixtures verify).',
    );
  }
}

/** Render a report for a terminal. */
export function renderText(report: VerifyReport): string {
  const lines: string[] = [];
  const tokens = [report.target.tokenA ? 'a' : '', report.target.tokenB ? 'b' : ''].filter(Boolean).join(', ') || 'none';
  lines.push(
    `mcp-tasks verify  ${report.target.url}  (generations ${report.target.generations.join(', ')}; tokens: ${tokens}; ${(report.durationMs / 1000).toFixed(1)} s)`,
  );
  for (const [generation, profile] of Object.entries(report.profile)) {
    lines.push(
      `  ${generation === 'v1' ? '2025-11-25' : '2026-07-28'}: ${profile.served ? `served, ${profile.tools?.length ?? 0} tools` : `not served — ${remoteLine(profile.reason)}`}`,
    );
  }
  lines.push('');
  lines.push(`${pad('gate', 22)}${padStart('passed', 8)}${padStart('warned', 8)}${padStart('failed', 8)}${padStart('skipped', 9)}  verdict`);
  for (const gate of report.gates) {
    const name = `${gate.gate}${gate.hard ? ' (hard)' : ''}${gate.decides && !gate.hard ? ' (gating)' : ''}`;
    lines.push(
      `${pad(name, 22)}${padStart(String(gate.passed), 8)}${padStart(String(gate.warnings), 8)}${padStart(String(gate.failed), 8)}${padStart(String(gate.skipped), 9)}  ${gate.verdict}`,
    );
  }
  const section = (title: string, mark: string, entries: CheckResult[], withExchange: boolean): void => {
    if (entries.length === 0) return;
    lines.push('', `${title} (${entries.length})`);
    for (const result of entries) {
      lines.push(`  ${mark} ${label(result)}  ${result.spec}`);
      lines.push(`      ${remoteLine(result.message, 600)}`);
      if (withExchange && result.failedExchange) for (const line of exchangeLines(result.failedExchange)) lines.push(`      ${line}`);
    }
  };
  section(
    'FAILED',
    '✗',
    report.results.filter((result) => result.status === 'failed'),
    true,
  );
  section(
    'WARNINGS',
    '!',
    report.results.filter((result) => result.status === 'warning'),
    true,
  );
  skippedSection(
    lines,
    report.results.filter((result) => result.status === 'skipped'),
  );
  const load = report.results.filter((result) => result.gate === 'load' && result.status !== 'skipped');
  if (load.length > 0) {
    lines.push('', 'LOAD FIGURES');
    for (const result of load) lines.push(`  ${pad(result.id, 28)} ${pad(result.status, 8)} ${figures(result)}`);
  }
  const deciding = report.gates.filter((gate) => gate.decides).map((gate) => gate.gate);
  const verdict = report.exitCode === 0 ? 'PASSED' : report.exitCode === 1 ? 'FAILED' : 'INCOMPLETE (checks skipped; a skip is not a pass)';
  lines.push('', `verdict (${deciding.join(' + ')}): ${verdict} — exit ${report.exitCode}`);
  return `${lines.join('\n')}\n`;
}

/** The `verify --list` table: id, gate, generation, severity, needs, rules. */
export function renderCheckList(checks: readonly CheckDefinition[], link: (rules: readonly string[]) => string): string {
  const lines = [`${pad('id', 44)} ${pad('gate', 14)} ${pad('severity', 8)} ${pad('needs', 26)} rules`];
  for (const check of checks) {
    lines.push(
      `${pad(check.id, 44)} ${pad(check.gate, 14)} ${pad(check.severity, 8)} ${pad((check.needs ?? []).join(',') || '-', 26)} ${check.rules.join(' ')}`,
    );
    lines.push(`    ${check.title}`);
    lines.push(`    ${link(check.rules)}`);
  }
  lines.push('', `${checks.length} checks; select with --only/--exclude by id glob (v1.*, *.cross-owner-*), gate (security) or rule id (C-SEC-02, R45)`);
  return `${lines.join('\n')}\n`;
}
