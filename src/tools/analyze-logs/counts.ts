/**
 * Severity counters per scan, per file and per UTC hour. Hour buckets are capped so that a tree spanning years
 * (or a misparsed timestamp) cannot grow the result without bound.
 */
import { SEVERITIES, type Severity } from './severity.js';

/** Lines per severity; `UNKNOWN` counts lines whose header names no level. */
export type SeverityCounts = Record<Severity | 'UNKNOWN', number>;

/** Lines and their severities in one bucket. */
export type BucketCounts = {
  lines: number;
  severities: SeverityCounts;
};

/** Hour bucket key for lines without a parseable timestamp. */
export const UNKNOWN_HOUR = 'unknown';
/** Hour bucket key for lines of hours beyond the bucket cap. */
export const OTHER_HOURS = 'other';

/** All-zero severity counters. */
export function emptySeverityCounts(): SeverityCounts {
  const counts = { UNKNOWN: 0 } as SeverityCounts;
  for (const severity of SEVERITIES) counts[severity] = 0;
  return counts;
}

/** A new empty bucket. */
export function emptyBucket(): BucketCounts {
  return { lines: 0, severities: emptySeverityCounts() };
}

/** Counts one line into a bucket. */
export function countLine(bucket: BucketCounts, severity: Severity | null): void {
  bucket.lines++;
  bucket.severities[severity ?? 'UNKNOWN']++;
}

/** UTC hour buckets keyed `YYYY-MM-DDTHH:00Z`, plus {@link UNKNOWN_HOUR} and {@link OTHER_HOURS}. */
export class HourlyCounts {
  private readonly buckets = new Map<string, BucketCounts>();
  /** Key of the last hour seen: consecutive lines mostly share an hour, so the key is rarely rebuilt. */
  private lastHourStart = Number.NaN;
  private lastKey = '';

  /** @param maxHours - distinct hours kept; later hours are counted under {@link OTHER_HOURS}. */
  constructor(private readonly maxHours: number) {}

  /** Counts one line at `epochMs` (or without a timestamp when `null`). */
  add(epochMs: number | null, severity: Severity | null): void {
    countLine(this.bucket(epochMs === null ? UNKNOWN_HOUR : this.hourKey(epochMs)), severity);
  }

  /** The buckets, hours in chronological order, then `other`, then `unknown`. */
  toJSON(): Record<string, BucketCounts> {
    const keys = [...this.buckets.keys()].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
    return Object.fromEntries(keys.map((key) => [key, this.buckets.get(key) as BucketCounts]));
  }

  private hourKey(epochMs: number): string {
    const hourStart = epochMs - (((epochMs % 3_600_000) + 3_600_000) % 3_600_000);
    if (hourStart !== this.lastHourStart) {
      this.lastHourStart = hourStart;
      this.lastKey = `${new Date(hourStart).toISOString().slice(0, 13)}:00Z`;
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
