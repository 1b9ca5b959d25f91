/**
 * The four timestamp formats most log lines start with (ISO 8601, syslog and ctime, Apache access, HDFS) read
 * character by character, with the exact semantics of their patterns in `timestamp.ts` (which keeps the patterns
 * for the other formats, and these for reference): a match array, its capture strings and their conversion cost
 * more than a line's other header fields together. Each reader answers whether its pattern matches at `at` and
 * leaves the match's fields in {@link READ}; `timestamp.ts` checks the date.
 */

export const MONTHS = 'Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec';
export const WEEKDAYS = 'Sun|Mon|Tue|Wed|Thu|Fri|Sat';

/** A match's fields as the pattern's captures give them (numbers converted, month 0-based), before any check. */
export interface RawTimestamp {
  year: number | null;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  fraction?: string | undefined;
  zone?: string | undefined;
  weekday?: string | undefined;
}

/**
 * What a reader found: the end of the match, its fields as the pattern's captures give them, and whether it is
 * a BSD syslog timestamp. One object, refilled by every read, `raw` included (read it before the next one).
 */
export const READ: { end: number; raw: RawTimestamp; syslog: boolean } = {
  end: 0,
  raw: { year: null, month: 0, day: 0, hour: 0, minute: 0, second: 0, fraction: undefined, zone: undefined, weekday: undefined },
  syslog: false,
};

/** Fills {@link READ} with a match (its `raw` in place: a read allocates no object); answers `true`. */
function found(
  end: number,
  year: number | null,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  fraction?: string,
  zone?: string,
  weekday?: string,
): true {
  const { raw } = READ;
  raw.year = year;
  raw.month = month;
  raw.day = day;
  raw.hour = hour;
  raw.minute = minute;
  raw.second = second;
  raw.fraction = fraction;
  raw.zone = zone;
  raw.weekday = weekday;
  READ.end = end;
  READ.syslog = false;
  return true;
}

const isDigit = (code: number) => code >= 48 && code <= 57;

/** `Z`, `±hh:mm` or `±hhmm` (as the patterns take a zone) in minutes, its digits read in place. */
export function zoneMinutes(zone: string | undefined): number {
  if (!zone || zone === 'Z') return 0;
  const minutes = zone.charCodeAt(3) === 58 ? 4 : 3;
  const sign = zone.charCodeAt(0) === 45 ? -1 : 1;
  return sign * (digitPair(zone, 1) * 60 + digitPair(zone, minutes));
}

const digitPair = (text: string, at: number): number => (text.charCodeAt(at) - 48) * 10 + text.charCodeAt(at + 1) - 48;

const POWERS_OF_TEN = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

/**
 * Whole milliseconds of a fraction of a second written with `fraction`'s digits (`978`, `675872`): the quotient
 * of two exact integers is the double nearest the decimal, as `Number('0.' + fraction)` is, without that string.
 */
export function fractionMillis(fraction: string | undefined): number {
  if (!fraction) return 0;
  if (fraction.length >= POWERS_OF_TEN.length) return Math.floor(Number(`0.${fraction}`) * 1000);
  let value = 0;
  for (let i = 0; i < fraction.length; i++) value = value * 10 + fraction.charCodeAt(i) - 48;
  return Math.floor((value / (POWERS_OF_TEN[fraction.length] as number)) * 1000);
}

/** The number written by the `count` digits at `at`, or -1 when one of them is not a digit. */
function digitsAt(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const code = text.charCodeAt(i);
    if (!isDigit(code)) return -1;
    value = value * 10 + code - 48;
  }
  return value;
}

/** Digits from `at`, at most `max` (a greedy `\d{1,max}`). */
function digitRun(text: string, at: number, max: number): number {
  let count = 0;
  while (count < max && isDigit(text.charCodeAt(at + count))) count++;
  return count;
}

/** Index of the three-letter name at `at` in `names` (packed character codes), or -1. */
function nameAt(names: readonly number[], text: string, at: number): number {
  return names.indexOf(text.charCodeAt(at) * 65536 + text.charCodeAt(at + 1) * 256 + text.charCodeAt(at + 2));
}
const packed = (list: string) => list.split('|').map((name) => name.charCodeAt(0) * 65536 + name.charCodeAt(1) * 256 + name.charCodeAt(2));
const MONTH_CODES = packed(MONTHS);
const WEEKDAY_CODES = packed(WEEKDAYS);
const WEEKDAY_NAMES = WEEKDAYS.split('|');
export const monthAt = (text: string, at: number) => nameAt(MONTH_CODES, text, at);
export const weekdayAt = (text: string, at: number) => nameAt(WEEKDAY_CODES, text, at);

/** The ISO 8601 pattern: a greedy fraction, a zone with or without its `:`, no digit before or after. */
export function readIso(text: string, at: number): boolean {
  if (at > 0 && isDigit(text.charCodeAt(at - 1))) return false;
  const year = digitsAt(text, at, 4);
  const separator = text.charCodeAt(at + 4);
  if (year < 0 || (separator !== 45 && separator !== 47 && separator !== 46)) return false;
  const month = digitsAt(text, at + 5, 2);
  if (month < 0 || text.charCodeAt(at + 7) !== separator) return false;
  const day = digitsAt(text, at + 8, 2);
  const t = text.charCodeAt(at + 10);
  if (day < 0 || (t !== 84 && t !== 32 && t !== 95 && t !== 45)) return false;
  const hour = digitsAt(text, at + 11, 2);
  const colon = text.charCodeAt(at + 13);
  if (hour < 0 || (colon !== 58 && colon !== 46)) return false;
  const minute = digitsAt(text, at + 14, 2);
  if (minute < 0 || text.charCodeAt(at + 16) !== colon) return false;
  const second = digitsAt(text, at + 17, 2);
  if (second < 0) return false;
  let end = at + 19;
  let fraction: string | undefined;
  const dot = text.charCodeAt(end);
  if (dot === 46 || dot === 44) {
    const count = digitRun(text, end + 1, 9);
    if (count > 0) {
      fraction = text.slice(end + 1, end + 1 + count);
      end += 1 + count;
    }
  }
  let zone: string | undefined;
  const sign = text.charCodeAt(end);
  if (sign === 90) {
    zone = 'Z';
    end++;
  } else if ((sign === 43 || sign === 45) && digitsAt(text, end + 1, 2) >= 0) {
    // `:?` is greedy: with a colon there, only `±hh:mm` can match.
    const length = text.charCodeAt(end + 3) === 58 ? 6 : 5;
    if (digitsAt(text, end + length - 2, 2) >= 0 && !isDigit(text.charCodeAt(end + length))) {
      zone = text.slice(end, end + length);
      end += length;
    }
  }
  return found(end, year, month - 1, day, hour, minute, second, fraction, zone);
}

/** The Apache access pattern: `10/Oct/2000:13:55:36 -0700`. */
export function readAccess(text: string, at: number): boolean {
  const day = digitsAt(text, at, 2);
  const month = monthAt(text, at + 3);
  if (day < 0 || text.charCodeAt(at + 2) !== 47 || month < 0 || text.charCodeAt(at + 6) !== 47) return false;
  const year = digitsAt(text, at + 7, 4);
  if (year < 0 || text.charCodeAt(at + 11) !== 58) return false;
  const hour = digitsAt(text, at + 12, 2);
  if (hour < 0 || text.charCodeAt(at + 14) !== 58) return false;
  const minute = digitsAt(text, at + 15, 2);
  if (minute < 0 || text.charCodeAt(at + 17) !== 58) return false;
  const second = digitsAt(text, at + 18, 2);
  if (second < 0) return false;
  let end = at + 20;
  let zone: string | undefined;
  const sign = text.charCodeAt(end + 1);
  if (text.charCodeAt(end) === 32 && (sign === 43 || sign === 45) && digitsAt(text, end + 2, 4) >= 0) {
    zone = text.slice(end + 1, end + 6);
    end += 6;
  }
  return found(end, year, month, day, hour, minute, second, undefined, zone);
}

/** The HDFS pattern: `081109 203615`, no digit before or after. */
export function readHdfs(text: string, at: number): boolean {
  if (at > 0 && isDigit(text.charCodeAt(at - 1))) return false;
  if (text.charCodeAt(at + 6) !== 32 || isDigit(text.charCodeAt(at + 13))) return false;
  const year = digitsAt(text, at, 2);
  const month = digitsAt(text, at + 2, 2);
  const day = digitsAt(text, at + 4, 2);
  const hour = digitsAt(text, at + 7, 2);
  const minute = digitsAt(text, at + 9, 2);
  const second = digitsAt(text, at + 11, 2);
  if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return false;
  return found(at + 13, 2000 + year, month - 1, day, hour, minute, second);
}

/** The syslog and ctime pattern: `Jun  4 15:16:01`, `Sun Dec 04 04:47:44.123 2005`. */
export function readSyslog(text: string, at: number): boolean {
  let i = at;
  const weekday = weekdayAt(text, i);
  // A weekday is only taken with its space; a month cannot start where a weekday name is.
  if (weekday >= 0) {
    if (text.charCodeAt(i + 3) !== 32) return false;
    i += 4;
  }
  const month = monthAt(text, i);
  if (month < 0 || text.charCodeAt(i + 3) !== 32) return false;
  i += text.charCodeAt(i + 4) === 32 ? 5 : 4;
  const dayDigits = digitRun(text, i, 2);
  if (dayDigits === 0 || text.charCodeAt(i + dayDigits) !== 32) return false;
  const day = digitsAt(text, i, dayDigits);
  i += dayDigits + 1;
  const hour = digitsAt(text, i, 2);
  if (hour < 0 || text.charCodeAt(i + 2) !== 58) return false;
  const minute = digitsAt(text, i + 3, 2);
  if (minute < 0 || text.charCodeAt(i + 5) !== 58) return false;
  const second = digitsAt(text, i + 6, 2);
  if (second < 0) return false;
  let end = i + 8;
  let fraction: string | undefined;
  if (text.charCodeAt(end) === 46) {
    const count = digitRun(text, end + 1, 9);
    if (count > 0) {
      fraction = text.slice(end + 1, end + 1 + count);
      end += 1 + count;
    }
  }
  let year: number | null = null;
  if (text.charCodeAt(end) === 32 && !isDigit(text.charCodeAt(end + 5))) {
    const written = digitsAt(text, end + 1, 4);
    if (written >= 0) {
      year = written;
      end += 5;
    }
  }
  found(end, year, month, day, hour, minute, second, fraction, undefined, weekday >= 0 ? WEEKDAY_NAMES[weekday] : undefined);
  READ.syslog = year === null;
  return true;
}
