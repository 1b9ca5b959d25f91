/**
 * Finds pieces of protected values in what a client received. A value is protected in every form it could leak
 * in: as stored, base64, base64url, hex, and its raw bytes; and in pieces, because a leak through a log template
 * arrives cut up (`sTC<*>ru<*>VSoGoRko-X…`). Every window of {@link TEXT_WINDOW} characters of each text form,
 * and of `rawWindow` bytes (twice as many hex digits) of the raw value, is looked for: about 48 bits of a random
 * value each, so innocent text does not collide with them.
 */

/** Characters of a base64(url) form: 8 × 6 bits. */
const TEXT_WINDOW = 8;
/** Bytes of a random raw value (48 bits). */
const RANDOM_BYTES_WINDOW = 6;

/** A protected value and the forms it is looked for in. */
interface Protected {
  label: string;
  /** Case-sensitive text forms. */
  texts: string[];
  raw: Buffer;
  /** Bytes per raw window (its hex windows are twice as long, compared case-insensitively). */
  rawWindow: number;
}

function windows(text: string, size: number): string[] {
  if (text.length <= size) return [text];
  return Array.from({ length: text.length - size + 1 }, (_, start) => text.slice(start, start + size));
}

/** Where a protected value turned up. */
export interface Leak {
  label: string;
  /** The piece found. */
  piece: string;
  /** Which answer (its label). */
  answer: string;
}

/** Collects protected values and scans answers for them. */
export class LeakDetector {
  private readonly values: Protected[] = [];

  /**
   * Protect a value given by its raw bytes and the text it is stored as (e.g. the secret file's base64url line,
   * or a task id).
   */
  protect(label: string, raw: Buffer, stored: string): this {
    const base64 = raw.toString('base64');
    const texts = [...new Set([stored.trim(), base64, base64.replace(/=+$/, ''), raw.toString('base64url')])];
    this.values.push({ label, texts, raw, rawWindow: RANDOM_BYTES_WINDOW });
    return this;
  }

  /** Protect a text value (a bearer token, a marker): its UTF-8 bytes are its raw form (8 characters a window). */
  protectText(label: string, text: string): this {
    this.values.push({ label, texts: [text], raw: Buffer.from(text, 'utf8'), rawWindow: TEXT_WINDOW });
    return this;
  }

  /** A task id (22 base64url characters): also the bytes base64url decoding gives, in hex and raw. */
  protectTaskId(label: string, taskId: string): this {
    return this.protect(label, Buffer.from(taskId, 'base64url'), taskId);
  }

  /** Every piece of a protected value found in `answer` (text or the raw bytes of a response). */
  scan(answerLabel: string, answer: string | Buffer): Leak[] {
    const bytes = typeof answer === 'string' ? Buffer.from(answer, 'utf8') : answer;
    const text = bytes.toString('utf8');
    const lower = text.toLowerCase();
    const leaks: Leak[] = [];
    for (const value of this.values) {
      const found =
        value.texts.flatMap((form) => windows(form, TEXT_WINDOW)).find((piece) => text.includes(piece)) ??
        windows(value.raw.toString('hex'), 2 * value.rawWindow).find((piece) => lower.includes(piece)) ??
        windowsOfBytes(value.raw, value.rawWindow)
          .find((piece) => bytes.includes(piece))
          ?.toString('hex');
      if (found !== undefined) leaks.push({ label: value.label, piece: found, answer: answerLabel });
    }
    return leaks;
  }

  /** How many values are protected (a detector with nothing to look for proves nothing). */
  get size(): number {
    return this.values.length;
  }
}

function windowsOfBytes(raw: Buffer, size: number): Buffer[] {
  if (raw.length <= size) return [raw];
  return Array.from({ length: raw.length - size + 1 }, (_, start) => raw.subarray(start, start + size));
}
