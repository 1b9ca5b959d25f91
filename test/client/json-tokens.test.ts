/**
 * `JsonTokenizer`, the streaming tokenizer `--output` reads a large result with: it must accept exactly what
 * `JSON.parse` accepts, give the same value whatever pieces the text comes in, and hand strings out in pieces.
 */
import { describe, expect, it } from 'vitest';

import { type JsonEvents, JsonStreamError, JsonTokenizer } from '../../src/client/json-tokens.js';

/** The value the events describe, built again (keys defined, so `__proto__` is a key like any other). */
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
  const events: JsonEvents = {
    startObject: () => void stack.push({ value: {}, key: '' }),
    startArray: () => void stack.push({ value: [], key: '' }),
    endObject: () => place(stack.pop()?.value),
    endArray: () => place(stack.pop()?.value),
    key: (name) => void ((stack[stack.length - 1] as { key: string }).key = name),
    stringStart: () => void (text = []),
    stringChunk: (piece) => void text.push(piece),
    stringEnd: () => place(text.join('')),
    primitive: (raw) => place(JSON.parse(raw)),
  };
  const tokenizer = new JsonTokenizer(events);
  for (const piece of pieces) tokenizer.write(piece);
  tokenizer.end();
  return root;
}

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
});

/** The pieces a string's text is reported in, for the text fed as `pieces`. */
function stringPieces(pieces: readonly string[]): string[] {
  const reported: string[] = [];
  const ignore = (): void => {};
  const tokenizer = new JsonTokenizer({
    startObject: ignore,
    endObject: ignore,
    startArray: ignore,
    endArray: ignore,
    key: ignore,
    stringStart: ignore,
    stringChunk: (text) => void reported.push(text),
    stringEnd: ignore,
    primitive: ignore,
  });
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
