/**
 * `JsonPrinter`: JSON laid out again as its tokens stream past, the way `JSON.stringify(value, null, 2)` lays it out
 * — the `--json` document of a large result and a result's `structuredContent` in its text.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { JsonPrinter } from '../../src/cli/json-layout.js';
import { JsonTokenizer } from '../../src/client/json-tokens.js';

/** `json` (cut at `cuts`, fractions of its length) through the tokenizer into a printer; what it wrote. */
function layout(json: string, options: { depth?: number; skipKey?: string; cuts?: readonly number[] } = {}): string {
  const written: string[] = [];
  const tokenizer = new JsonTokenizer(new JsonPrinter({ write: (text) => void written.push(text) }, options.depth, options.skipKey));
  let from = 0;
  for (const position of [...(options.cuts ?? []).map((fraction) => Math.floor(fraction * json.length)), json.length].sort((a, b) => a - b)) {
    tokenizer.write(json.slice(from, position));
    from = position;
  }
  tokenizer.end();
  return written.join('');
}

describe('JsonPrinter', () => {
  it('lays any JSON value out as JSON.stringify(value, null, 2) does, from its text in any pieces (fast-check, 3,000 values)', () => {
    const cuts = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 10 });
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5, stringUnit: 'binary' }), fc.constantFrom(undefined, 1, '\t'), cuts, (value, indent, at) => {
        // The text as a server may write it (compact, indented), in JSON.parse's key order.
        const text = JSON.stringify(value, null, indent);
        expect(layout(text, { cuts: at })).toBe(JSON.stringify(JSON.parse(text), null, 2));
      }),
      { numRuns: 3_000 },
    );
  });

  it('writes numbers as JSON.stringify writes the number JSON.parse reads', () => {
    expect(layout('[1E2, -0, 0.10, 1e400, -1e-400, 12345678901234567890]')).toBe(JSON.stringify([100, -0, 0.1, Infinity, -0, 12345678901234567000], null, 2));
  });

  it('nests its output `depth` levels deep, as a value inside a document', () => {
    const value = { a: [1, { b: 'x' }, []], c: {} };
    const document = JSON.stringify({ result: value }, null, 2);
    expect(`{\n  "result": ${layout(JSON.stringify(value), { depth: 1 })}\n}`).toBe(document);
  });

  it('leaves out `skipKey` of the top-level object only, whatever its value', () => {
    for (const skipped of ['"complete"', '1', 'null', '{"resultType":{"a":[1]}}', '[[],{}]']) {
      const json = `{"resultType":${skipped},"content":[{"resultType":"kept"}],"z":{"resultType":2}}`;
      expect(layout(json, { skipKey: 'resultType' })).toBe(JSON.stringify({ content: [{ resultType: 'kept' }], z: { resultType: 2 } }, null, 2));
      // Last, or the only key: no comma left behind.
      expect(layout(`{"a":1,"resultType":${skipped}}`, { skipKey: 'resultType' })).toBe('{\n  "a": 1\n}');
      expect(layout(`{"resultType":${skipped}}`, { skipKey: 'resultType' })).toBe('{}');
    }
  });
});
