/**
 * A compact text chart of events per hour: one row of Unicode blocks (`▁▂▃▄▅▆▇█`, a space for none) per severity
 * band and one for the error rate, one column per hour (or per few hours when the logs span more than
 * {@link MAX_COLUMNS}), each row scaled to its own maximum, and a row of marks where templates are new (`N`) or
 * spike (`S`).
 */
import { type BucketCounts, HOUR_MS, OTHER_HOURS, type SeverityCounts, UNKNOWN_HOUR } from './counts.js';

/** Columns at most. */
export const MAX_COLUMNS = 72;
const BLOCKS = ' ▁▂▃▄▅▆▇█';

/** A mark under a column: `N` (a template first seen there) or `S` (a spike peaking there). */
export interface ChartMark {
  /** ISO 8601 UTC of the hour. */
  hour: string;
  mark: 'N' | 'S';
}

const BANDS: { label: string; of(s: SeverityCounts): number }[] = [
  { label: 'fatal+error', of: (s) => s.FATAL + s.ERROR },
  { label: 'warn', of: (s) => s.WARN },
  { label: 'info+debug', of: (s) => s.INFO + s.DEBUG + s.TRACE },
  { label: 'unknown', of: (s) => s.UNKNOWN },
];

/** One row of blocks scaled to its maximum (a non-zero value is at least `▁`). */
export function sparkline(values: readonly number[]): string {
  const max = Math.max(0, ...values);
  return values.map((v) => (v <= 0 || max === 0 ? BLOCKS[0] : BLOCKS[Math.max(1, Math.round((v / max) * 8))])).join('');
}

const number = (n: number) => n.toLocaleString('en-US');

/**
 * The chart's lines, or `[]` when no event had a timestamp.
 *
 * @param perHour - the report's hour buckets (`unknown` and `other` are left out of the chart).
 */
export function hourlyChart(perHour: Readonly<Record<string, BucketCounts>>, marks: readonly ChartMark[] = []): string[] {
  const hours = Object.keys(perHour).filter((key) => key !== UNKNOWN_HOUR && key !== OTHER_HOURS);
  if (hours.length === 0) return [];
  const starts = hours.map((key) => Date.parse(key.replace(':00Z', ':00:00Z')));
  const first = Math.min(...starts);
  const last = Math.max(...starts);
  const span = Math.round((last - first) / HOUR_MS) + 1;
  const width = Math.ceil(span / MAX_COLUMNS);
  const columns = Math.ceil(span / width);
  const column = (ms: number) => Math.min(columns - 1, Math.floor(Math.floor((ms - first) / HOUR_MS) / width));
  const totals = new Array<number>(columns).fill(0);
  const bands = BANDS.map(() => new Array<number>(columns).fill(0));
  hours.forEach((key, i) => {
    const bucket = perHour[key] as BucketCounts;
    const c = column(starts[i] as number);
    totals[c] = (totals[c] as number) + bucket.events;
    BANDS.forEach((band, b) => {
      (bands[b] as number[])[c] = ((bands[b] as number[])[c] as number) + band.of(bucket.severities);
    });
  });
  const errors = bands[0] as number[];
  const rates = totals.map((total, c) => (total === 0 ? 0 : (errors[c] as number) / total));
  const label = (text: string) => text.padEnd(12);
  const stamp = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
  const lines = [
    `Events per hour (UTC), ${stamp(first)} to ${stamp(last)}, one column per ${width === 1 ? 'hour' : `${width} hours`}; each row scaled to its maximum:`,
    `  ${label('all')}${sparkline(totals)}  max ${number(Math.max(...totals))}`,
  ];
  BANDS.forEach((band, b) => {
    const values = bands[b] as number[];
    const max = Math.max(...values);
    if (max > 0) lines.push(`  ${label(band.label)}${sparkline(values)}  max ${number(max)}`);
  });
  const maxRate = Math.max(...rates);
  if (maxRate > 0) lines.push(`  ${label('error rate')}${sparkline(rates)}  max ${(maxRate * 100).toFixed(1)} %`);
  if (marks.length > 0) {
    const row = new Array<string>(columns).fill(' ');
    for (const { hour, mark } of marks) {
      const ms = Date.parse(hour);
      if (Number.isNaN(ms) || ms < first || ms > last + HOUR_MS) continue;
      const c = column(ms);
      // A spike outranks a new template in a shared column.
      if (row[c] !== 'S') row[c] = mark;
    }
    lines.push(`  ${label('new/spike')}${row.join('').trimEnd()}`);
  }
  return lines;
}
