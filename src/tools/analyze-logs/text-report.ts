/**
 * The text report of `analyze_logs`, for the person on call: totals, the hourly chart, the templates that need
 * attention (FATAL, ERROR, WARN) with counts, first and last seen, files and an example, what is new or spiking,
 * then the most frequent templates (mostly INFO noise) summarised after.
 */
import { type ChartMark, hourlyChart } from './chart.js';
import { type LogScanReport, REPORT_SEVERITIES, type TemplateReport } from './report.js';

const number = (n: number) => n.toLocaleString('en-US');
/** `2024-03-01 10:15:00` from an ISO time. */
const when = (iso: string | null) => (iso === null ? 'no timestamp' : iso.slice(0, 19).replace('T', ' '));

/** `1 file`, `2 files`. */
export function plural(count: number, one: string, many = `${one}s`): string {
  return `${number(count)} ${count === 1 ? one : many}`;
}

/** `  … 5 more templates` when a list was cut, else nothing. */
function more(shown: number, total: number, one: string, many = `${one}s`): string[] {
  return total > shown ? [`  … ${plural(total - shown, `more ${one}`, `more ${many}`)} (raise "top" to see them)`] : [];
}

function withComponent(t: TemplateReport): string {
  return t.component ? `${t.component}: ${t.template}` : t.template;
}

/** Template lines for the attention and trend lists: the template, then its facts and an example. */
function detailed(t: TemplateReport, lead: string, count = `${number(t.events)} ×`): string[] {
  const files = t.fileSamples.length > 0 ? ` (${t.fileSamples.join(', ')}${t.files > t.fileSamples.length ? ', …' : ''})` : '';
  return [
    `  ${lead} ${count} ${withComponent(t)}`,
    `        first ${when(t.firstSeen)}, last ${when(t.lastSeen)}, in ${plural(t.files, 'file')}${files}`,
    `        e.g. ${t.example}`,
  ];
}

/** The text report of a scan. */
export function summarize(report: LogScanReport): string {
  const span = report.timeRange ? `, ${when(report.timeRange.first)} to ${when(report.timeRange.last)} UTC` : '';
  const events = report.events === report.lines ? '' : ` in ${plural(report.events, 'event')}`;
  const lines = [
    `Scanned ${plural(report.files, 'log file')} (${plural(report.skippedFiles, 'other file')} skipped), ` +
      `${plural(report.lines, 'line')}${events} under ${report.path}${span}.`,
  ];
  const formats = Object.entries(report.formats).sort((a, b) => b[1] - a[1]);
  if (formats.length > 0) lines.push(`Header formats: ${formats.map(([name, files]) => `${name} ${plural(files, 'file')}`).join(', ')}.`);
  const severities = REPORT_SEVERITIES.filter((s) => report.severities[s] > 0).map((s) => `${s} ${number(report.severities[s])}`);
  lines.push(`Events by severity: ${severities.join(', ') || 'none'}.`);
  if (report.linesBeforeSince > 0) lines.push(`${plural(report.linesBeforeSince, 'line')} before "since" skipped.`);
  if (report.binaryFiles > 0) lines.push(`${plural(report.binaryFiles, 'file')} with binary content skipped.`);
  if (report.escapedSymlinks > 0) lines.push(`${plural(report.escapedSymlinks, 'symlink')} leading outside the roots skipped.`);
  if (report.failedFiles.length > 0) {
    lines.push(
      `${plural(report.failedFiles.length, 'file')} could not be read: ${report.failedFiles
        .slice(0, 3)
        .map((f) => `${f.path} (${f.error})`)
        .join('; ')}.`,
    );
  }
  if (report.resumedParts > 0) lines.push(`Resumed after a restart: ${plural(report.resumedParts, 'journaled part')} of the earlier run merged in.`);

  const marks: ChartMark[] = [
    ...report.trends.new.flatMap((t) => (t.firstSeen ? [{ hour: t.firstSeen, mark: 'N' as const }] : [])),
    ...report.trends.bursts.map((burst) => ({ hour: burst.from, mark: 'N' as const })),
    ...report.trends.spiking.flatMap((t) => (t.peakHour ? [{ hour: t.peakHour, mark: 'S' as const }] : [])),
  ];
  const chart = hourlyChart(report.perHour, marks);
  if (chart.length > 0) lines.push('', ...chart);
  const untimed = report.perHour['unknown']?.events ?? 0;
  if (untimed > 0) lines.push(`  (${plural(untimed, 'event')} without a usable timestamp are not in the chart)`);

  lines.push('');
  if (report.attentionCount === 0) lines.push('No FATAL, ERROR or WARN templates.');
  else {
    lines.push(`Errors and warnings first (${plural(report.attentionCount, 'template')}):`);
    for (const t of report.attention) lines.push(...detailed(t, t.severity.padEnd(5)));
    lines.push(...more(report.attention.length, report.attentionCount, 'error or warning template'));
  }

  const { trends } = report;
  if (trends.from !== null && trends.baselineHours >= trends.windowHours) {
    lines.push('', `New or spiking in the last ${trends.windowHours} h (from ${when(trends.from)} UTC), against the ${number(trends.baselineHours)} h before:`);
    if (trends.newCount + trends.bursts.length + trends.spikingCount === 0) lines.push('  nothing new, nothing spiking.');
    for (const burst of trends.bursts) {
      const seconds = Math.round((Date.parse(burst.to) - Date.parse(burst.from)) / 1000);
      const components = burst.components.map((c) => `${c.name} ${number(c.templates)}`).join(', ');
      lines.push(
        `  NEW BURST   ${plural(burst.templates, 'template')} (${plural(burst.events, 'event')}) first seen within ${seconds} s from ${when(burst.from)}` +
          `${components ? ` (${components})` : ''}: a restart or a deployment? Those of WARN and above are listed one by one.`,
        `        e.g. ${burst.example}`,
      );
    }
    for (const t of trends.new) lines.push(...detailed(t, `NEW ${t.severity}`.padEnd(11)));
    lines.push(...more(trends.new.length, trends.newCount, 'new template'));
    for (const t of trends.spiking) {
      lines.push(...detailed(t, `SPIKE x${t.spikeFactor}`.padEnd(11), `${number(t.recentEvents)} in ${trends.windowHours} h (${number(t.events)} in all) ×`));
    }
    lines.push(...more(trends.spiking.length, trends.spikingCount, 'spiking template'));
  } else if (trends.from !== null) {
    lines.push('', `No trends: the logs span less than ${trends.windowHours} h before their last ${trends.windowHours} h.`);
  }

  lines.push('', `Most frequent templates (${number(report.templates.length)} of ${number(report.templateCount)}):`);
  for (const t of report.templates) lines.push(`  ${number(t.events).padStart(9)} × ${t.severity.padEnd(7)} ${withComponent(t)}`);
  lines.push(...more(report.templates.length, report.templateCount, 'template'));
  if (report.evictedTemplates > 0) lines.push(`(${plural(report.evictedTemplates, 'rare template')} dropped to stay within the template cap.)`);
  return lines.join('\n');
}
