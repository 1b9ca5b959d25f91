/**
 * A push tokenizer for JSON text that arrives in pieces: a result read back by `--output` is tens of MiB, and the
 * point of reading it piece by piece is never to hold it whole — as one string, or as the value `JSON.parse` builds.
 * Strings come out in pieces too ({@link JsonEvents.stringChunk}), so one huge `text` costs no more than the piece
 * at hand.
 */

/** Where a token is: the keys and array indexes from the document's root down to it. */
export type JsonPath = readonly (string | number)[];

/**
 * What the tokenizer reports, in document order. `path` is the place of the value that starts (for `key`: of the
 * object holding it); it is one live array the tokenizer keeps changing, so a consumer reads it during the call and
 * never keeps it.
 */
export interface JsonEvents {
  startObject(path: JsonPath): void;
  endObject(): void;
  startArray(path: JsonPath): void;
  endArray(): void;
  key(name: string, path: JsonPath): void;
  stringStart(path: JsonPath): void;
  /**
   * A piece of a string's value, escapes decoded. A piece never ends between the two halves of a surrogate pair
   * (a character above U+FFFF), so each piece can be encoded to UTF-8 on its own.
   */
  stringChunk(text: string): void;
  stringEnd(): void;
  /** A number, `true`, `false` or `null`, as written. */
  primitive(raw: string, path: JsonPath): void;
}

/** The JSON text is not valid (or ended too early). */
export class JsonStreamError extends Error {
  override name = 'JsonStreamError';
}

const enum Mode {
  Value,
  FirstValue,
  FirstKey,
  Key,
  Colon,
  AfterValue,
  String,
  Escape,
  Unicode,
  Literal,
  End,
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
const LITERAL_CHAR = /[A-Za-z0-9+\-.]/;
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
/**
 * Where string text stops: its closing quote, an escape, or a raw control character (U+0000–U+001F), which JSON
 * allows only escaped — `JSON.parse` refuses the text, so a file written from it must not exist either.
 */
// eslint-disable-next-line no-control-regex -- the control characters are what this pattern is for
const STRING_STOP = /["\\\u0000-\u001f]/g;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
/** Longest object key held (characters): keys name fields; a longer one is not a document this client reads. */
const MAX_KEY_CHARS = 64 * 1024;

/**
 * Feed it text with {@link write} in any pieces, then {@link end}; it calls `events` as tokens complete.
 * @throws JsonStreamError from `write`/`end` for text that is not one JSON value.
 */
export class JsonTokenizer {
  private readonly kinds: ('object' | 'array')[] = [];
  private readonly path: (string | number)[] = [];
  private mode = Mode.Value;
  private literal = '';
  private unicode = '';
  /** The key being read, while one is. */
  private keyText: string | undefined;
  /**
   * Decoded string text not yet reported: what this piece of input held, reported at its end ({@link write}), and
   * between pieces at most a high surrogate waiting for its pair (an escape cut in two waits in `unicode`).
   */
  private held = '';

  constructor(private readonly events: JsonEvents) {}

  write(text: string): void {
    let i = 0;
    while (i < text.length) {
      if (this.mode === Mode.String) {
        i = this.stringPart(text, i);
        continue;
      }
      const c = text[i] as string;
      i += 1;
      switch (this.mode) {
        case Mode.Escape:
          this.escape(c);
          break;
        case Mode.Unicode:
          this.unicode += c;
          if (this.unicode.length === 4) {
            if (!/^[0-9a-fA-F]{4}$/.test(this.unicode)) throw new JsonStreamError(`bad \\u escape: ${this.unicode}`);
            this.stringText(String.fromCharCode(parseInt(this.unicode, 16)));
            this.mode = Mode.String;
          }
          break;
        case Mode.Literal:
          if (LITERAL_CHAR.test(c)) this.literal += c;
          else {
            this.endLiteral();
            i -= 1; // the delimiter is read again in the mode after the value
          }
          break;
        default:
          if (!WHITESPACE.has(c)) this.structural(c);
      }
    }
    // Once per piece, not only where plain text runs to its end: a string made only of escapes would otherwise be
    // held whole until its closing quote.
    if (this.mode === Mode.String || this.mode === Mode.Escape || this.mode === Mode.Unicode) this.flushHeld();
  }

  /** The text is complete. @throws JsonStreamError when it does not hold exactly one whole value. */
  end(): void {
    if (this.mode === Mode.Literal && this.kinds.length === 0) this.endLiteral();
    if (this.mode !== Mode.End) throw new JsonStreamError('the JSON text ended too early');
  }

  private structural(c: string): void {
    switch (this.mode) {
      case Mode.FirstValue:
        // Any character but ']' starts the array's first value.
        return c === ']' ? this.close('array') : this.value(c);
      case Mode.Value:
        return this.value(c);
      case Mode.FirstKey:
      case Mode.Key:
        if (c === '}' && this.mode === Mode.FirstKey) return this.close('object');
        if (c !== '"') throw new JsonStreamError(`expected a key, found ${JSON.stringify(c)}`);
        this.keyText = '';
        this.mode = Mode.String;
        return;
      case Mode.Colon:
        if (c !== ':') throw new JsonStreamError(`expected ':', found ${JSON.stringify(c)}`);
        this.mode = Mode.Value;
        return;
      case Mode.AfterValue: {
        const kind = this.kinds[this.kinds.length - 1];
        if (c === ',') {
          if (kind === 'array') this.path[this.path.length - 1] = (this.path[this.path.length - 1] as number) + 1;
          this.mode = kind === 'array' ? Mode.Value : Mode.Key;
          return;
        }
        if ((c === '}' && kind === 'object') || (c === ']' && kind === 'array')) return this.close(kind);
        throw new JsonStreamError(`expected ',' or the end of the ${kind ?? 'value'}, found ${JSON.stringify(c)}`);
      }
      default:
        throw new JsonStreamError(`unexpected ${JSON.stringify(c)} after the JSON value`);
    }
  }

  private value(c: string): void {
    if (c === '{') {
      this.events.startObject(this.path);
      this.kinds.push('object');
      this.path.push('');
      this.mode = Mode.FirstKey;
    } else if (c === '[') {
      this.events.startArray(this.path);
      this.kinds.push('array');
      this.path.push(0);
      this.mode = Mode.FirstValue;
    } else if (c === '"') {
      this.events.stringStart(this.path);
      this.mode = Mode.String;
    } else if (LITERAL_CHAR.test(c)) {
      this.literal = c;
      this.mode = Mode.Literal;
    } else throw new JsonStreamError(`expected a value, found ${JSON.stringify(c)}`);
  }

  private close(kind: 'object' | 'array'): void {
    this.kinds.pop();
    this.path.pop();
    if (kind === 'object') this.events.endObject();
    else this.events.endArray();
    this.valueDone();
  }

  private valueDone(): void {
    this.mode = this.kinds.length === 0 ? Mode.End : Mode.AfterValue;
  }

  private endLiteral(): void {
    const raw = this.literal;
    if (raw !== 'true' && raw !== 'false' && raw !== 'null' && !NUMBER.test(raw)) throw new JsonStreamError(`not a JSON value: ${raw.slice(0, 40)}`);
    this.literal = '';
    this.events.primitive(raw, this.path);
    this.valueDone();
  }

  /** Read string text from `text[i]` up to its closing quote or an escape; returns where to go on. */
  private stringPart(text: string, i: number): number {
    STRING_STOP.lastIndex = i;
    const stop = STRING_STOP.exec(text);
    const end = stop === null ? text.length : stop.index;
    if (end > i) this.stringText(text.slice(i, end));
    if (stop === null) return end;
    if (stop[0] === '\\') this.mode = Mode.Escape;
    else if (stop[0] === '"') this.endString();
    else throw new JsonStreamError(`a raw control character (U+${stop[0].charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}) in a string`);
    return end + 1;
  }

  private escape(c: string): void {
    if (c === 'u') {
      this.unicode = '';
      this.mode = Mode.Unicode;
      return;
    }
    const decoded = ESCAPES[c];
    if (decoded === undefined) throw new JsonStreamError(`bad escape \\${c}`);
    this.stringText(decoded);
    this.mode = Mode.String;
  }

  private stringText(text: string): void {
    if (this.keyText !== undefined) {
      this.keyText += text;
      if (this.keyText.length > MAX_KEY_CHARS) throw new JsonStreamError(`an object key longer than ${MAX_KEY_CHARS} characters`);
      return;
    }
    this.held += text;
  }

  /** Report held string text, keeping back a final high surrogate until its pair (or the string's end) comes. */
  private flushHeld(): void {
    const held = this.held;
    if (held.length === 0) return;
    const last = held.charCodeAt(held.length - 1);
    const keep = last >= 0xd800 && last <= 0xdbff ? 1 : 0;
    if (held.length > keep) this.events.stringChunk(held.slice(0, held.length - keep));
    this.held = keep ? held.slice(-1) : '';
  }

  private endString(): void {
    if (this.keyText !== undefined) {
      const name = this.keyText;
      this.keyText = undefined;
      // The object's path is the live one without its last entry: taken off and put back rather than copied, which
      // cost the depth for each key (quadratic in the depth: 100,000 levels of `[{"a":` took minutes).
      this.path.pop();
      this.events.key(name, this.path);
      this.path.push(name);
      this.mode = Mode.Colon;
      return;
    }
    if (this.held.length > 0) this.events.stringChunk(this.held);
    this.held = '';
    this.events.stringEnd();
    this.valueDone();
  }
}
