/**
 * Splits a raw log line into what the scanner needs: its time, its severity and the message to mine: the line
 * without its timestamp (whose text would only add variable tokens to every template) and, for syslog, without
 * the host name and process id.
 */
import { parseSeverity, type Severity } from './severity.js';
import { TimestampParser } from './timestamp.js';

/** One parsed line. */
export interface ParsedLine {
  /** Epoch ms (UTC), or `null` when the line has no parseable timestamp. */
  epochMs: number | null;
  severity: Severity | null;
  /** The line without its timestamp (and syslog host and pid), trimmed. */
  message: string;
}

/** Parses lines of one file; keeps the timestamp format of the previous line as a hint (see {@link TimestampParser}). */
export class LineParser {
  private readonly timestamps: TimestampParser;

  /** @param now - reference time in epoch ms for timestamp formats without a year. */
  constructor(now: number = Date.now()) {
    this.timestamps = new TimestampParser(now);
  }

  /** Parses one line (without its line terminator). */
  parse(line: string): ParsedLine {
    const stamp = this.timestamps.parse(line);
    if (!stamp) return { epochMs: null, severity: parseSeverity(line), message: line.trim() };
    let message = (stamp.start === 0 ? line.slice(stamp.end) : `${line.slice(0, stamp.start)} ${line.slice(stamp.end)}`).trim();
    if (stamp.syslog && stamp.start === 0) message = withoutSyslogHost(message);
    return { epochMs: stamp.epochMs, severity: parseSeverity(line, stamp.end), message };
  }
}

/** `host tag[pid]: ` or `host tag: ` after a BSD syslog timestamp. */
const SYSLOG_HEADER = /^\S+ ([^\s:[\]]+)(?:\[\d+\])?: /;

/**
 * `tag: message` without the host and pid of a syslog header: they vary per machine and process, and as
 * constant leading tokens they would make every message of a host look alike to the miner.
 */
function withoutSyslogHost(message: string): string {
  const m = SYSLOG_HEADER.exec(message);
  return m ? `${m[1]}: ${message.slice(m[0].length)}` : message;
}
