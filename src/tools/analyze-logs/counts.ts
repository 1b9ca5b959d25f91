/**
 * Counters per scan, per file and per UTC hour: lines, events (a multi-line event, such as a stack trace, is one
 * event of several lines) and events per severity. Hour buckets are capped so that a tree spanning years (or a
 * misparsed timestamp) cannot grow the result without bound.
 */
import { SEVERITIES, type Severity } from './severity.js';

/** Events per severity; `UNKNOWN` counts events whose lines state no level and whose template implies none. */
export type SeverityCounts = Record<Severity | 'UNKNOWN', number>;

/** Lines, events and their severities in one bucket. */
export type BucketCounts = {
  lines: number;
  events: number;
  severities: SeverityCounts;
};

/** Hour bucket key for events without a usable timestamp. */
export const UNKNOWN_HOUR = 'unknown';
/** Hour bucket key for events of hours beyond the bucket cap. */
export const OTHER_HOURS = 'other';
export const HOUR_MS = 3_600_000;

/** All-zero severity counters. */
export function emptySeverityCounts(): SeverityCounts {
  const counts = { UNKNOWN: 0 } as SeverityCounts;
  for (const severity of SEVERITIES) counts[severity] = 0;
  return counts;
}

/** A new empty bucket. */
export function emptyBucket(): BucketCounts {
  return { lines: 0, events: 0, severities: emptySeverityCounts() };
}

/** Counts one event of `lines` lines into a bucket. */
export function countEvent(bucket: BucketCounts, severity: Severity | null, lines: number): void {
  bucket.lines += lines;
  bucket.events++;
  countSeverity(bucket.severities, severity);
}

/**
 * Counts one event of `severity` (`null`: `UNKNOWN`). A store to a named property: every counter has the same
 * shape, so each is one known slot, where a store keyed by the severity's name is a lookup by name (an event
 * is counted in eight counters).
 */
export function countSeverity(counts: SeverityCounts, severity: Severity | null): void {
  switch (severity) {
    case 'INFO':
      counts.INFO++;
      return;
    case 'WARN':
      counts.WARN++;
      return;
    case 'ERROR':
      counts.ERROR++;
      return;
    case 'DEBUG':
      counts.DEBUG++;
      return;
    case 'FATAL':
      counts.FATAL++;
      return;
    case 'TRACE':
      counts.TRACE++;
      return;
    case null:
      counts.UNKNOWN++;
  }
}

/** Adds `from` into `into`. */
export function addBucket(into: BucketCounts, from: BucketCounts): void {
  into.lines += from.lines;
  into.events += from.events;
  for (const key of Object.keys(from.severities) as (keyof SeverityCounts)[]) into.severities[key] += from.severities[key];
}

/** Start of the UTC hour of `epochMs`. */
export function hourStart(epochMs: number): number {
  return epochMs - (((epochMs % HOUR_MS) + HOUR_MS) % HOUR_MS);
}

/** `YYYY-MM-DDTHH:00Z` of an hour start. */
export function hourKey(hourStartMs: number): string {
  return `${new Date(hourStartMs).toISOString().slice(0, 13)}:00Z`;
}

/** UTC hour buckets keyed `YYYY-MM-DDTHH:00Z`, plus {@link UNKNOWN_HOUR} and {@link OTHER_HOURS}. */
export class HourlyCounts {
  private readonly buckets = new Map<string, BucketCounts>();
  /** Key of the last hour seen: consecutive lines mostly share an hour, so the key is rarely rebuilt. */
  private lastHourStart = Number.NaN;
  private lastKey = '';
  /** The bucket of the last key counted and the key it is counted under (a key keeps its bucket once given one). */
  private lastAdded: { key: string; bucket: BucketCounts; counted: string } | null = null;

  /** @param maxHours - distinct hours kept; later hours are counted under {@link OTHER_HOURS}. */
  constructor(private readonly maxHours: number) {}

  /** Counts one event at `epochMs` (or without a timestamp when `null`); returns the bucket's key. */
  add(epochMs: number | null, severity: Severity | null, lines: number): string {
    const key = epochMs === null ? UNKNOWN_HOUR : this.hourKey(epochMs);
    let last = this.lastAdded;
    if (last === null || last.key !== key) {
      const bucket = this.bucket(key);
      last = { key, bucket, counted: bucket === this.buckets.get(key) ? key : OTHER_HOURS };
      this.lastAdded = last;
    }
    countEvent(last.bucket, severity, lines);
    return last.counted;
  }

  /** Adds buckets of another count (a journaled part of a scan) under their keys, within the cap. */
  addAll(buckets: Readonly<Record<string, BucketCounts>>): void {
    for (const [key, counts] of Object.entries(buckets)) addBucket(this.bucket(key), counts);
  }

  /** The buckets, hours in chronological order, then `other`, then `unknown`. */
  toJSON(): Record<string, BucketCounts> {
    const keys = [...this.buckets.keys()].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
    return Object.fromEntries(keys.map((key) => [key, this.buckets.get(key) as BucketCounts]));
  }

  private hourKey(epochMs: number): string {
    // Within the last hour (most events): no remainders, which are slow on numbers of this size.
    if (epochMs >= this.lastHourStart && epochMs < this.lastHourStart + HOUR_MS) return this.lastKey;
    const start = hourStart(epochMs);
    if (start !== this.lastHourStart) {
      this.lastHourStart = start;
      this.lastKey = hourKey(start);
    }
    return this.lastKey;
  }

  private bucket(key: string): BucketCounts {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      const hours = this.buckets.size - (this.buckets.has(UNKNOWN_HOUR) ? 1 : 0) - (this.buckets.has(OTHER_HOURS) ? 1 : 0);
      if (key !== UNKNOWN_HOUR && key !== OTHER_HOURS && hours >= this.maxHours) return this.bucket(OTHER_HOURS);
      bucket = emptyBucket();
      this.buckets.set(key, bucket);
    }
    return bucket;
  }
}

function rank(key: string): number {
  return key === UNKNOWN_HOUR ? 2 : key === OTHER_HOURS ? 1 : 0;
}
