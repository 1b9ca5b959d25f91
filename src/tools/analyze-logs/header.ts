/**
 * Header detection: where the header of a log line (timestamp, host, pid, level, thread, logger) ends and its
 * message begins, decided once per file from its first lines, so that templates are mined on messages only.
 *
 * A line's head is read as a sequence of typed fields (see {@link FieldClass}): a timestamp in any format of
 * `timestamp.ts`, an epoch, a date, a number, a level word, a one-letter level, a bracketed group, a tag (a token
 * ending in `:`, `sshd[42]:`, or in `]`, glog's `main.go:10]`), a separator (`-`, `|`) or a word. A header format
 * is a sequence of field classes. It comes from a library of common formats (syslog, log4j and logback layouts,
 * logcat, glog, Python logging, oslo.log, Windows CBS, Apache error) when one fits nine lines in ten of the
 * sample, or else is learned from the sample: the longest run of field classes that nine lines in ten share from
 * their start, cut after a tag, ending on a field that can end a header (not a bare word, unless padded into a
 * column), holding a timestamp or a level, and with words only where headers have them (see `learn`). A word inside a header is a host, a program or a component: its
 * value is not mined.
 *
 * Everything is bounded: at most {@link MAX_FIELDS} fields in the first {@link MAX_HEADER_CHARS} characters, a
 * bracket group of at most {@link MAX_BRACKET} characters, each read once, so a line costs time linear in its
 * length whatever it holds.
 */
import { levelLetter, levelWord, type Severity } from './severity.js';
import { epochOf, timestampAt, type TimestampMatch } from './timestamp.js';

/**
 * `T` timestamp, `E` epoch, `D` date, `N` number, `L` level word (or syslog `<pri>`), `l` one-letter level,
 * `B` bracketed group, `G` tag, `S` separator, `Q` quoted (starts with `"`: message text, never a header
 * field), `W` word. Formats also use `P`: a word padded into a column
 * (followed by two or more spaces), which may end a header where a bare word may not.
 */
export type FieldClass = 'T' | 'E' | 'D' | 'N' | 'L' | 'l' | 'B' | 'G' | 'S' | 'Q' | 'W';

/** One field of a line's head. */
export interface HeaderField {
  cls: FieldClass;
  start: number;
  end: number;
  /** Followed by two or more spaces: a column padded to a width. */
  padded: boolean;
  timestamp?: TimestampMatch;
  /** For `S`: a lone `-`, which logs also write for an empty field (access logs, BGL's alert label). */
  dash?: boolean;
  /** For `E`: epoch ms. */
  epochMs?: number;
  level?: Severity;
}

/** A header format: the field classes of the header, in order. */
export interface HeaderFormat {
  /** A library name (`syslog`, `log4j`…), `learned`, or `none` (no header: lines are parsed one by one). */
  name: string;
  /** Field classes (and `P`), e.g. `TWG` for syslog (`Jun 14 15:16:01 combo sshd[19939]:`). Empty for `none`. */
  classes: string;
}

/** Characters of a line searched for its header. */
export const MAX_HEADER_CHARS = 256;
/** Fields read at most. */
export const MAX_FIELDS = 14;
const MAX_BRACKET = 300;
/** Share of sampled lines a format must fit. */
export const MIN_SUPPORT = 0.9;
/**
 * Lines that continue an event rather than start one: indented, or a stack trace's parts (`Caused by: …`,
 * `… 5 more`, `java.io.IOException: …`, `Traceback …`, `ValueError: …`). They carry no header, so the
 * detection leaves them out.
 */
export const CONTINUATION =
  /^(?:\s|Caused by:|Suppressed:|\.\.\. \d+ (?:more|common frames omitted)|Traceback \(most recent call last\):|During handling of the above exception|[\w$.]*(?:Exception|Error|Throwable)(?::|$))/;

/** Lines of a file sampled to detect its header. */
export const SAMPLE_LINES = 200;
/** Extra words a header word may take before the separator or tag that follows it (`chrome.exe *64 -`). */
const MAX_EXTRA_WORDS = 3;

/**
 * The library: formats of common software, by their field classes. Order only matters among formats of equal
 * length that fit equally well (the first is named).
 */
export const LIBRARY: readonly HeaderFormat[] = [
  { name: 'syslog', classes: 'TWG' }, // RFC 3164: Jun 14 15:16:01 host sshd[42]:
  { name: 'syslog-pri', classes: 'LTWG' }, // <13>Jun 14 15:16:01 host app:
  { name: 'rfc5424', classes: 'LTWWSS' }, // <13>1 2024-01-01T00:00:00Z host app - -
  { name: 'logcat', classes: 'TNNlG' }, // 03-17 16:13:38.811  1702  2395 D WindowManager:
  { name: 'glog', classes: 'TNG' }, // I0102 15:04:05.000000 1 main.go:10]
  { name: 'log4j', classes: 'TLBG' }, // 2015-10-18 18:01:47,978 INFO [main] org.example.Foo:
  { name: 'log4j', classes: 'TLG' }, // 17/06/09 20:10:40 INFO spark.SecurityManager:  (also nginx: [error] 12#0:)
  { name: 'log4j', classes: 'TSLBS' }, // 2015-07-29 17:41:44,747 - INFO  [main:Foo@12] -
  { name: 'logback', classes: 'TBLWS' }, // 2024-01-01 00:00:00.000 [main] INFO  org.example.Foo -
  { name: 'python', classes: 'TSWSLS' }, // 2024-01-01 00:00:00,000 - name - INFO -
  { name: 'oslo.log', classes: 'TNLWB' }, // 2017-05-16 00:00:00.008 25746 INFO nova.api [req-… - - -]
  { name: 'windows-cbs', classes: 'TLP' }, // 2016-09-28 04:30:30, Info                  CBS
  { name: 'apache-error', classes: 'TLB' }, // [Wed Oct 11 14:32:52 2000] [core:error] [pid 1:tid 2]
  { name: 'time-level', classes: 'TL' }, // [Sun Dec 04 04:47:44 2005] [notice]   2024-01-01T00:00:00Z INFO
];

export const NO_HEADER: HeaderFormat = { name: 'none', classes: '' };

const isSpace = (code: number) => code === 32 || code === 9;

/** Whether a field may end at `end`: the line ends or a space, `,`, `|` or `]` follows. */
function boundaryAt(line: string, end: number): boolean {
  if (end >= line.length) return true;
  const code = line.charCodeAt(end);
  return isSpace(code) || code === 44 || code === 124 || code === 93;
}

/** Index of the `]` closing the `[` at `start`, or -1 (nested brackets counted; bounded). */
function closingBracket(line: string, start: number): number {
  let depth = 0;
  const limit = Math.min(line.length, start + MAX_BRACKET);
  for (let i = start; i < limit; i++) {
    const code = line.charCodeAt(i);
    if (code === 91) depth++;
    else if (code === 93 && --depth === 0) return i;
  }
  return -1;
}

const DATE_ONLY = /^\d{4}([./-])\d{2}\1\d{2}$/;
const PRI = /^<(\d{1,3})>\d?/;
const LEVEL_ASSIGNMENT = /^level=(\w+)$/i;
/** syslog severity (pri % 8): emerg, alert, crit, err, warning, notice, info, debug. */
const SYSLOG: readonly Severity[] = ['FATAL', 'FATAL', 'FATAL', 'ERROR', 'WARN', 'INFO', 'INFO', 'DEBUG'];

/** A level word as written in headers: upper case (`WARN`) or capitalised (`Info`), not a word of prose. */
export function headerLevel(word: string): Severity | null {
  if (word.length < 3) return null;
  const first = word.charCodeAt(0);
  if (first < 65 || first > 90) return null;
  // The level first: most words are none, and the case test makes two strings.
  const level = levelWord(word);
  if (level === null) return null;
  const rest = word.slice(1);
  if (rest !== rest.toLowerCase() && word !== word.toUpperCase()) return null;
  return level;
}

/** Whether a character code is a capital letter: a header level starts with one (see {@link headerLevel}). */
const isCapital = (code: number) => code >= 65 && code <= 90;

/**
 * The field of `line` that starts at or after `pos` (spaces skipped), or `null` at the end of the head.
 * Linear in the characters it reads.
 */
export function nextField(line: string, pos: number, into: HeaderField = blankField()): HeaderField | null {
  let i = pos;
  while (i < line.length && isSpace(line.charCodeAt(i))) i++;
  if (i >= line.length || i >= MAX_HEADER_CHARS) return null;
  const field = readField(line, i, into);
  let after = field.end;
  while (after < line.length && isSpace(line.charCodeAt(after))) after++;
  field.padded = after - field.end >= 2;
  return field;
}

/** A field to fill; every one has the same shape (one hidden class for the engine). */
function blankField(): HeaderField {
  return { cls: 'W', start: 0, end: 0, padded: false, dash: false, timestamp: undefined, epochMs: undefined, level: undefined } as HeaderField;
}

/** `f` refilled as a field of class `cls` over `[start, end)`, with nothing else set. */
function field(f: HeaderField, cls: FieldClass, start: number, end: number): HeaderField {
  f.cls = cls;
  f.start = start;
  f.end = end;
  f.padded = false;
  f.dash = false;
  f.timestamp = undefined;
  f.epochMs = undefined;
  f.level = undefined;
  return f;
}

/** Whether `token` is digits, optionally signed: no regular expression, this runs for most fields. */
function allDigits(line: string, start: number, end: number): boolean {
  let i = line.charCodeAt(start) === 45 ? start + 1 : start;
  if (i >= end) return false;
  for (; i < end; i++) {
    const code = line.charCodeAt(i);
    if (code < 48 || code > 57) return false;
  }
  return true;
}

/** The field at `i` (not a space), in `into`. */
function readField(line: string, i: number, into: HeaderField): HeaderField {
  const code = line.charCodeAt(i);
  if (code === 124) return field(into, 'S', i, i + 1);
  if (i === 0 && code === 60) {
    const pri = PRI.exec(line);
    if (pri) {
      const f = field(into, 'L', i, pri[0].length);
      f.level = SYSLOG[Number(pri[1]) % 8] as Severity;
      return f;
    }
  }
  const stamp = timestampAt(line, i);
  if (stamp && boundaryAt(line, stamp.end)) {
    const f = field(into, 'T', i, line.charCodeAt(stamp.end) === 44 ? stamp.end + 1 : stamp.end);
    f.timestamp = stamp;
    return f;
  }
  if (code === 91) {
    const close = closingBracket(line, i);
    if (close > 0) {
      const inner = line.slice(i + 1, close).trim();
      const level = inner.length <= 32 ? (headerLevel(inner) ?? levelWord(inner) ?? levelWord(inner.slice(inner.lastIndexOf(':') + 1))) : null;
      const f = field(into, level ? 'L' : 'B', i, line.charCodeAt(close + 1) === 58 ? close + 2 : close + 1);
      if (level) f.level = level;
      return f;
    }
  }
  let end = i;
  while (end < line.length && !isSpace(line.charCodeAt(end)) && line.charCodeAt(end) !== 124) end++;
  const length = end - i;
  if (code === 34) return field(into, 'Q', i, end);
  if (length === 1 && code === 45) {
    const f = field(into, 'S', i, end);
    f.dash = true;
    return f;
  }
  if ((length === 2 && code === 45 && line.charCodeAt(i + 1) === 45) || (length === 1 && code === 58)) return field(into, 'S', i, end);
  if (allDigits(line, i, end)) {
    const epochMs = length === 10 || length === 13 ? epochOf(line.slice(i, end)) : null;
    if (epochMs === null) return field(into, 'N', i, end);
    const f = field(into, 'E', i, end);
    f.epochMs = epochMs;
    return f;
  }
  if (length === 10 && DATE_ONLY.test(line.slice(i, end))) return field(into, 'D', i, end);
  const last = line.charCodeAt(end - 1);
  if (last === 58 && length >= 2) {
    const level = length <= 12 && isCapital(code) ? headerLevel(line.slice(i, end - 1)) : null;
    const f = field(into, level ? 'L' : 'G', i, end);
    if (level) f.level = level;
    return f;
  }
  if (last === 93 && code !== 91) return field(into, 'G', i, end);
  // Level words are short; `level=…` a little longer.
  const level =
    length >= 3 && length <= 12
      ? isCapital(code)
        ? headerLevel(line.slice(i, end))
        : null
      : length > 6 && length <= 20 && (code | 32) === 108 && LEVEL_ASSIGNMENT.test(line.slice(i, end))
        ? levelWord(line.slice(i + 6, end))
        : null;
  if (level) {
    const f = field(into, 'L', i, end);
    f.level = level;
    return f;
  }
  if (length === 1) {
    const letter = levelLetter(line[i] as string);
    if (letter) {
      const f = field(into, 'l', i, end);
      f.level = letter;
      return f;
    }
  }
  return field(into, 'W', i, end);
}

/** The first `max` fields of a line's head. */
export function fieldsOf(line: string, max = MAX_FIELDS): HeaderField[] {
  const fields: HeaderField[] = [];
  for (let field = nextField(line, 0); field && fields.length < max; field = nextField(line, field.end)) fields.push(field);
  return fields;
}

/** Whether `field` fits where a format has `expected`. */
function fits(expected: string, field: HeaderField): boolean {
  const actual = field.cls;
  if (expected === actual) return true;
  if (expected === 'N') return actual === 'E';
  // A host, program or component may look like anything but a separator, a tag or a quote; `-` is an empty one.
  if (expected === 'W') return (actual !== 'S' || field.dash === true) && actual !== 'G' && actual !== 'Q';
  if (expected === 'P') return field.padded && actual !== 'S' && actual !== 'G' && actual !== 'Q';
  return false;
}

/**
 * The header of `line` in `format`: its fields and where the message starts, or `null` when the line does not
 * have that header (a continuation line, another format). The match and its fields are refilled by the next call.
 */
export function matchHeader(line: string, format: HeaderFormat): HeaderMatch | null {
  const { classes } = format;
  if (classes === '') return null;
  const matched = matchOf(classes.length);
  const { fields } = matched;
  let pos = 0;
  for (let k = 0; k < classes.length; k++) {
    const expected = classes[k] as string;
    let field = nextField(line, pos, fields[k]);
    if (!field || !fits(expected, field)) return null;
    pos = field.end;
    const following = classes[k + 1];
    if (expected === 'W' && following === 'S') {
      // `chrome.exe *64 - …`: a program name of several words before its separator.
      for (let extra = 0; extra < MAX_EXTRA_WORDS; extra++) {
        const peek = nextField(line, pos, PEEK);
        if (!peek || peek.cls === following) break;
        if (peek.cls !== 'W' && peek.cls !== 'N' && peek.cls !== 'B') return null;
        field = peek;
        pos = field.end;
      }
    }
  }
  matched.end = pos;
  return matched;
}

/**
 * A line's header as {@link matchHeader} finds it: its fields (one per class of the format) and where the message
 * starts. One object per number of fields, refilled by every call: valid until the next one.
 */
export interface HeaderMatch {
  readonly fields: readonly HeaderField[];
  end: number;
}

/**
 * The match objects of {@link matchHeader}, by number of fields, sharing their fields: a line's header costs no
 * allocation (fresh, they were three to four objects and an array a line: a quarter of what a line allocated).
 */
const MATCHES: { fields: HeaderField[]; end: number }[] = [];
const FIELDS = Array.from({ length: MAX_FIELDS }, blankField);
/** The field read past a header word (see `matchHeader`), never one of the match's. */
const PEEK = blankField();

function matchOf(length: number): { fields: HeaderField[]; end: number } {
  let matched = MATCHES[length];
  if (!matched) {
    // A restored format has at most the classes a detection gives (MAX_FIELDS); more are read all the same.
    while (FIELDS.length < length) FIELDS.push(blankField());
    matched = { fields: FIELDS.slice(0, length), end: 0 };
    MATCHES[length] = matched;
  }
  return matched;
}

/** Classes that may end a header (a bare word may not: it is as likely the first word of the message). */
const ENDS_HEADER = new Set<string>(['T', 'E', 'D', 'N', 'L', 'l', 'B', 'G', 'S']);
/** Fields a run of header words may lead to. */
const STRONG = new Set<string>(['T', 'E', 'D', 'L', 'l']);
/** Classes that make a run of fields a header at all: a time or a level. */
const ANCHORS = /[TEL]|l/;

/**
 * The header format of a file from its first lines (see the module comment).
 *
 * @param sample - the file's first lines; blank ones and continuations (see {@link CONTINUATION}) are ignored.
 */
export function detectHeader(sample: readonly string[]): HeaderFormat {
  const rows: HeaderField[][] = [];
  for (const line of sample) {
    if (rows.length >= SAMPLE_LINES) break;
    if (line.trim() === '' || CONTINUATION.test(line)) continue;
    rows.push(fieldsOf(line));
  }
  if (rows.length === 0) return NO_HEADER;
  const needed = Math.ceil(rows.length * MIN_SUPPORT);
  const learned = learn(rows, needed);
  // A library format that fits names a learned one with the same classes, and replaces it when it is longer.
  let best: HeaderFormat | null = learned;
  for (const format of LIBRARY) {
    if (best && format.classes.length < best.classes.length) continue;
    if (best && format.classes.length === best.classes.length && (best.name !== 'learned' || format.classes !== best.classes)) continue;
    let fitting = 0;
    for (const line of sample) {
      if (line.trim() === '' || CONTINUATION.test(line)) continue;
      if (matchHeader(line, format)) fitting++;
      if (fitting >= needed) break;
    }
    if (fitting >= needed) best = format;
  }
  return best ?? NO_HEADER;
}

/** The learned format: see the module comment. */
function learn(rows: HeaderField[][], needed: number): HeaderFormat | null {
  let supporting = rows;
  let classes = '';
  let bestLength = 0;
  // Words in a row since the last typed field: a tag or a separator follows at most one (a host, a program).
  let words = 0;
  for (let k = 0; k < MAX_FIELDS; k++) {
    const counts = new Map<FieldClass, number>();
    let dashes = 0;
    for (const row of supporting) {
      const field = row[k];
      if (field) counts.set(field.cls, (counts.get(field.cls) ?? 0) + 1);
      if (field?.dash) dashes++;
    }
    // A column of words where some lines write `-` for an empty value is a column of words (unless nearly all are
    // dashes: then it is a separator).
    if (counts.has('W') && (counts.get('S') ?? 0) < needed) counts.set('W', (counts.get('W') as number) + dashes);
    let cls: FieldClass | null = null;
    let count = 0;
    for (const [candidate, n] of counts) {
      if (n > count) {
        cls = candidate;
        count = n;
      }
    }
    // Quoted text is a message (an access log's request, a quoted log message), never a header field.
    if (cls === null || count < needed || cls === 'Q') break;
    const chosen = cls;
    // In a file of one kind of line every word is "consistent": `Component State Change:` or `Processed 5 items`
    // is message, not header. Header words (hosts, nodes, components) come one at a time before a tag, a
    // separator or a number, or in a run before a time or a level (BGL's `R02-M1-N0 RAS KERNEL INFO`).
    if (words > 0 && !STRONG.has(chosen) && chosen !== 'W' && (words > 1 || chosen === 'N')) break;
    words = chosen === 'W' ? words + 1 : 0;
    supporting = supporting.filter((row) => row[k]?.cls === chosen || (chosen === 'W' && row[k]?.dash === true));
    const column = chosen === 'W' && supporting.filter((row) => row[k]?.padded).length >= needed;
    classes += column ? 'P' : chosen;
    if ((ENDS_HEADER.has(chosen) || column) && ANCHORS.test(classes)) bestLength = classes.length;
    if (chosen === 'G') break;
  }
  return bestLength === 0 ? null : { name: 'learned', classes: classes.slice(0, bestLength) };
}
