/**
 * Timestamps of log lines in the common formats: ISO 8601 and its variants (`yyyy-MM-dd HH:mm:ss,SSS` of
 * Hadoop/Zookeeper, `yyyy/MM/dd` of nginx, BGL's `yyyy-MM-dd-HH.mm.ss.SSSSSS`), syslog `Mon dd HH:mm:ss`, Apache
 * access `[10/Oct/2000:13:55:36 -0700]` and error `[Sun Dec 04 04:47:44 2005]`, HDFS `yyMMdd HHmmss`, Spark
 * `yy/MM/dd HH:mm:ss`, `yyyyMMdd-HH:mm:ss:SSS`, Android logcat `MM-dd HH:mm:ss.SSS`, glog `Immdd HH:mm:ss.uuuuuu`,
 * and epoch seconds or milliseconds (10 or 13 digits, between 2000 and 2100).
 *
 * Times without a zone are UTC. Formats without a year get one from a {@link YearResolver}: the year that makes
 * the file's sequence of dates consistent, never an impossible date (see there).
 */
import {
  fractionMillis,
  monthAt,
  MONTHS,
  type RawTimestamp,
  READ,
  readAccess,
  readHdfs,
  readIso,
  readSyslog,
  weekdayAt,
  WEEKDAYS,
  zoneMinutes,
} from './timestamp-readers.js';

/** The parts of a timestamp; `year` is `null` for formats without one (syslog, logcat). */
export interface TimestampFields {
  year: number | null;
  /** 0-based. */
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  /** Milliseconds. */
  millis: number;
  /** Offset from UTC in minutes; UTC when absent. */
  offsetMinutes: number;
  /** The weekday the text names (0 = Sunday), which pins the year of a date without one; else `null`. */
  weekday: number | null;
}

/** A timestamp found in a line: its span (`[start, end)`, enclosing brackets included) and what it denotes. */
export interface TimestampMatch {
  start: number;
  end: number;
  /** Epoch ms for an epoch or a timestamp with a year, else the fields (resolve the year with a {@link YearResolver}). */
  value: number | TimestampFields;
  /** A BSD syslog (RFC 3164) timestamp, which is followed by `host tag[pid]:`. */
  syslog: boolean;
}

const MONTH_INDEX: Record<string, number> = Object.fromEntries(MONTHS.split('|').map((m, i) => [m, i]));
const WEEKDAY_INDEX: Record<string, number> = Object.fromEntries(WEEKDAYS.split('|').map((d, i) => [d, i]));
/** Only the head of a line is searched: a timestamp further in is message text, not the line's time. */
const HEAD_LENGTH = 128;
export const DAY_MS = 86_400_000;
const MIN_EPOCH_S = 946_684_800; // 2000-01-01
const MAX_EPOCH_S = 4_102_444_800; // 2100-01-01

type Raw = RawTimestamp;

interface Format {
  /** Sticky (`y`): matched at a given position. */
  pattern: RegExp;
  /**
   * The same match read without the pattern, for the formats most lines have (see `timestamp-readers.ts`):
   * fills `READ` and answers whether the pattern matches at `at`.
   */
  read?(text: string, at: number): boolean;
  /**
   * A character every match has at a fixed distance from `at` (a `/`, `-` or space), tested before the pattern
   * runs: header fields that start with a digit (a pid, an address, a count) are rarely timestamps.
   */
  probe?(text: string, at: number): boolean;
  /** Whether a match can start with this character code (a cheap test before the pattern). */
  starts: 'digit' | 'letter' | 'either';
  /** Fields of a match, or epoch ms when the format is an epoch, or `null` when out of range. */
  fields(m: RegExpExecArray): Raw | number | null;
  /** Whether a match is a BSD syslog timestamp. */
  syslog?(m: RegExpExecArray): boolean;
}

const n = (text: string | undefined): number => Number(text);
const twoDigitYear = (text: string | undefined): number => 2000 + n(text);

/** Epoch seconds (optionally fractional) or milliseconds, or `null` outside 2000–2100. */
export function epochOf(text: string): number | null {
  const ms = /^\d{13}$/.test(text) ? n(text) : Math.round(n(text) * 1000);
  return Number.isFinite(ms) && ms / 1000 >= MIN_EPOCH_S && ms / 1000 < MAX_EPOCH_S ? ms : null;
}

const FORMATS: readonly Format[] = [
  {
    // ISO 8601 and its common relatives: 2024-01-02T03:04:05.678Z, 2015-10-18 18:01:47,978, 2024/01/02 03:04:05,
    // 2005-06-03-15.42.50.675872, 2017-05-16_13:53:08.
    pattern: /(?<!\d)(\d{4})([-/.])(\d{2})\2(\d{2})[T _-](\d{2})([:.])(\d{2})\6(\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2}(?!\d))?/y,
    read: readIso,
    starts: 'digit',
    fields: (m) => ({
      year: n(m[1]),
      month: n(m[3]) - 1,
      day: n(m[4]),
      hour: n(m[5]),
      minute: n(m[7]),
      second: n(m[8]),
      fraction: m[9],
      zone: m[10],
    }),
  },
  {
    // syslog "Jun  4 15:16:01" and Apache error / ctime "Sun Dec 04 04:47:44 2005" (weekday and year optional).
    pattern: new RegExp(String.raw`(?:(${WEEKDAYS}) )?(${MONTHS}) {1,2}(\d{1,2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?: (\d{4})(?!\d))?`, 'y'),
    read: readSyslog,
    starts: 'letter',
    fields: (m) => ({
      year: m[8] ? n(m[8]) : null,
      month: MONTH_INDEX[m[2] as string] ?? -1,
      day: n(m[3]),
      hour: n(m[4]),
      minute: n(m[5]),
      second: n(m[6]),
      fraction: m[7],
      weekday: m[1],
    }),
    syslog: (m) => m[8] === undefined,
  },
  {
    // Apache/nginx access: 10/Oct/2000:13:55:36 -0700
    pattern: new RegExp(String.raw`(\d{2})/(${MONTHS})/(\d{4}):(\d{2}):(\d{2}):(\d{2})(?: ([+-]\d{4}))?`, 'y'),
    read: readAccess,
    starts: 'digit',
    probe: (text, at) => text.charCodeAt(at + 2) === 47,
    fields: (m) => ({
      year: n(m[3]),
      month: MONTH_INDEX[m[2] as string] ?? -1,
      day: n(m[1]),
      hour: n(m[4]),
      minute: n(m[5]),
      second: n(m[6]),
      zone: m[7],
    }),
  },
  {
    // HDFS: 081109 203615
    pattern: /(?<!\d)(\d{2})(\d{2})(\d{2}) (\d{2})(\d{2})(\d{2})(?!\d)/y,
    read: readHdfs,
    starts: 'digit',
    probe: (text, at) => text.charCodeAt(at + 6) === 32,
    fields: (m) => ({
      year: twoDigitYear(m[1]),
      month: n(m[2]) - 1,
      day: n(m[3]),
      hour: n(m[4]),
      minute: n(m[5]),
      second: n(m[6]),
    }),
  },
  {
    // Spark: 17/06/09 20:10:40
    pattern: /(?<!\d)(\d{2})\/(\d{2})\/(\d{2}) (\d{2}):(\d{2}):(\d{2})/y,
    starts: 'digit',
    probe: (text, at) => text.charCodeAt(at + 2) === 47,
    fields: (m) => ({
      year: twoDigitYear(m[1]),
      month: n(m[2]) - 1,
      day: n(m[3]),
      hour: n(m[4]),
      minute: n(m[5]),
      second: n(m[6]),
    }),
  },
  {
    // 20171223-22:15:29:606 (fields may lose their leading zero: 20171223-22:16:0:119)
    pattern: /(?<!\d)(\d{4})(\d{2})(\d{2})-(\d{1,2}):(\d{1,2}):(\d{1,2})(?:[:.](\d{1,3}))?/y,
    starts: 'digit',
    probe: (text, at) => text.charCodeAt(at + 8) === 45,
    fields: (m) => ({
      year: n(m[1]),
      month: n(m[2]) - 1,
      day: n(m[3]),
      hour: n(m[4]),
      minute: n(m[5]),
      second: n(m[6]),
      fraction: m[7],
    }),
  },
  {
    // Android logcat threadtime "03-17 16:13:38.811", glog "I0317 16:13:38.811000", Proxifier "10.30 16:49:06".
    pattern: /(?<![\d.-])[IWEF]?(\d{2})[-.]?(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?![\d:])/y,
    starts: 'either',
    probe: (text, at) => text.charCodeAt(at + 4) === 32 || text.charCodeAt(at + 5) === 32 || text.charCodeAt(at + 6) === 32,
    fields: (m) => ({
      year: null,
      month: n(m[1]) - 1,
      day: n(m[2]),
      hour: n(m[3]),
      minute: n(m[4]),
      second: n(m[5]),
      fraction: m[6],
    }),
  },
];

/** The epoch format of {@link findTimestamp}: as the first or second token of a line. */
const EPOCH_HEAD = /^(?:\S+ )?\[?(\d{10}(?:\.\d{1,6})?|\d{13})\]?(?=[\s,;|]|$)/;

/** What may start a timestamp: a digit, a capital (month or weekday, glog level letter) or `[`. */
function mayStart(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || code === 91;
}

/** Whether format `format` can match at `at`: a digit for most, a month or weekday name, or a glog level letter. */
function canStart(format: Format, text: string, at: number): boolean {
  const code = text.charCodeAt(at);
  const digit = code >= 48 && code <= 57;
  if (format.starts === 'digit') return digit;
  if (format.starts === 'letter') return code >= 65 && code <= 90 && (monthAt(text, at) >= 0 || weekdayAt(text, at) >= 0);
  return digit || ((code === 73 || code === 87 || code === 69 || code === 70) && (text.charCodeAt(at + 1) ^ 48) < 10);
}

/** The format that matched last: a file almost always keeps one, so it is tried first. */
let lastFormat = 0;

/** Whether a match's fields are in range (the patterns take any two digits). */
function inRange(raw: Raw): boolean {
  const { month, day, hour, minute, second } = raw;
  return !(month < 0 || month > 11 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60);
}

function toFields(raw: Raw): TimestampFields | null {
  const { month, day, hour, minute, second } = raw;
  if (!inRange(raw)) return null;
  return {
    year: raw.year,
    month,
    day,
    hour,
    minute,
    second,
    millis: fractionMillis(raw.fraction),
    offsetMinutes: zoneMinutes(raw.zone),
    weekday: raw.weekday === undefined ? null : (WEEKDAY_INDEX[raw.weekday] ?? null),
  };
}

/**
 * Epoch ms of `fields` in `year`, or `null` when that date does not exist (30 February, 29 February of a common
 * year): `Date.UTC` would silently roll it over into March.
 */
export function epochInYear(fields: TimestampFields, year: number): number | null {
  const day = dayStart(year, fields.month, fields.day);
  if (day === null) return null;
  return day + ((fields.hour * 60 + fields.minute) * 60 + fields.second) * 1000 + fields.millis - fields.offsetMinutes * 60_000;
}

/** Start of a day in epoch ms, or `null` when the date does not exist; memoised (lines share their days). */
const days = new Map<number, number | null>();
function dayStart(year: number, month: number, day: number): number | null {
  const key = (year * 12 + month) * 32 + day;
  let start = days.get(key);
  if (start === undefined) {
    const ms = Date.UTC(year, month, day);
    const date = new Date(ms);
    start = date.getUTCMonth() === month && date.getUTCDate() === day ? ms : null;
    if (days.size >= 4096) days.clear();
    days.set(key, start);
  }
  return start;
}

/**
 * The timestamp that starts exactly at `pos` of `text`, in any format (an epoch is left to the caller: a bare
 * number is one only where a header says so). Brackets around it are included when both are there.
 *
 * @returns `null` when none starts there or its date is impossible.
 */
export function timestampAt(text: string, pos: number): TimestampMatch | null {
  if (pos >= text.length || !mayStart(text.charCodeAt(pos))) return null;
  const bracketed = text.charCodeAt(pos) === 91;
  const at = bracketed ? pos + 1 : pos;
  for (let k = 0; k < FORMATS.length; k++) {
    const index = k === 0 ? lastFormat : k <= lastFormat ? k - 1 : k;
    const format = FORMATS[index] as Format;
    if (!canStart(format, text, at) || (format.probe && !format.probe(text, at))) continue;
    let value: number | TimestampFields | null;
    let end: number;
    let syslog: boolean;
    if (format.read) {
      if (!format.read(text, at)) continue;
      value = rawValue(READ.raw);
      ({ end, syslog } = READ);
    } else {
      format.pattern.lastIndex = at;
      const m = format.pattern.exec(text);
      if (!m) continue;
      value = fieldsValue(format, m);
      end = at + m[0].length;
      syslog = format.syslog?.(m) ?? false;
    }
    if (value === null) continue;
    if (bracketed) {
      if (text.charCodeAt(end) !== 93) continue;
      end++;
    }
    lastFormat = index;
    return { start: pos, end, value, syslog };
  }
  return null;
}

function fieldsValue(format: Format, m: RegExpExecArray): number | TimestampFields | null {
  const raw = format.fields(m);
  if (raw === null || typeof raw === 'number') return raw;
  return rawValue(raw);
}

/** The value of a match's fields: epoch ms with a year, the fields without one, `null` for an impossible date. */
function rawValue(raw: Raw): number | TimestampFields | null {
  if (raw.year === null) return toFields(raw);
  // With a year, what epochInYear makes of the fields, without a TimestampFields object.
  if (!inRange(raw)) return null;
  const day = dayStart(raw.year, raw.month, raw.day);
  if (day === null) return null;
  return day + ((raw.hour * 60 + raw.minute) * 60 + raw.second) * 1000 + fractionMillis(raw.fraction) - zoneMinutes(raw.zone) * 60_000;
}

/**
 * The earliest timestamp in the head of a line, in any format, epochs as one of the first two tokens included:
 * the parse of a line whose file has no header format (see `header.ts`).
 */
export function findTimestamp(line: string): TimestampMatch | null {
  const head = line.length > HEAD_LENGTH ? line.slice(0, HEAD_LENGTH) : line;
  const epoch = EPOCH_HEAD.exec(head);
  let best: TimestampMatch | null = null;
  if (epoch) {
    const ms = epochOf(epoch[1] as string);
    if (ms !== null) {
      const start = epoch[0].length - (epoch[1] as string).length - (epoch[0].endsWith(']') ? 1 : 0);
      best = { start, end: start + (epoch[1] as string).length, value: ms, syslog: false };
    }
  }
  const limit = best ? best.start : head.length;
  for (let i = 0; i < limit; i++) {
    // A timestamp starts at a token boundary or right after a bracket.
    const before = i === 0 ? 32 : head.charCodeAt(i - 1);
    if (before !== 32 && before !== 9 && before !== 91 && before !== 124 && before !== 44) continue;
    const found = timestampAt(head, i);
    if (found) {
      // `[ts]` when the bracket precedes: strip it with the timestamp.
      if (found.start > 0 && head.charCodeAt(found.start - 1) === 91 && head.charCodeAt(found.end) === 93) {
        return { ...found, start: found.start - 1, end: found.end + 1 };
      }
      return found;
    }
  }
  return best;
}

/** A year found in a message for a year-less line: `Fri Jun 17 07:07:00 2005`, `2017-07-01 19:46:26`. */
export interface YearHint {
  month: number;
  day: number;
  year: number;
}

const IN_MESSAGE_DATE = new RegExp(
  String.raw`(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)|(?:${WEEKDAYS}) (${MONTHS}) {1,2}(\d{1,2}) \d{2}:\d{2}:\d{2} (\d{4})(?!\d)`,
  'g',
);

/** Dates with a year inside a message (for {@link YearResolver.hint}); at most a few per line. */
export function yearHints(message: string): YearHint[] {
  const hints: YearHint[] = [];
  IN_MESSAGE_DATE.lastIndex = 0;
  for (let m = IN_MESSAGE_DATE.exec(message); m && hints.length < 4; m = IN_MESSAGE_DATE.exec(message)) {
    if (m[1] !== undefined) hints.push({ year: n(m[1]), month: n(m[2]) - 1, day: n(m[3]) });
    else hints.push({ year: n(m[6]), month: MONTH_INDEX[m[4] as string] ?? -1, day: n(m[5]) });
  }
  return hints.filter((hint) => hint.month >= 0 && hint.month <= 11 && hint.year >= 1970 && hint.year < 2100);
}

/** Day of the year-less date, for ordering: month and day only (a leap day sorts between 28 Feb and 1 Mar). */
function ordinal(month: number, day: number): number {
  return month * 32 + day;
}

/** The state of a {@link YearResolver} as JSON. */
export type YearState = { year: number | null; previous: number; rollovers: number };

/** How far back (days, as month·32 + day ordinals) a date may go before it is taken for the next year. */
const ROLLOVER_ORDINALS = 6 * 32;
/** Years searched back for a weekday or a leap day that fits. */
const MAX_YEARS_BACK = 28;

/**
 * Gives year-less dates of one file (syslog `Feb 29 23:59:59`, logcat `02-29 …`) the year that makes the
 * sequence consistent:
 * - the first such date gets the latest year in which it is not after the reference time (the file's mtime: its
 *   last line was written then, so no line is later) by more than a day, exists (29 February only in leap
 *   years) and falls on the weekday the text names, if any;
 * - a year found inside a message for the same date (Linux's `… at Fri Jun 17 07:07:00 2005`, a `2017-07-01` in
 *   a Mac log), given with {@link hint} before the first date is resolved, overrides the reference time;
 * - later dates follow in order: a date more than six months before the previous one starts the next year
 *   (December → January), an earlier one is a line slightly out of order in the same year.
 * A date impossible in the year the sequence gives (a 29 February after a rollover into a common year) has no
 * time (`null`): the line is counted in the unknown hour rather than on a day that does not exist.
 */
export class YearResolver {
  private year: number | null = null;
  private previous = -1;
  private readonly hints: { year: number; rollovers: number }[] = [];
  private rollovers = 0;

  /** @param referenceMs - epoch ms no line of the file is later than (its mtime, or now). */
  constructor(private readonly referenceMs: number) {}

  /**
   * A year found in the message of a line whose own date is `fields` (its `rollovers` position is the current
   * one); only a hint for the same month and day (±1, a message written around midnight) counts.
   */
  hint(fields: TimestampFields, hint: YearHint): void {
    if (this.year !== null) return;
    const days = (Date.UTC(2000, hint.month, hint.day) - Date.UTC(2000, fields.month, fields.day)) / DAY_MS;
    // The message may be dated just across midnight of New Year's Eve from its line.
    const year = days <= -364 ? hint.year - 1 : days >= 364 ? hint.year + 1 : hint.year;
    if (Math.abs(days) > 1 && Math.abs(days) < 364) return;
    this.hints.push({ year, rollovers: this.rollovers });
  }

  /** Epoch ms of a year-less timestamp, or `null` when no year makes the date possible. */
  resolve(fields: TimestampFields): number | null {
    const current = ordinal(fields.month, fields.day);
    if (this.year === null) {
      this.year = this.firstYear(fields);
    } else if (this.previous >= 0 && current < this.previous - ROLLOVER_ORDINALS) {
      this.year++;
      this.rollovers++;
    }
    this.previous = current;
    return epochInYear(fields, this.year);
  }

  /**
   * Records the order of a year-less date seen before the year is known (while a file's first lines are
   * sampled), so that a hint given for a later line accounts for the rollovers in between.
   */
  observe(fields: TimestampFields): void {
    if (this.year !== null) return;
    const current = ordinal(fields.month, fields.day);
    if (this.previous >= 0 && current < this.previous - ROLLOVER_ORDINALS) this.rollovers++;
    this.previous = current;
  }

  /** State to continue with after a restart ({@link YearResolver.restore}). */
  snapshot(): YearState {
    return { year: this.year, previous: this.previous, rollovers: this.rollovers };
  }

  /** A resolver continuing where `state` was taken. */
  static restore(state: YearState, referenceMs: number): YearResolver {
    const resolver = new YearResolver(referenceMs);
    resolver.year = state.year;
    resolver.previous = state.previous;
    resolver.rollovers = state.rollovers;
    return resolver;
  }

  /** Forget the order observed by {@link observe} (the sampled lines are then resolved from the first one). */
  restart(): void {
    if (this.year !== null) return;
    this.previous = -1;
    this.rollovers = 0;
  }

  private firstYear(fields: TimestampFields): number {
    const hint = this.hints[0];
    if (hint) return hint.year - hint.rollovers;
    const latest = new Date(this.referenceMs).getUTCFullYear();
    let existing: number | null = null;
    for (let year = latest; year > latest - MAX_YEARS_BACK; year--) {
      const ms = epochInYear(fields, year);
      if (ms === null || ms > this.referenceMs + DAY_MS) continue;
      existing ??= year;
      if (fields.weekday !== null && new Date(ms + fields.offsetMinutes * 60_000).getUTCDay() !== fields.weekday) continue;
      return year;
    }
    // No year fits the weekday (a wrong one in the text): the latest in which the date exists, if any (30 February
    // never does; `resolve` then answers `null`).
    return existing ?? latest;
  }
}

/** Epoch ms of a {@link TimestampMatch}, resolving a missing year with `years`. */
export function epochOfMatch(match: TimestampMatch, years: YearResolver): number | null {
  return typeof match.value === 'number' ? match.value : years.resolve(match.value);
}
