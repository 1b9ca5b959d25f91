/**
 * The structured report of `analyze_logs` (its `structuredContent`) built from what a scan accumulated: the
 * templates that need attention (FATAL, ERROR, WARN) first, what is new or spiking in the last hours against the
 * earlier baseline, and the most frequent templates, each with its severity, counts, first and last time seen,
 * files and an example.
 */
import type { BucketCounts, SeverityCounts } from './counts.js';
import { HOUR_MS, hourStart } from './counts.js';
import type { LogCluster } from './miner.js';
import type { FileReport } from './scan.js';
import { SEVERITIES, type Severity } from './severity.js';
import { RECENT_HOURS, templateSeverity, type TemplateStats } from './stats.js';

/** Totals of a scan (or of a journaled part of one). */
export type ScanTotals = {
  counts: BucketCounts;
  linesBeforeSince: number;
  eventsBeforeSince: number;
  binaryFiles: number;
  failures: number;
  /** Epoch ms of the earliest and latest timestamped event counted, or `null`. */
  first: number | null;
  last: number | null;
};

/** One template as reported. */
export type TemplateReport = {
  /** Message template, `<*>` at variable positions, secrets and personal data redacted. */
  template: string;
  /** What its lines state most often, else what its words imply (`UNKNOWN`: neither). */
  severity: Severity | 'UNKNOWN';
  severitySource: 'stated' | 'implied' | 'none';
  /** Events it covers (a multi-line event once) and their lines. */
  events: number;
  lines: number;
  severities: SeverityCounts;
  /** ISO 8601 UTC of its first and last timestamped event, or `null`. */
  firstSeen: string | null;
  lastSeen: string | null;
  /** Files it appears in (approximate for merged templates) and up to three of them. */
  files: number;
  fileSamples: string[];
  /** The logger, program or tag of its first event (`sshd`, `dfs.DataNode`), or `null`. */
  component: string | null;
  /** The first line it covered, capped and redacted. */
  example: string;
  /** `new`: first seen in the trend window; `spike`: its rate there is several times the earlier one. */
  trend: 'new' | 'spike' | null;
  /** Events in the trend window, and how many times its earlier hourly rate that is (`null`: no earlier rate). */
  recentEvents: number;
  spikeFactor: number | null;
  /** ISO 8601 UTC of its busiest hour in the trend window, or `null` (where the text chart marks a spike). */
  peakHour: string | null;
};

/** The scan's result (the tool's `structuredContent`); a type alias so that it is assignable to `JsonObject`. */
export type LogScanReport = {
  path: string;
  /** Log files read to the end. */
  files: number;
  /** Non-blank lines counted (those skipped by `since` excluded; lines read before a file failed included). */
  lines: number;
  /** Events counted: a line, or a line with its continuation lines (stack frames, traceback lines). */
  events: number;
  /** Lines and events skipped because they are older than `since`. */
  linesBeforeSince: number;
  eventsBeforeSince: number;
  /** Files not read: not log files by name, binary (see `binaryFiles`), or unreadable (see `failedFiles`). */
  skippedFiles: number;
  /** Selected files (by name or `include`) that are binary from their first chunk; not read, not in `perFile`. */
  binaryFiles: number;
  /** Symlinks skipped because their target escapes the roots. */
  escapedSymlinks: number;
  /** Whether the file list hit its cap and later files were ignored. */
  truncated: boolean;
  /** ISO 8601 UTC of the earliest and latest timestamped event, or `null` when no line had a usable timestamp. */
  timeRange: { first: string; last: string } | null;
  /** Files per detected header format (`syslog`, `log4j`, `learned`, `none` …). */
  formats: Record<string, number>;
  severities: SeverityCounts;
  /** Per file in path order; at most 1000 (`detail: "full"`) or {@link SUMMARY_FILES} (summary). */
  perFile: FileReport[];
  /** Whether `perFile` lists fewer files than were read. */
  perFileTruncated: boolean;
  /**
   * Per UTC hour `YYYY-MM-DDTHH:00Z`, plus `unknown` (no timestamp) and `other` (beyond the hour cap); not in the
   * summary (tens to hundreds of kilobytes over months of logs).
   */
  perHour: Record<string, BucketCounts>;
  /** `full` when the caller asked for everything (`detail: "full"`). */
  detail?: 'full';
  /** Distinct templates kept at the end of the scan, and rare ones dropped to stay within the cap. */
  templateCount: number;
  evictedTemplates: number;
  /** FATAL, ERROR and WARN templates, most severe first, then most frequent; at most `top` (of `attentionCount`). */
  attention: TemplateReport[];
  attentionCount: number;
  /** What is new or spiking in the last `windowHours` hours of the logs against the hours before. */
  trends: {
    windowHours: number;
    /** The window, ISO 8601 UTC hours, or `null` without timestamps. */
    from: string | null;
    to: string | null;
    /** Hours of logs before the window: trends need at least `windowHours` of them. */
    baselineHours: number;
    /** New templates listed one by one (FATAL, ERROR and WARN always; others unless part of a {@link NewBurst}). */
    new: TemplateReport[];
    newCount: number;
    /** Many new templates first seen together (a restart, a deployment): one entry each instead of a screen of them. */
    bursts: NewBurst[];
    spiking: TemplateReport[];
    spikingCount: number;
  };
  /** Most frequent templates first; at most `top`. */
  templates: TemplateReport[];
  /** Journaled parts of an earlier run of this task merged in (0: the scan ran in one go). */
  resumedParts: number;
  /**
   * Files that could not be read to the end (first 50): unreadable, corrupt, or turning binary part-way (lines
   * before that point are counted).
   */
  failedFiles: { path: string; error: string }[];
};

/**
 * New templates below WARN first seen within {@link BURST_GAP_MS} of each other, at least {@link MIN_BURST_TEMPLATES}
 * of them: what a host prints when it boots (Linux_2k's reboot was 88 NEW lines, issue 26 item 12).
 */
export type NewBurst = {
  /** ISO 8601 UTC: first seen of the earliest and of the latest template of the burst. */
  from: string;
  to: string;
  templates: number;
  events: number;
  /** Components with the most templates in the burst, most first (at most 3). */
  components: { name: string; templates: number }[];
  /** The earliest template's example. */
  example: string;
};

/** New templates first seen this close to the previous one belong to the same burst (ms). */
export const BURST_GAP_MS = 60_000;
/** Fewer new templates than this are listed one by one. */
export const MIN_BURST_TEMPLATES = 10;

/** Hours of the trend window. */
export const TREND_WINDOW_HOURS = 6;
/** A template spikes when its hourly rate in the window is this many times its earlier one… */
export const SPIKE_FACTOR = 3;
/** … and it has at least this many events in the window. */
export const MIN_SPIKE_EVENTS = 10;
/** Characters kept of a rendered template (at most 128 tokens are mined, but tokens can be long). */
const MAX_TEMPLATE_LENGTH = 1000;

/** What {@link buildReport} needs. */
export interface ReportInput {
  path: string;
  logFiles: number;
  walkedFiles: number;
  escapedSymlinks: number;
  truncated: boolean;
  totals: ScanTotals;
  perFile: FileReport[];
  perHour: Record<string, BucketCounts>;
  formats: Record<string, number>;
  failedFiles: { path: string; error: string }[];
  templates: { cluster: LogCluster; stats: TemplateStats; implied: Severity | null }[];
  evictedTemplates: number;
  top: number;
  resumedParts: number;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const RANK: Record<Severity | 'UNKNOWN', number> = { FATAL: 0, ERROR: 1, WARN: 2, INFO: 3, DEBUG: 4, TRACE: 5, UNKNOWN: 6 };

/** The report; see the module comment. */
export function buildReport(input: ReportInput): LogScanReport {
  const { totals, top } = input;
  const window = trendWindow(totals);
  const all = input.templates.map(({ cluster, stats, implied }) => templateReport(cluster, stats, implied, window));
  const byEvents = (a: TemplateReport, b: TemplateReport) => b.events - a.events;
  const attention = all
    .filter((t) => t.severity === 'FATAL' || t.severity === 'ERROR' || t.severity === 'WARN')
    .sort((a, b) => RANK[a.severity] - RANK[b.severity] || byEvents(a, b));
  const { bursts, collapsed } = newBursts(all.filter((t) => t.trend === 'new'));
  const fresh = all
    .filter((t) => t.trend === 'new' && !collapsed.has(t))
    .sort((a, b) => RANK[a.severity] - RANK[b.severity] || b.recentEvents - a.recentEvents);
  const spiking = all.filter((t) => t.trend === 'spike').sort((a, b) => (b.spikeFactor ?? 0) - (a.spikeFactor ?? 0) || b.recentEvents - a.recentEvents);
  const read = input.logFiles - totals.failures - totals.binaryFiles;
  return {
    path: input.path,
    files: read,
    lines: totals.counts.lines,
    events: totals.counts.events,
    linesBeforeSince: totals.linesBeforeSince,
    eventsBeforeSince: totals.eventsBeforeSince,
    skippedFiles: input.walkedFiles - input.logFiles + totals.failures + totals.binaryFiles,
    binaryFiles: totals.binaryFiles,
    escapedSymlinks: input.escapedSymlinks,
    truncated: input.truncated,
    timeRange: totals.first === null || totals.last === null ? null : { first: iso(totals.first) as string, last: iso(totals.last) as string },
    formats: input.formats,
    severities: totals.counts.severities,
    perFile: input.perFile,
    perFileTruncated: input.logFiles - totals.binaryFiles > input.perFile.length,
    perHour: input.perHour,
    templateCount: all.length,
    evictedTemplates: input.evictedTemplates,
    attention: attention.slice(0, top),
    attentionCount: attention.length,
    trends: {
      windowHours: TREND_WINDOW_HOURS,
      from: window ? iso(window.start) : null,
      to: window ? iso(window.end) : null,
      baselineHours: window?.baselineHours ?? 0,
      new: fresh.slice(0, top),
      newCount: fresh.length,
      bursts,
      spiking: spiking.slice(0, top),
      spikingCount: spiking.length,
    },
    templates: [...all].sort(byEvents).slice(0, top),
    resumedParts: input.resumedParts,
    failedFiles: input.failedFiles,
  };
}

const ACTIONABLE = new Set<TemplateReport['severity']>(['FATAL', 'ERROR', 'WARN']);

/** The {@link NewBurst}s among `fresh` (new templates) and the templates they take out of the one-by-one list. */
function newBursts(fresh: readonly TemplateReport[]): { bursts: NewBurst[]; collapsed: Set<TemplateReport> } {
  const timed = fresh.filter((t) => t.firstSeen !== null && !ACTIONABLE.has(t.severity));
  const at = (t: TemplateReport) => Date.parse(t.firstSeen as string);
  timed.sort((a, b) => at(a) - at(b));
  const bursts: NewBurst[] = [];
  const collapsed = new Set<TemplateReport>();
  let group: TemplateReport[] = [];
  const close = (): void => {
    if (group.length >= MIN_BURST_TEMPLATES) {
      const components = new Map<string, number>();
      for (const t of group) if (t.component) components.set(t.component, (components.get(t.component) ?? 0) + 1);
      bursts.push({
        from: group[0]?.firstSeen as string,
        to: group.at(-1)?.firstSeen as string,
        templates: group.length,
        events: group.reduce((sum, t) => sum + t.events, 0),
        components: [...components]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 3)
          .map(([name, templates]) => ({ name, templates })),
        example: group[0]?.example as string,
      });
      for (const t of group) collapsed.add(t);
    }
    group = [];
  };
  for (const t of timed) {
    const last = group.at(-1);
    if (last && at(t) - at(last) > BURST_GAP_MS) close();
    group.push(t);
  }
  close();
  return { bursts, collapsed };
}

interface TrendWindow {
  /** First and last hour start of the window. */
  start: number;
  end: number;
  baselineHours: number;
}

/**
 * Hours before the window that a template's earlier rate is taken from, at most: the hours a template keeps
 * ({@link RECENT_HOURS}) less the window. Never the whole span of the scan: a gap in it (a year-less file placed in
 * another year than its neighbours, a host silent for months) made the earlier rate of a template nearly zero, and
 * the report said `SPIKE x141438` against "the 203,671 h before" (issue 26 item 12).
 */
export const MAX_BASELINE_HOURS = RECENT_HOURS - TREND_WINDOW_HOURS;

function trendWindow(totals: ScanTotals): TrendWindow | null {
  if (totals.first === null || totals.last === null) return null;
  const end = hourStart(totals.last);
  const start = end - (TREND_WINDOW_HOURS - 1) * HOUR_MS;
  return { start, end, baselineHours: Math.min(MAX_BASELINE_HOURS, Math.max(0, (start - hourStart(totals.first)) / HOUR_MS)) };
}

function templateReport(cluster: LogCluster, stats: TemplateStats, implied: Severity | null, window: TrendWindow | null): TemplateReport {
  const { severity, source } = templateSeverity(stats, implied);
  let recent = 0;
  let before = 0;
  let peak: number | null = null;
  let peakCount = 0;
  for (const [hour, count] of stats.recent) {
    if (window && hour < window.start) {
      if (hour >= window.start - window.baselineHours * HOUR_MS) before += count;
      continue;
    }
    recent += count;
    if (count > peakCount) {
      peak = hour;
      peakCount = count;
    }
  }
  const trusted = window !== null && window.baselineHours >= TREND_WINDOW_HOURS;
  const earlierRate = trusted && before > 0 ? before / window.baselineHours : null;
  const factor = earlierRate === null ? null : recent / TREND_WINDOW_HOURS / earlierRate;
  let trend: TemplateReport['trend'] = null;
  if (trusted && stats.first !== null && stats.first >= window.start) trend = 'new';
  else if (factor !== null && recent >= MIN_SPIKE_EVENTS && factor >= SPIKE_FACTOR) trend = 'spike';
  const text = cluster.tokens.join(' ');
  return {
    template: text.length > MAX_TEMPLATE_LENGTH ? `${text.slice(0, MAX_TEMPLATE_LENGTH)}…` : text,
    severity: severity ?? 'UNKNOWN',
    severitySource: source,
    events: stats.events,
    lines: stats.lines,
    severities: { ...stats.severities },
    firstSeen: iso(stats.first),
    lastSeen: iso(stats.last),
    files: stats.fileIds.size,
    fileSamples: [...stats.fileSamples],
    component: stats.component,
    // A spike shows a line from the window it spikes in; everything else the template's first line.
    example:
      trend === 'spike' && stats.latestExample !== null && window && (stats.latestExampleAt ?? 0) >= window.start ? stats.latestExample : cluster.example,
    trend,
    recentEvents: recent,
    spikeFactor: factor === null ? null : Math.round(factor * 10) / 10,
    peakHour: iso(peak),
  };
}

/** Severity names in report order, most severe first, `UNKNOWN` last. */
export const REPORT_SEVERITIES: readonly (Severity | 'UNKNOWN')[] = [...SEVERITIES, 'UNKNOWN'];

/** The summary `structuredContent` of `analyze_logs` (see {@link summaryReport}). */
export type LogScanSummary = Omit<LogScanReport, 'perHour' | 'detail'> & { detail: 'summary' };

/** Templates per list of the summary `structuredContent` (issue 27 §2). */
export const SUMMARY_ITEMS = 5;
/** Files of `perFile` in the summary `structuredContent`. */
export const SUMMARY_FILES = 20;

/**
 * The summary `structuredContent` of a report (issue 27 §2): clients such as Claude Code hand the model this JSON
 * instead of the text report, so it keeps what a program needs — every count, the time range, the formats, the
 * first {@link SUMMARY_ITEMS} templates of each list and {@link SUMMARY_FILES} files — and leaves the hourly counts
 * and the long lists to `detail: "full"` (the counts `attentionCount`, `newCount`, `spikingCount` and
 * `templateCount` say how many there are).
 */
export function summaryReport(report: LogScanReport): LogScanSummary {
  const { perHour: _perHour, ...rest } = report;
  return {
    ...rest,
    perFile: report.perFile.slice(0, SUMMARY_FILES),
    perFileTruncated: report.perFileTruncated || report.perFile.length > SUMMARY_FILES,
    attention: report.attention.slice(0, SUMMARY_ITEMS),
    templates: report.templates.slice(0, SUMMARY_ITEMS),
    trends: { ...report.trends, new: report.trends.new.slice(0, SUMMARY_ITEMS), spiking: report.trends.spiking.slice(0, SUMMARY_ITEMS) },
    detail: 'summary',
  };
}
