/**
 * What the scan keeps per template besides its text: events and lines, severities, first and last time seen,
 * the files it appears in (a count and a few names), its component, and events per recent hour (for what is new
 * or spiking). Bounded per template: {@link MAX_FILE_SAMPLES} names, {@link RECENT_HOURS} hours and one bit per
 * file of the scan (the exact set of files it appears in), so memory grows with templates and files, not lines.
 * Stats serialise to JSON so that a journaled part of a scan can be merged back in after a restart; there the files
 * are named by path, since file ids are local to one run (issue 26 item 11: merged templates and resumed parts
 * count each file once).
 */
import { countSeverity, emptySeverityCounts, hourStart, type SeverityCounts } from './counts.js';
import type { Severity } from './severity.js';

/** File names kept per template. */
export const MAX_FILE_SAMPLES = 3;
/** Hours of events kept per template (the latest ones); older events count in `older`. */
export const RECENT_HOURS = 48;

/**
 * A set of file ids (small integers handed out by the scan, one per path): a bitset that grows with the largest id,
 * with its size kept, so that a template seen in every one of 500 files costs 64 bytes.
 */
export class FileIds {
  private words = new Uint32Array(1);
  private count = 0;

  /** Number of distinct files. */
  get size(): number {
    return this.count;
  }

  add(id: number): void {
    const word = id >>> 5;
    if (word >= this.words.length) {
      const grown = new Uint32Array(Math.max(word + 1, this.words.length * 2));
      grown.set(this.words);
      this.words = grown;
    }
    const bit = 1 << (id & 31);
    if ((this.words[word]! & bit) === 0) {
      this.words[word]! |= bit;
      this.count++;
    }
  }

  addAll(other: FileIds): void {
    for (const id of other.ids()) this.add(id);
  }

  /** The ids, ascending. */
  *ids(): Generator<number> {
    for (let word = 0; word < this.words.length; word++) {
      let bits = this.words[word]!;
      while (bits !== 0) {
        const low = bits & -bits;
        yield word * 32 + (31 - Math.clz32(low));
        bits ^= low;
      }
    }
  }
}

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
  /** The files it appears in, by the scan's file id; the count is `fileIds.size`. */
  fileIds: FileIds;
  fileSamples: string[];
  component: string | null;
  /** Events per hour start (epoch ms), the latest {@link RECENT_HOURS} hours only. */
  recent: Map<number, number>;
  /**
   * A line of the latest hour with events, and its time: a spike's example must come from the spike, not from the
   * template's first line days earlier (issue 26 item 12). Replaced once per newer hour, so a scan pays for it at
   * most once per template and hour. `null` until a timed event.
   */
  latestExample: string | null;
  latestExampleAt: number | null;
  /** Id of the last file added to `fileIds` (not serialised): most events follow one of the same file. */
  lastFile: number;
}

/**
 * JSON form of {@link TemplateStats}: `recent` as `[hour, count]` pairs, the files by path (`files`), `lastFile`
 * left out. A part journaled before paths were kept has a number in `files`; its file samples stand in for the list.
 */
export type TemplateStatsJson = Omit<TemplateStats, 'recent' | 'lastFile' | 'fileIds' | 'latestExample' | 'latestExampleAt'> & {
  recent: [number, number][];
  files: string[] | number;
  /** Absent in parts journaled before they were kept. */
  latestExample?: string | null;
  latestExampleAt?: number | null;
};

export function emptyStats(): TemplateStats {
  return {
    events: 0,
    lines: 0,
    severities: emptySeverityCounts(),
    stated: 0,
    timed: 0,
    first: null,
    last: null,
    fileIds: new FileIds(),
    fileSamples: [],
    component: null,
    recent: new Map(),
    latestExample: null,
    latestExampleAt: null,
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
  /** The scan's id of the file (one per path). */
  fileId: number;
  file: string;
  component: string | null;
  /** The event's first line (redacted), capped; called only when it becomes the template's latest example. */
  example: () => string;
}

/** Counts one event into a template's stats. */
export function countInto(stats: TemplateStats, event: EventFacts): void {
  stats.events++;
  stats.lines += event.lines;
  countSeverity(stats.severities, event.severity);
  if (event.stated) stats.stated++;
  if (event.epochMs !== null) {
    stats.timed++;
    if (stats.first === null || event.epochMs < stats.first) stats.first = event.epochMs;
    if (stats.last === null || event.epochMs > stats.last) stats.last = event.epochMs;
    const hour = hourStart(event.epochMs);
    addRecent(stats.recent, hour, 1);
    // A later hour than the latest example's: an hour start is a multiple of the hour, so it is later than that
    // hour's start exactly when it is later than the example's time (no second remainder).
    if (stats.latestExampleAt === null || hour > stats.latestExampleAt) {
      stats.latestExample = event.example();
      stats.latestExampleAt = event.epochMs;
    }
  }
  if (stats.lastFile !== event.fileId) {
    stats.lastFile = event.fileId;
    stats.fileIds.add(event.fileId);
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

/** Adds `from` into `into` (a template merged into another, or a journaled part read back by {@link statsFromJson}). */
export function mergeStats(into: TemplateStats, from: TemplateStats): void {
  into.events += from.events;
  into.lines += from.lines;
  for (const key of Object.keys(from.severities) as (keyof SeverityCounts)[]) into.severities[key] += from.severities[key];
  into.stated += from.stated;
  into.timed += from.timed;
  if (from.first !== null && (into.first === null || from.first < into.first)) into.first = from.first;
  if (from.last !== null && (into.last === null || from.last > into.last)) into.last = from.last;
  into.fileIds.addAll(from.fileIds);
  for (const file of from.fileSamples) {
    if (into.fileSamples.length < MAX_FILE_SAMPLES && !into.fileSamples.includes(file)) into.fileSamples.push(file);
  }
  into.component ??= from.component;
  for (const [hour, count] of from.recent) addRecent(into.recent, hour, count);
  if (from.latestExampleAt !== null && (into.latestExampleAt === null || from.latestExampleAt > into.latestExampleAt)) {
    into.latestExample = from.latestExample;
    into.latestExampleAt = from.latestExampleAt;
  }
}

/** `pathOf`: the path of a file id of this run. */
export function statsToJson(stats: TemplateStats, pathOf: (id: number) => string): TemplateStatsJson {
  return {
    events: stats.events,
    lines: stats.lines,
    severities: { ...stats.severities },
    stated: stats.stated,
    timed: stats.timed,
    first: stats.first,
    last: stats.last,
    files: [...stats.fileIds.ids()].map(pathOf),
    fileSamples: [...stats.fileSamples],
    component: stats.component,
    recent: [...stats.recent],
    latestExample: stats.latestExample,
    latestExampleAt: stats.latestExampleAt,
  };
}

/** Stats read back from a journaled part; `idOf`: this run's id of a path. */
export function statsFromJson(json: TemplateStatsJson, idOf: (path: string) => number): TemplateStats {
  const fileIds = new FileIds();
  for (const path of typeof json.files === 'number' ? json.fileSamples : json.files) fileIds.add(idOf(path));
  return {
    events: json.events,
    lines: json.lines,
    severities: { ...json.severities },
    stated: json.stated,
    timed: json.timed,
    first: json.first,
    last: json.last,
    fileIds,
    fileSamples: [...json.fileSamples],
    component: json.component,
    recent: new Map(json.recent),
    latestExample: json.latestExample ?? null,
    latestExampleAt: json.latestExampleAt ?? null,
    lastFile: -1,
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
