/**
 * Splits the raw lines of one file into what the scanner needs: time, severity, component and the message to
 * mine. The file's header format is detected from its first lines (see `header.ts`); a line with that header
 * loses it (timestamp, host, pid, level, thread, logger), a line without it loses only a timestamp at its head.
 * Year-less timestamps get their year from a per-file {@link YearResolver}.
 */
import { CONTINUATION, detectHeader, type HeaderField, type HeaderFormat, headerLevel, matchHeader, NO_HEADER, SAMPLE_LINES } from './header.js';
import { levelWord, parseSeverity, type Severity } from './severity.js';
import { epochOfMatch, findTimestamp, type TimestampFields, type TimestampMatch, yearHints, YearResolver, type YearState } from './timestamp.js';

/** One parsed line. */
export interface ParsedLine {
  /** Epoch ms (UTC), or `null` when the line has no usable timestamp. */
  epochMs: number | null;
  /** The level the line states (header field, syslog priority, a level word at the message's start), or `null`. */
  severity: Severity | null;
  /** The message: the line without its header, trimmed. */
  message: string;
  /** The header's tag without its pid (`sshd`, `dfs.DataNode$PacketResponder`), or `null`. */
  component: string | null;
  /**
   * The line continues the previous event: the file has a header format, this line does not have it nor a
   * timestamp, and it is indented or reads like a stack trace (`at …`, `Caused by: …`, `java.io.IOException: …`,
   * `Traceback …`, `ValueError: …`).
   */
  continuation: boolean;
}

/** Options of {@link FileLineParser}. */
export interface FileLineParserOptions {
  /** Epoch ms no line of the file is later than (its mtime); year-less dates are placed before it. Default: now. */
  referenceMs?: number;
}

/**
 * A tag without its suffix `[…]`, `:` and `]` (each optional, in that order, the bracketed part without `]`):
 * `sshd[42]:` → `sshd`; `crond(pam_unix)[2915]:` → `crond(pam_unix)`; `main.go:10]` → `main.go:10`. What
 * `tag.replace(/(?:\[[^\]]*\])?:?\]?$/, '')` gives, in linear time: that pattern, tried at every position of a tag of
 * many `[` and no `]`, scanned to the end from each (quadratic: a 100 kB line took 0.8 s).
 */
export function withoutTagSuffix(tag: string): string {
  let start = tag.length;
  for (const closing of [0, 1]) {
    if (closing === 1 && !tag.endsWith(']')) continue;
    for (const colon of [0, 1]) {
      const end = tag.length - closing - colon;
      if (end < 0 || (colon === 1 && tag[end] !== ':')) continue;
      start = Math.min(start, end);
      // The bracketed part ends just before: it opens at the leftmost `[` after the `]` before it (its content may
      // hold `[`, not `]`).
      if (end === 0 || tag[end - 1] !== ']') continue;
      for (let i = end - 2; i >= 0 && tag[i] !== ']'; i--) if (tag[i] === '[') start = Math.min(start, i);
    }
  }
  return tag.slice(0, start);
}

/** The state of a {@link FileLineParser} as JSON, to continue a file after a restart. */
export type ParserState = { format: HeaderFormat; years: YearState };

/** Parses the lines of one file (construct one per file with its first lines). */
export class FileLineParser {
  /** The file's header format (`none` when its lines share none). */
  readonly format: HeaderFormat;
  private readonly years: YearResolver;

  /**
   * @param sample - the file's first lines (up to {@link SAMPLE_LINES} are used); they are parsed again with
   *   {@link parse} afterwards, in order.
   */
  constructor(sample: readonly string[], options: FileLineParserOptions = {}, restored?: ParserState) {
    if (restored) {
      this.format = restored.format;
      this.years = YearResolver.restore(restored.years, options.referenceMs ?? Date.now());
      return;
    }
    this.format = detectHeader(sample);
    this.years = new YearResolver(options.referenceMs ?? Date.now());
    // Years written inside messages of the first lines (`… at Fri Jun 17 07:07:00 2005`) date the year-less ones.
    for (const line of sample.slice(0, SAMPLE_LINES)) {
      const { stamp, messageStart } = this.head(line);
      if (!stamp || typeof stamp.value === 'number') continue;
      this.years.observe(stamp.value);
      for (const hint of yearHints(line.slice(messageStart))) this.years.hint(stamp.value as TimestampFields, hint);
    }
    this.years.restart();
  }

  /** A parser continuing where `state` was taken ({@link snapshot}). */
  static restore(state: ParserState, options: FileLineParserOptions = {}): FileLineParser {
    return new FileLineParser([], options, state);
  }

  /** State to continue the file with after a restart. */
  snapshot(): ParserState {
    return { format: { ...this.format }, years: this.years.snapshot() };
  }

  /** Parses one line (without its line terminator); call in file order. */
  parse(line: string): ParsedLine {
    const header = matchHeader(line, this.format);
    if (header) {
      const stamp = firstTimestamp(header.fields);
      const epochMs = stamp === null ? null : typeof stamp === 'number' ? stamp : epochOfMatch(stamp, this.years);
      let level: Severity | null = null;
      let tag: HeaderField | null = null;
      for (const field of header.fields) {
        level ??= field.level ?? null;
        // A tag names a component when it has a letter (`sshd[42]:`, not nginx's `38#0:`).
        if (field.cls === 'G' && hasLetter(line, field.start, field.end)) tag = field;
      }
      const message = accessRequest(withoutPrintkTime(line.slice(header.end).trim()));
      return {
        epochMs,
        severity: level ?? leadingLevel(message),
        message,
        component: tag ? withoutTagSuffix(line.slice(tag.start, tag.end)) || null : null,
        continuation: false,
      };
    }
    const stamp = findTimestamp(line);
    if (!stamp) {
      return {
        epochMs: null,
        severity: parseSeverity(line),
        message: line.trim(),
        component: null,
        continuation: this.format !== NO_HEADER && CONTINUATION.test(line),
      };
    }
    const message = (stamp.start === 0 ? line.slice(stamp.end) : `${line.slice(0, stamp.start)} ${line.slice(stamp.end)}`).trim();
    const syslog = stamp.syslog && stamp.start === 0 ? withoutSyslogHost(message) : null;
    return {
      epochMs: epochOfMatch(stamp, this.years),
      severity: parseSeverity(line, stamp.end),
      message: syslog ? withoutPrintkTime(syslog.message) : withoutLevel(message),
      component: syslog?.component ?? null,
      continuation: false,
    };
  }

  /** The timestamp of a line and where its message starts, without resolving a year. */
  private head(line: string): { stamp: TimestampMatch | null; messageStart: number } {
    const header = matchHeader(line, this.format);
    if (header) {
      const field = header.fields.find((f) => f.timestamp !== undefined);
      return { stamp: field?.timestamp ?? null, messageStart: header.end };
    }
    const stamp = findTimestamp(line);
    return { stamp, messageStart: stamp?.end ?? 0 };
  }
}

function hasLetter(line: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const code = line.charCodeAt(i) | 32;
    if (code >= 97 && code <= 122) return true;
  }
  return false;
}

/**
 * The level a message states with its first word, as syslog programs do (`error: …`, `WARNING: …`, `[warn] …`,
 * `Error …`), or as its only word (HPC's `… 1 warning`): other lower-case words count only with a colon or
 * brackets, so that prose does not. Only the first word is read (not the whole head, as {@link parseSeverity}
 * does for lines without a header): a level word later in a message ("IOPMPowerSource Information:",
 * "info.example.com:80") is text.
 */
function leadingLevel(message: string): Severity | null {
  let end = 0;
  while (end < message.length && end < 24 && message.charCodeAt(end) !== 32 && message.charCodeAt(end) !== 9) end++;
  if (end < 3 || end >= 24) return null;
  let start = 0;
  let last = end;
  const bracketed = message.charCodeAt(0) === 91 && message.charCodeAt(end - 1) === 93;
  if (bracketed) {
    start = 1;
    last = end - 1;
  }
  const colon = message.charCodeAt(last - 1) === 58;
  if (colon) last--;
  const word = message.slice(start, last);
  return bracketed || colon || end === message.length ? levelWord(word) : headerLevel(word);
}

/** The first timestamp or epoch of a header: a match to resolve, epoch ms, or `null`. */
function firstTimestamp(fields: readonly HeaderField[]): TimestampMatch | number | null {
  for (const field of fields) {
    if (field.timestamp) return field.timestamp;
    if (field.epochMs !== undefined) return field.epochMs;
  }
  return null;
}

const PRINTK_TIME = /^\[\s*\d+\.\d+\]\s*/;

/** A kernel message without the kernel's own uptime stamp (`[617774.870007] Out of memory …`). */
function withoutPrintkTime(message: string): string {
  return message.charCodeAt(0) === 91 ? message.replace(PRINTK_TIME, '') : message;
}

const LEADING_LEVEL = /^\[?([A-Za-z]+)\]?:?(?:\s+-)?\s+/;

/** A message without a level word at its start (`ERROR Connection …` → `Connection …`): the level is counted apart. */
function withoutLevel(message: string): string {
  const m = LEADING_LEVEL.exec(message);
  return m && headerLevel(m[1] as string) ? message.slice(m[0].length) : message;
}

/** The request and status of an access-log line: `"GET /x HTTP/1.1" 200 512 "-" "curl/8"`. */
const ACCESS_REQUEST = /^"([A-Z]{3,10}) \S+(?: (HTTP\/[\d.]+))?" ([1-5])\d\d(?!\S)/;

/**
 * An access-log message as its template should read: the method, the protocol and the status class kept as
 * constants (`GET <*> HTTP/1.1 5xx`), the path a variable, the size, referrer and user agent left out (they vary
 * per request, and agents of different lengths would split one template into many). Other messages unchanged.
 */
function accessRequest(message: string): string {
  if (message.charCodeAt(0) !== 34) return message;
  const m = ACCESS_REQUEST.exec(message);
  return m ? `${m[1]} <*>${m[2] ? ` ${m[2]}` : ''} ${m[3]}xx` : message;
}

/** `host tag[pid]: ` or `host tag: ` after a BSD syslog timestamp. */
const SYSLOG_HEADER = /^\S+ ([^\s:[\]]+)(?:\[\d+\])?: /;

/**
 * The message without the host, tag and pid of a syslog header: they vary per machine and process, and as
 * constant leading tokens they would make every message of a host look alike to the miner.
 */
function withoutSyslogHost(message: string): { message: string; component: string } | null {
  const m = SYSLOG_HEADER.exec(message);
  return m ? { message: message.slice(m[0].length), component: m[1] as string } : null;
}
