/**
 * `JsonTokenizer`, the streaming tokenizer `--output` reads a large result with: it must accept exactly what
 * `JSON.parse` accepts (anything else is a `JsonStreamError`), give the same value whatever pieces the text comes in,
 * report each value's path, and hand strings out in pieces that never split a surrogate pair.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { type JsonEvents, type JsonPath, JsonStreamError, JsonTokenizer } from '../../src/client/json-tokens.js';

/**
 * The value the events describe, built again (keys defined, so `__proto__` is a key like any other, and a repeated
 * key keeps its first place with its last value, as `JSON.parse` does). Checks on the way that each event's path is
 * where the value is, and that no string piece ends between the halves of a surrogate pair.
 */
function parse(pieces: readonly string[]): unknown {
  const stack: { value: Record<string, unknown> | unknown[]; key: string }[] = [];
  let root: unknown;
  let text: string[] = [];
  const place = (value: unknown): void => {
    const top = stack[stack.length - 1];
    if (!top) root = value;
    else if (Array.isArray(top.value)) top.value.push(value);
    else Object.defineProperty(top.value, top.key, { value, enumerable: true, writable: true, configurable: true });
  };
  const here = (): JsonPath => stack.map((open) => (Array.isArray(open.value) ? open.value.length : open.key));
  const at = (path: JsonPath, expected = here()): void => {
    if (JSON.stringify(path) !== JSON.stringify(expected)) throw new Error(`path ${JSON.stringify(path)}, expected ${JSON.stringify(expected)}`);
  };
  const events: JsonEvents = {
    startObject: (path) => {
      at(path);
      stack.push({ value: {}, key: '' });
    },
    startArray: (path) => {
      at(path);
      stack.push({ value: [], key: '' });
    },
    endObject: () => place(stack.pop()?.value),
    endArray: () => place(stack.pop()?.value),
    key: (name, path) => {
      at(path, here().slice(0, -1)); // a key's path is the object's
      (stack[stack.length - 1] as { key: string }).key = name;
    },
    stringStart: (path) => {
      at(path);
      text = [];
    },
    stringChunk: (piece) => {
      const before = text[text.length - 1];
      if (before !== undefined && isHigh(before.charCodeAt(before.length - 1)) && isLow(piece.charCodeAt(0)))
        throw new Error(`a surrogate pair split between pieces ${JSON.stringify(before)} and ${JSON.stringify(piece)}`);
      if (piece.length === 0) throw new Error('an empty piece');
      text.push(piece);
    },
    stringEnd: () => place(text.join('')),
    primitive: (raw, path) => {
      at(path);
      place(JSON.parse(raw));
    },
  };
  const tokenizer = new JsonTokenizer(events);
  for (const piece of pieces) tokenizer.write(piece);
  tokenizer.end();
  return root;
}

/** Events that do nothing, to override one by one. */
function noEvents(): JsonEvents {
  const ignore = (): void => {};
  return {
    startObject: ignore,
    endObject: ignore,
    startArray: ignore,
    endArray: ignore,
    key: ignore,
    stringStart: ignore,
    stringChunk: ignore,
    stringEnd: ignore,
    primitive: ignore,
  };
}

const isHigh = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;

/** `text` cut at the fractions `cuts` of its length (empty pieces included: a read may hand over nothing). */
function cut(text: string, cuts: readonly number[]): string[] {
  const positions = [...cuts.map((fraction) => Math.floor(fraction * (text.length + 1)))].sort((a, b) => a - b);
  const pieces: string[] = [];
  let from = 0;
  for (const position of positions) {
    pieces.push(text.slice(from, position));
    from = position;
  }
  pieces.push(text.slice(from));
  return pieces;
}

/**
 * `value` as JSON text written the many ways JSON allows: characters escaped at random (`\uXXXX` in either case,
 * surrogate halves on their own, `\/`, the short escapes), whitespace between tokens, numbers in exponent form.
 */
function serialize(value: unknown, random: () => number): string {
  const space = (): string => [' ', '', '\n', '\t', '\r\n  ', ''][Math.floor(random() * 6)] as string;
  if (typeof value === 'string') {
    let out = '"';
    for (const char of value.split('')) {
      const code = char.charCodeAt(0);
      const roll = random();
      const unicode = `\\u${code.toString(16).padStart(4, '0')}`;
      if (char === '"' || char === '\\' || code < 0x20) out += roll < 0.5 ? unicode : JSON.stringify(char).slice(1, -1);
      else if (char === '/' && roll < 0.5) out += '\\/';
      else if (roll < 0.1) out += unicode;
      else if (roll < 0.2) out += unicode.toUpperCase().replace('\\U', '\\u');
      else out += char;
    }
    return `${out}"`;
  }
  if (Array.isArray(value)) return `${space()}[${space()}${value.map((item) => serialize(item, random)).join(`${space()},${space()}`)}${space()}]${space()}`;
  if (value !== null && typeof value === 'object')
    return `{${space()}${Object.entries(value)
      .map(([key, item]) => `${serialize(key, random)}${space()}:${space()}${serialize(item, random)}`)
      .join(',')}${space()}}`;
  if (typeof value === 'number' && random() < 0.3 && value !== 0) return value.toExponential().replace('e+', random() < 0.5 ? 'E' : 'e+');
  return JSON.stringify(value);
}

/** A small deterministic random source for {@link serialize}, from fast-check's seed. */
function randomFrom(seed: number): () => number {
  let state = seed >>> 0;
  return () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

/** What `JSON.parse` makes of `text`, or 'refused'. */
function parsed(text: string): { value: unknown } | 'refused' {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return 'refused';
  }
}

/** What the tokenizer makes of `pieces`, or 'refused' — only ever with a JsonStreamError. */
function tokenized(pieces: readonly string[]): { value: unknown } | 'refused' {
  try {
    return { value: parse(pieces) };
  } catch (error) {
    if (error instanceof JsonStreamError) return 'refused';
    throw error;
  }
}

const cuts = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 30 });

describe('JsonTokenizer: the value JSON.parse gives', () => {
  it('for any JSON value written any way, cut into any pieces (fast-check, 5,000 values)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4, stringUnit: 'binary' }), cuts, fc.integer(), (value, at, seed) => {
        const text = serialize(value, randomFrom(seed));
        expect(JSON.stringify(parse(cut(text, at)))).toBe(JSON.stringify(JSON.parse(text)));
      }),
      { numRuns: 5_000 },
    );
  });

  it('one character at a time', () => {
    const text = JSON.stringify({ content: [{ type: 'text', text: '😀é\u{10FFFF}a\\"\n'.repeat(50) }], n: [-0.5e-7, 1e308, 0, -1, 12.25] }) + ' \n';
    const withEscapes = text.replace('"type"', '"\\u0074ype"').replace('é', '\\u00E9').replace('😀', '\\ud83d\\uDE00');
    for (const json of [text, withEscapes]) expect(parse(json.split(''))).toEqual(JSON.parse(json));
  });

  it('for every escape JSON has, cut at every position', () => {
    const json = String.raw`["\"\\\/\b\f\n\r\t\u0041\u00e9\u00C9/"]`;
    for (let at = 0; at <= json.length; at += 1) expect(parse([json.slice(0, at), json.slice(at)])).toEqual(['"\\/\b\f\n\r\tAéÉ/']);
  });

  it('with a surrogate pair, escaped or not, cut at every position', () => {
    for (const json of ['{"t":"x\\ud83d\\ude00y"}', '{"t":"x\\uD83D\\uDE00y"}', '{"t":"x\ud83d\ude00y"}', '["\\ud83d\ude00"]']) {
      const expected = JSON.parse(json) as unknown;
      for (let at = 0; at <= json.length; at += 1) {
        expect(parse([json.slice(0, at), json.slice(at)]), `${json} cut at ${at}`).toEqual(expected);
        for (let second = at; second <= json.length; second += 1)
          expect(parse([json.slice(0, at), json.slice(at, second), json.slice(second)])).toEqual(expected);
      }
    }
  });

  it('for a lone surrogate half, which JSON allows escaped and JSON.parse keeps', () => {
    for (const json of ['"\\ud83d"', '"\\ude00"', '"\\ud83dx"', '"\\ude00\\ud83d"', '"a\ud83d"']) {
      for (let at = 0; at <= json.length; at += 1) expect(tokenized([json.slice(0, at), json.slice(at)])).toEqual({ value: JSON.parse(json) });
    }
  });

  it('for numbers: any number, and any string of number characters, accepted or refused as JSON.parse does (fast-check)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.double(), fc.integer(), fc.bigInt().map(String)), cuts, (number, at) => {
        const text = typeof number === 'string' ? number : JSON.stringify(number);
        expect(tokenized(cut(text, at))).toEqual(parsed(text));
      }),
      { numRuns: 2_000 },
    );
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('-', '+', '0', '1', '9', '.', 'e', 'E'), minLength: 1, maxLength: 8 }), cuts, (text, at) => {
        expect(tokenized(cut(text, at))).toEqual(parsed(text));
        expect(tokenized(cut(`[${text}]`, at))).toEqual(parsed(`[${text}]`));
      }),
      { numRuns: 5_000 },
    );
  });

  it('for deep nesting', () => {
    const json = `${'[{"a":'.repeat(300)}1${'}]'.repeat(300)}`;
    expect(parse(cut(json, [0.3, 0.7]))).toEqual(JSON.parse(json));
  });
});

describe('JsonTokenizer: paths', () => {
  it("hands every event the one live path array (a key: its object's path), never a copy", () => {
    const seen = new Set<JsonPath>();
    const keyPaths: string[] = [];
    const record = (path: JsonPath): void => void seen.add(path);
    const tokenizer = new JsonTokenizer({
      ...noEvents(),
      startObject: record,
      startArray: record,
      stringStart: record,
      primitive: (_raw, path) => record(path),
      key: (_name, path) => {
        record(path);
        keyPaths.push(JSON.stringify(path));
      },
    });
    tokenizer.write('{"a":[{"b":1,"c":"x"}],"d":{"e":null}}');
    tokenizer.end();
    expect(seen.size).toBe(1);
    expect(keyPaths).toEqual(['[]', '["a",0]', '["a",0]', '[]', '["d"]']);
  });

  it('reads 100,000 levels of nesting', () => {
    let closed = 0;
    const tokenizer = new JsonTokenizer({ ...noEvents(), endObject: () => void (closed += 1) });
    tokenizer.write(`${'[{"a":'.repeat(100_000)}1${'}]'.repeat(100_000)}`);
    tokenizer.end();
    expect(closed).toBe(100_000);
  });
});

describe('JsonTokenizer: invalid text', () => {
  it('refuses a raw control character (U+0000–U+001F) in a string or a key, as JSON.parse does', () => {
    for (let code = 0; code < 0x20; code += 1) {
      const raw = String.fromCharCode(code);
      for (const text of [`"a${raw}b"`, `{"k${raw}":1}`, `["${raw}"]`]) {
        expect(() => JSON.parse(text)).toThrow(SyntaxError);
        expect(() => parse([text]), JSON.stringify(text)).toThrow(JsonStreamError);
        // Also when the character is a piece of its own.
        expect(() => parse([...text]), JSON.stringify(text)).toThrow(JsonStreamError);
      }
    }
    expect(() => parse(['"tab\there"'])).toThrow(/raw control character \(U\+0009\)/);
    // Escaped, they are fine; DEL (U+007F) and U+0080–U+009F are not control characters to JSON.
    expect(parse(['"\\u0000\\n\\t\\u001f\u007f\u0085"'])).toBe('\u0000\n\t\u001f\u007f\u0085');
  });

  it('refuses, with a JsonStreamError, what JSON.parse refuses', () => {
    const invalid = ['{"a":1,}', '[1,]', '{"a" 1}', '"\\x"', '"\\u12G4"', '"\\u00"', '01', '-', '1.', '.5', '+1', '1e', '1E+', '-01', '0x10', '1e5e5', '[-]'];
    invalid.push('tru', 'nul', 'truex', 'NaN', 'Infinity', '-Infinity', "'a'", '', ' ', '{,}', '[,1]', '[1,,2]', '[1 2]', '[true false]');
    invalid.push('{"a":1}{}', '{"a":1} x', '"abc', '["a"', '{"a":}', '{"a":1 "b":2}', '{1:2}', '{"a"}', '\ufeff{}', '[1}', '{"a":1]', '\u00a0[]', ']', '}');
    for (const text of invalid) {
      expect(parsed(text), text).toBe('refused');
      expect(tokenized([text]), text).toBe('refused');
      expect(tokenized(text.split('')), text).toBe('refused');
    }
  });

  it('accepts and refuses what JSON.parse does, on any string of JSON characters and on JSON with one character changed (fast-check)', () => {
    const unit = fc.constantFrom(...'{}[]",:0123456789-+.eEtrufalsn\\u/bx \n\t\u0001\ud83d\ude00'.split(''));
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 16 }), cuts, (text, at) => {
        expect(tokenized(cut(text, at))).toEqual(parsed(text));
      }),
      { numRuns: 10_000 },
    );
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), fc.nat(), fc.constantFrom('', ...'{}[]",:0-.e\\u\n\u0000'.split('')), cuts, (value, where, char, at) => {
        const json = JSON.stringify(value);
        const position = where % (json.length + 1);
        // Replace the character there with `char` (or remove it), or put `char` before it.
        const text = where % 2 === 0 ? json.slice(0, position) + char + json.slice(position + 1) : json.slice(0, position) + char + json.slice(position);
        expect(tokenized(cut(text, at))).toEqual(parsed(text));
      }),
      { numRuns: 10_000 },
    );
  });

  it('refuses an object key longer than 64 Ki characters (a key names a field)', () => {
    const key = 'k'.repeat(64 * 1024 + 1);
    expect(() => parse([`{"${key}":1}`])).toThrow(/an object key longer than 65536 characters/);
    expect(parse([`{"${key.slice(1)}":1}`])).toEqual({ [key.slice(1)]: 1 });
  });
});

/** The pieces a string's text is reported in, for the text fed as `pieces`. */
function stringPieces(pieces: readonly string[]): string[] {
  const reported: string[] = [];
  const tokenizer = new JsonTokenizer({ ...noEvents(), stringChunk: (text) => void reported.push(text) });
  for (const piece of pieces) tokenizer.write(piece);
  tokenizer.end();
  return reported;
}

describe('JsonTokenizer: a string is never held whole', () => {
  it('reports a string made only of escapes at the end of each piece of input, not at its closing quote', () => {
    const unit = '\\u4e2d\\u6587\\n\\"';
    const pieces = ['"', ...Array.from({ length: 200 }, () => unit.repeat(10)), '"'];
    const reported = stringPieces(pieces);
    expect(reported.join('')).toBe('中文\n"'.repeat(2000));
    // One report per piece of escapes, each that piece's 40 characters.
    expect(reported).toHaveLength(200);
    expect(Math.max(...reported.map((piece) => piece.length))).toBe(40);
  });

  it('keeps back only a high surrogate at the end of a piece, and an escape cut in two', () => {
    // "x😀y" with the pair escaped, cut after the high surrogate's escape and inside the low one's.
    expect(stringPieces(['"x\\ud83d', '\\ude', '00y"'])).toEqual(['x', '😀y']);
    // A plain high surrogate at the end of a piece, its pair in the next.
    expect(stringPieces(['"a\ud83d', '\ude00b"'])).toEqual(['a', '😀b']);
    // An escape cut after its backslash: what came before it is reported with its piece.
    expect(stringPieces(['"ab\\', 'ncd"'])).toEqual(['ab', '\ncd']);
  });
});
