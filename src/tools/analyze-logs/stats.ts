/**
 * What the scan keeps per template besides its text: events and lines, severities, first and last time seen,
 * the files it appears in (a count and a few names), its component, and events per recent hour (for what is new
 * or spiking). Bounded per template: {@link MAX_FILE_SAMPLES} names and {@link RECENT_HOURS} hours, so memory
 * grows with the number of templates, not of lines. Stats serialise to JSON so that a journaled part of a scan
 * can be merged back in after a restart.
 */
import { emptySeverityCounts, hourStart, type SeverityCounts } from './counts.js';
import type { Severity } from './severity.js';

/** File names kept per template. */
export const MAX_FILE_SAMPLES = 3;
/** Hours of events kept per template (the latest ones); older events count in `older`. */
export const RECENT_HOURS = 48;

/** Stats of one template. */
export interface TemplateStats {
  events: number;
  lines: number;
  severities: SeverityCounts;
  /** Events whose lines stated a level. */
  stated: number;
  /** Events with a timestamp. */
  timed: number;
  /** Epoch ms of the first and last timestamped event, or `null`. */
  first: number | null;
  last: number | null;
  /** Files it appears in (approximate once templates have been merged: a file may count twice). */
  files: number;
  fileSamples: string[];
  component: string | null;
  /** Events per hour start (epoch ms), the latest {@link RECENT_HOURS} hours only. */
  recent: Map<number, number>;
  /** Scan-local ordinal of the last file counted in `files` (not serialised). */
  lastFile: number;
}

/** JSON form of {@link TemplateStats}: `recent` as `[hour, count]` pairs, `lastFile` left out. */
export type TemplateStatsJson = Omit<TemplateStats, 'recent' | 'lastFile'> & { recent: [number, number][] };

export function emptyStats(): TemplateStats {
  return {
    events: 0,
    lines: 0,
    severities: emptySeverityCounts(),
    stated: 0,
    timed: 0,
    first: null,
    last: null,
    files: 0,
    fileSamples: [],
    component: null,
    recent: new Map(),
    lastFile: -1,
  };
}

/** One event of a template. */
export interface EventFacts {
  epochMs: number | null;
  severity: Severity | null;
  /** Whether the severity was stated by the line rather than implied by the template. */
  stated: boolean;
  lines: number;
  fileOrdinal: number;
  file: string;
  component: string | null;
}

/** Counts one event into a template's stats. */
export function countInto(stats: TemplateStats, event: EventFacts): void {
  stats.events++;
  stats.lines += event.lines;
  stats.severities[event.severity ?? 'UNKNOWN']++;
  if (event.stated) stats.stated++;
  if (event.epochMs !== null) {
    stats.timed++;
    if (stats.first === null || event.epochMs < stats.first) stats.first = event.epochMs;
    if (stats.last === null || event.epochMs > stats.last) stats.last = event.epochMs;
    addRecent(stats.recent, hourStart(event.epochMs), 1);
  }
  if (stats.lastFile !== event.fileOrdinal) {
    stats.lastFile = event.fileOrdinal;
    stats.files++;
    if (stats.fileSamples.length < MAX_FILE_SAMPLES && !stats.fileSamples.includes(event.file)) stats.fileSamples.push(event.file);
  }
  stats.component ??= event.component;
}

/** Adds `count` events in hour `hour`, dropping the oldest hour beyond {@link RECENT_HOURS}. */
function addRecent(recent: Map<number, number>, hour: number, count: number): void {
  const existing = recent.get(hour);
  if (existing !== undefined) {
    recent.set(hour, existing + count);
    return;
  }
  recent.set(hour, count);
  if (recent.size > RECENT_HOURS) {
    let oldest = Number.POSITIVE_INFINITY;
    for (const key of recent.keys()) if (key < oldest) oldest = key;
    recent.delete(oldest);
  }
}

/** Adds `from` into `into` (a template merged into another, or a journaled part of a scan). */
export function mergeStats(into: TemplateStats, from: TemplateStats | TemplateStatsJson): void {
  into.events += from.events;
  into.lines += from.lines;
  for (const key of Object.keys(from.severities) as (keyof SeverityCounts)[]) into.severities[key] += from.severities[key];
  into.stated += from.stated;
  into.timed += from.timed;
  if (from.first !== null && (into.first === null || from.first < into.first)) into.first = from.first;
  if (from.last !== null && (into.last === null || from.last > into.last)) into.last = from.last;
  into.files += from.files;
  for (const file of from.fileSamples) {
    if (into.fileSamples.length < MAX_FILE_SAMPLES && !into.fileSamples.includes(file)) into.fileSamples.push(file);
  }
  into.component ??= from.component;
  for (const [hour, count] of from.recent) addRecent(into.recent, hour, count);
}

export function statsToJson(stats: TemplateStats): TemplateStatsJson {
  return {
    events: stats.events,
    lines: stats.lines,
    severities: { ...stats.severities },
    stated: stats.stated,
    timed: stats.timed,
    first: stats.first,
    last: stats.last,
    files: stats.files,
    fileSamples: [...stats.fileSamples],
    component: stats.component,
    recent: [...stats.recent],
  };
}

/**
 * The severity of a template: the level its lines state most often (ties: the more severe) when any states one,
 * else the one its words imply, else `null`.
 */
export function templateSeverity(stats: TemplateStats, implied: Severity | null): { severity: Severity | null; source: 'stated' | 'implied' | 'none' } {
  if (stats.stated > 0) {
    let best: Severity | null = null;
    let most = 0;
    for (const [key, count] of Object.entries(stats.severities) as [keyof SeverityCounts, number][]) {
      if (key === 'UNKNOWN' || count <= most) continue;
      best = key;
      most = count;
    }
    if (best) return { severity: best, source: 'stated' };
  }
  return implied ? { severity: implied, source: 'implied' } : { severity: null, source: 'none' };
}
