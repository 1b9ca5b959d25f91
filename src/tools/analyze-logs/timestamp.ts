/**
 * Finds and parses the timestamp at the head of a log line in the common formats: ISO 8601 and its variants
 * (`yyyy-MM-dd HH:mm:ss,SSS` of Hadoop/Zookeeper, `yyyy/MM/dd` of nginx, BGL's `yyyy-MM-dd-HH.mm.ss.SSSSSS`),
 * syslog `Mon dd HH:mm:ss`, Apache access `[10/Oct/2000:13:55:36 -0700]` and error `[Sun Dec 04 04:47:44 2005]`,
 * HDFS `yyMMdd HHmmss`, Spark `yy/MM/dd HH:mm:ss`, `yyyyMMdd-HH:mm:ss:SSS`, Android logcat `MM-dd HH:mm:ss.SSS`,
 * glog `Immdd HH:mm:ss.uuuuuu`, and epoch seconds or milliseconds as one of the first two tokens.
 * Times without a zone are UTC; formats without a year take the year of the reference time, or the year before
 * when that would put the line more than a day in the future (a December log read in January).
 */

/** Where a timestamp was found and what it denotes. */
export interface ParsedTimestamp {
  /** Epoch milliseconds (UTC). */
  epochMs: number;
  /** Span of the timestamp text in the line, `[start, end)`, including enclosing brackets. */
  start: number;
  end: number;
  /** A BSD syslog (RFC 3164) timestamp, which is followed by `host tag[pid]:`. */
  syslog: boolean;
}

const MONTHS = 'Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec';
const MONTH_INDEX: Record<string, number> = Object.fromEntries(MONTHS.split('|').map((m, i) => [m, i]));
/** Only the head of a line is searched: a timestamp further in is message text, not the line's time. */
const HEAD_LENGTH = 128;
const DAY_MS = 86_400_000;
const MIN_EPOCH_S = 946_684_800; // 2000-01-01
const MAX_EPOCH_S = 4_102_444_800; // 2100-01-01

interface Fields {
  year: number | null;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  fraction?: string | undefined;
  /** Offset from UTC in minutes; UTC when absent. */
  offsetMinutes?: number;
}

interface Format {
  pattern: RegExp;
  /** Fields of a match, or an epoch when the format is an epoch. */
  fields(m: RegExpExecArray): Fields | number | null;
  /** Whether a match is a BSD syslog timestamp. */
  syslog?(m: RegExpExecArray): boolean;
}

const n = (text: string | undefined): number => Number(text);
const twoDigitYear = (text: string | undefined): number => 2000 + n(text);

function zoneMinutes(zone: string | undefined): number {
  if (!zone || zone === 'Z') return 0;
  const digits = zone.replace(':', '');
  const sign = digits.startsWith('-') ? -1 : 1;
  return sign * (n(digits.slice(1, 3)) * 60 + n(digits.slice(3, 5)));
}

const FORMATS: readonly Format[] = [
  {
    // ISO 8601 and its common relatives: 2024-01-02T03:04:05.678Z, 2015-10-18 18:01:47,978, 2024/01/02 03:04:05,
    // 2005-06-03-15.42.50.675872, 2017-05-16_13:53:08.
    pattern: /(?<!\d)(\d{4})([-/.])(\d{2})\2(\d{2})[T _-](\d{2})([:.])(\d{2})\6(\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2}(?!\d))?/,
    fields: (m) => ({
      year: n(m[1]), month: n(m[3]) - 1, day: n(m[4]), hour: n(m[5]), minute: n(m[7]), second: n(m[8]),
      fraction: m[9], offsetMinutes: zoneMinutes(m[10]),
    }),
  },
  {
    // syslog "Jun  4 15:16:01" and Apache error "Sun Dec 04 04:47:44 2005" (weekday and year optional).
    pattern: new RegExp(String.raw`(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) )?(${MONTHS}) {1,2}(\d{1,2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?: (\d{4})(?!\d))?`),
    fields: (m) => ({
      year: m[7] ? n(m[7]) : null, month: MONTH_INDEX[m[1] as string] ?? -1, day: n(m[2]), hour: n(m[3]),
      minute: n(m[4]), second: n(m[5]), fraction: m[6],
    }),
    syslog: (m) => m[7] === undefined,
  },
  {
    // Apache/nginx access: 10/Oct/2000:13:55:36 -0700
    pattern: new RegExp(String.raw`(\d{2})/(${MONTHS})/(\d{4}):(\d{2}):(\d{2}):(\d{2})(?: ([+-]\d{4}))?`),
    fields: (m) => ({
      year: n(m[3]), month: MONTH_INDEX[m[2] as string] ?? -1, day: n(m[1]), hour: n(m[4]), minute: n(m[5]),
      second: n(m[6]), offsetMinutes: zoneMinutes(m[7]),
    }),
  },
  {
    // HDFS: 081109 203615
    pattern: /^(\d{2})(\d{2})(\d{2}) (\d{2})(\d{2})(\d{2})(?!\d)/,
    fields: (m) => ({
      year: twoDigitYear(m[1]), month: n(m[2]) - 1, day: n(m[3]), hour: n(m[4]), minute: n(m[5]), second: n(m[6]),
    }),
  },
  {
    // Spark: 17/06/09 20:10:40
    pattern: /^(\d{2})\/(\d{2})\/(\d{2}) (\d{2}):(\d{2}):(\d{2})/,
    fields: (m) => ({
      year: twoDigitYear(m[1]), month: n(m[2]) - 1, day: n(m[3]), hour: n(m[4]), minute: n(m[5]), second: n(m[6]),
    }),
  },
  {
    // 20171223-22:15:29:606 (fields may lose their leading zero: 20171223-22:16:0:119)
    pattern: /^(\d{4})(\d{2})(\d{2})-(\d{1,2}):(\d{1,2}):(\d{1,2})(?:[:.](\d{1,3}))?/,
    fields: (m) => ({
      year: n(m[1]), month: n(m[2]) - 1, day: n(m[3]), hour: n(m[4]), minute: n(m[5]), second: n(m[6]),
      fraction: m[7],
    }),
  },
  {
    // Android logcat threadtime "03-17 16:13:38.811", glog "I0317 16:13:38.811000", Proxifier "[10.30 16:49:06]".
    pattern: /^\[?[IWEF]?(\d{2})[-.]?(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\]?/,
    fields: (m) => ({
      year: null, month: n(m[1]) - 1, day: n(m[2]), hour: n(m[3]), minute: n(m[4]), second: n(m[5]),
      fraction: m[6],
    }),
  },
  {
    // Epoch seconds (optionally fractional) or milliseconds as the first or second token.
    pattern: /^(?:\S+ )?\[?(\d{10}(?:\.\d{1,6})?|\d{13})\]?(?=[\s,;|]|$)/,
    fields: (m) => {
      const text = m[1] as string;
      const ms = text.length === 13 ? n(text) : Math.round(n(text) * 1000);
      return ms / 1000 >= MIN_EPOCH_S && ms / 1000 < MAX_EPOCH_S ? ms : null;
    },
  },
];

/**
 * Stateful so that the format of the previous line is tried first: a file almost always keeps one format,
 * which makes the common case a single regular-expression test.
 */
export class TimestampParser {
  private readonly now: number;
  private readonly referenceYear: number;
  /** Index of the format that matched the previous line; -1 before the first match. */
  private lastFormat = -1;

  /** @param now - reference time in epoch ms for formats without a year. */
  constructor(now: number = Date.now()) {
    this.now = now;
    this.referenceYear = new Date(now).getUTCFullYear();
  }

  /** The timestamp at the head of `line`, or `null` when none parses to a valid date. */
  parse(line: string): ParsedTimestamp | null {
    const head = line.length > HEAD_LENGTH ? line.slice(0, HEAD_LENGTH) : line;
    const preferred = this.lastFormat >= 0 ? this.tryFormat(this.lastFormat, head) : null;
    if (preferred) return preferred;
    // Otherwise the earliest match wins: the line's own time comes first (BGL puts an epoch before a local time).
    let best: ParsedTimestamp | null = null;
    let bestFormat = -1;
    for (let i = 0; i < FORMATS.length; i++) {
      if (i === this.lastFormat) continue;
      const found = this.tryFormat(i, head);
      if (found && (!best || found.start < best.start)) {
        best = found;
        bestFormat = i;
      }
    }
    if (best) this.lastFormat = bestFormat;
    return best;
  }

  private tryFormat(index: number, head: string): ParsedTimestamp | null {
    const format = FORMATS[index] as Format;
    const m = format.pattern.exec(head);
    if (!m) return null;
    const fields = format.fields(m);
    const epochMs = typeof fields === 'number' || fields === null ? fields : this.toEpoch(fields);
    if (epochMs === null) return null;
    let start = m.index;
    let end = m.index + m[0].length;
    // Include the brackets around a bracketed timestamp so that stripping it leaves no empty "[]" behind.
    if (head[start - 1] === '[' && head[end] === ']') {
      start--;
      end++;
    }
    return { epochMs, start, end, syslog: format.syslog?.(m) ?? false };
  }

  private toEpoch(f: Fields): number | null {
    if (f.month < 0 || f.month > 11 || f.day < 1 || f.day > 31 || f.hour > 23 || f.minute > 59 || f.second > 60) {
      return null;
    }
    const millis = f.fraction ? Math.floor(n(`0.${f.fraction}`) * 1000) : 0;
    const at = (year: number) =>
      Date.UTC(year, f.month, f.day, f.hour, f.minute, f.second, millis) - (f.offsetMinutes ?? 0) * 60_000;
    if (f.year !== null) return at(f.year);
    const guess = at(this.referenceYear);
    return guess > this.now + DAY_MS ? at(this.referenceYear - 1) : guess;
  }
}
