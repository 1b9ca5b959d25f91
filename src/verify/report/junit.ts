/**
 * JUnit XML for CI systems: one `<testsuite>` per gate, one `<testcase>` per check. A failure carries the message
 * and the request/answer it is about; a skip carries its reason (`<skipped message>`), so CI shows it as skipped,
 * never as passed; warnings and measured figures go to `<system-out>`.
 */
import { type CheckResult, GATES } from '../check.js';
import type { VerifyReport } from '../runner.js';
import { exchangeLines } from './text.js';

/** Escape text for XML 1.0, replacing the characters XML cannot carry at all by `\uXXXX`. */
export function xmlEscape(text: string): string {
  return (
    text
      // eslint-disable-next-line no-control-regex -- characters XML 1.0 forbids
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
      .replaceAll('&', '&amp;')
      .replaceAll('<', '&lt;')
      .replaceAll('>', '&gt;')
      .replaceAll('"', '&quot;')
  );
}

const seconds = (ms: number): string => (ms / 1000).toFixed(3);

function testcase(result: CheckResult): string {
  const attributes = `classname="verify.${result.gate}.${result.generation}" name="${xmlEscape(`${result.id} — ${result.title}`)}" time="${seconds(result.durationMs)}"`;
  const out: string[] = [`rules: ${result.rules.join(' ')}`, `spec: ${result.spec}`];
  if (result.status === 'warning') out.push(`warning: ${result.message}`);
  const figures = Object.entries(result.measurements);
  if (figures.length > 0) out.push(`measured: ${figures.map(([name, value]) => `${name}=${value}`).join(' ')}`);
  const systemOut = `<system-out>${xmlEscape(out.join('\n'))}</system-out>`;
  if (result.status === 'failed') {
    const detail = [result.message, ...(result.failedExchange ? exchangeLines(result.failedExchange) : [])].join('\n');
    return `    <testcase ${attributes}>\n      <failure message="${xmlEscape(result.message)}" type="${xmlEscape(result.rules[0] ?? 'check')}">${xmlEscape(detail)}</failure>\n      ${systemOut}\n    </testcase>`;
  }
  if (result.status === 'skipped')
    return `    <testcase ${attributes}>\n      <skipped message="${xmlEscape(result.message)}"/>\n      ${systemOut}\n    </testcase>`;
  return `    <testcase ${attributes}>\n      ${systemOut}\n    </testcase>`;
}

/** Render a report as JUnit XML. */
export function renderJunit(report: VerifyReport): string {
  const suites = GATES.map((gate) => {
    const results = report.results.filter((result) => result.gate === gate);
    if (results.length === 0) return '';
    const failures = results.filter((result) => result.status === 'failed').length;
    const skipped = results.filter((result) => result.status === 'skipped').length;
    const time = results.reduce((sum, result) => sum + result.durationMs, 0);
    return `  <testsuite name="${gate}" tests="${results.length}" failures="${failures}" errors="0" skipped="${skipped}" time="${seconds(time)}" timestamp="${report.startedAt}">\n${results.map(testcase).join('\n')}\n  </testsuite>`;
  }).filter(Boolean);
  const failures = report.results.filter((result) => result.status === 'failed').length;
  const skipped = report.results.filter((result) => result.status === 'skipped').length;
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="${xmlEscape(`mcp-tasks verify ${report.target.url}`)}" tests="${report.results.length}" failures="${failures}" errors="0" skipped="${skipped}" time="${seconds(report.durationMs)}">\n${suites.join('\n')}\n</testsuites>\n`;
}
