import { describe, expect, it } from 'vitest';

import { escapeJsonText, jsonDocument } from '../../src/cli/json-output.js';

describe("the CLI's JSON documents", () => {
  const hostile = { text: 'a\u009b31mb\u2028c\u2029d\u0085e\u007ff', nested: [{ '\u009bkey': 'x' }] };

  it('write DEL, the C1 controls and U+2028 / U+2029 as \\u escapes: no raw one left, the same JSON value', () => {
    const document = jsonDocument(hostile);
    expect(document).not.toMatch(/[\u007f-\u009f\u2028\u2029]/);
    expect(document).toContain('a\\u009b31mb\\u2028c\\u2029d\\u0085e\\u007ff');
    expect(document).toContain('"\\u009bkey"');
    expect(JSON.parse(document)).toEqual(hostile);
  });

  it('control: any other text is laid out as JSON.stringify(value, null, 2) does, ended by a line break', () => {
    const plain = { text: 'tab\there, "quoted", \u001b escaped by JSON itself, é 漢 🙂 \u00a0', n: [1, null, true] };
    expect(jsonDocument(plain)).toBe(`${JSON.stringify(plain, null, 2)}\n`);
    expect(escapeJsonText('{"a":"\u00a0\u00ff"}')).toBe('{"a":"\u00a0\u00ff"}');
  });
});
