/**
 * Splits a raw log line into what the scanner needs: its time, its severity and the message to mine (the line
 * without its timestamp, whose text would otherwise only add variable tokens to every template).
 */
import { parseSeverity, type Severity } from './severity.js';
import { TimestampParser } from './timestamp.js';

/** One parsed line. */
export interface ParsedLine {
  /** Epoch ms (UTC), or `null` when the line has no parseable timestamp. */
  epochMs: number | null;
  severity: Severity | null;
  /** The line with its timestamp removed, trimmed. */
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
    const message = stamp.start === 0 ? line.slice(stamp.end) : `${line.slice(0, stamp.start)} ${line.slice(stamp.end)}`;
    return { epochMs: stamp.epochMs, severity: parseSeverity(line, stamp.end), message: message.trim() };
  }
}
