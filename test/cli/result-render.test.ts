/**
 * What `--output` writes for a large result (`saveLargeResult`: tokenizer → shape check → text renderer or JSON
 * layout → file), against the inline path as the oracle: `resultText` (and a final newline) without `--json`, the
 * `{taskId, status, result}` document with it, for any result the server may send — every block type, `text` of any
 * JSON type, `type` before or after `text`, `structuredContent`, `isError`, `_meta`, `resultType` — cut into any
 * pieces, including inside a UTF-8 character. A result `CallToolResultSchema` refuses is refused, and nothing is
 * left behind.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';

import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';

import { resultText } from '../../src/cli/requestor.js';
import { saveLargeResult } from '../../src/cli/result-file.js';
import { type TasksClient, TasksProtocolError } from '../../src/client/index.js';
import { CallToolResultSchema, toCallToolResult } from '../../src/client/wire-schemas.js';

const URI = 'mcp-tasks://tasks/t/result';
const directory = mkdtempSync(join(tmpdir(), 'result-render-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** A client whose result resource is `json`, handed to the sink in the pieces `cuts` (fractions of its bytes) make. */
function clientServing(json: string, cuts: readonly number[] = []): TasksClient {
  return {
    async readResultResourceTo(_uri: string, sink: Writable) {
      const bytes = Buffer.from(json, 'utf8');
      const positions = [...cuts.map((fraction) => Math.floor(fraction * bytes.length)), bytes.length].sort((a, b) => a - b);
      let from = 0;
      for (const position of positions) {
        // As readResultResourceTo does: one piece at a time, and none after the sink failed.
        const error = await new Promise<Error | null | undefined>((resolve) => sink.write(bytes.subarray(from, position), resolve));
        if (error) break;
        from = position;
      }
      return { bytes: bytes.length };
    },
  } as unknown as TasksClient;
}

let files = 0;
/** Save `json` as `--output` would; the file's text, or the error. Nothing but the file may be left in the directory. */
async function save(json: string, options: { json?: boolean; cuts?: readonly number[] } = {}): Promise<{ text: string } | { error: unknown }> {
  const name = `out-${(files += 1)}`;
  const path = join(directory, name);
  let outcome: { text: string } | { error: unknown };
  try {
    await saveLargeResult(clientServing(json, options.cuts), URI, path, { json: options.json === true, taskId: 't' });
    outcome = { text: readFileSync(path, 'utf8') };
  } catch (error) {
    outcome = { error };
  }
  expect(readdirSync(directory).filter((entry) => entry === name || entry.includes(`.${name}.`))).toEqual('text' in outcome ? [name] : []);
  return outcome;
}

/** What the inline path prints for `json`, or undefined where it refuses the result. */
function inline(json: string, asJson: boolean): string | undefined {
  const parsed = CallToolResultSchema.safeParse(JSON.parse(json));
  if (!parsed.success) return undefined;
  const result = toCallToolResult(parsed.data);
  if (asJson) return `${JSON.stringify({ taskId: 't', status: 'completed', result }, null, 2)}\n`;
  const text = resultText(result);
  return text.length === 0 || text.endsWith('\n') ? text : `${text}\n`;
}

/** `value` with every object's keys sorted: the same JSON value whatever order its keys came in. */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys((value as Record<string, unknown>)[key])]),
  );
}

const text = fc.string({ unit: 'binary', maxLength: 40 });
/** Anything a field may hold, so that the shape check meets every JSON type where it expects one. */
const anyJson = fc.oneof(fc.jsonValue({ maxDepth: 2 }), text);
const block = fc.record({
  type: fc.option(fc.oneof(fc.constantFrom('text', 'text', 'image', 'audio', 'resource_link', 'resource'), anyJson), { nil: undefined }),
  text: fc.option(fc.oneof(text, text, anyJson), { nil: undefined }),
  // Where `type` goes: before `text` (the renderer knows the block's type as its text comes) or after it (taken back).
  typeFirst: fc.boolean(),
  extra: fc.option(fc.dictionary(fc.constantFrom('data', 'mimeType', 'uri', 'resultType', '_meta'), anyJson), { nil: undefined }),
});
type GeneratedBlock = typeof block extends fc.Arbitrary<infer T> ? T : never;
const field = <T>(value: fc.Arbitrary<T>) => fc.option(fc.oneof({ weight: 4, arbitrary: value }, { weight: 1, arbitrary: anyJson }), { nil: undefined });
const result = fc.record({
  blocks: fc.oneof(
    { weight: 9, arbitrary: fc.array(fc.oneof({ weight: 9, arbitrary: block }, { weight: 1, arbitrary: anyJson }), { maxLength: 4 }) },
    { weight: 1, arbitrary: anyJson },
  ),
  structured: field(fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 })),
  isError: field(fc.boolean()),
  meta: field(fc.dictionary(fc.string({ maxLength: 3 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 })),
  resultType: fc.option(fc.constant('complete'), { nil: undefined }),
  order: fc.shuffledSubarray(['content', 'structuredContent', 'isError', '_meta', 'resultType', 'extra'], { minLength: 6, maxLength: 6 }),
  indent: fc.constantFrom(undefined, 1, '\t'),
});

/** The server's JSON text for a generated result, keys in the generated order. */
function serverJson(generated: typeof result extends fc.Arbitrary<infer T> ? T : never): string {
  const values: Record<string, unknown> = {
    content: Array.isArray(generated.blocks)
      ? (generated.blocks as (fc.JsonValue | GeneratedBlock)[]).map((item) => {
          if (item === null || typeof item !== 'object' || !('typeFirst' in item)) return item;
          const out: Record<string, unknown> = {};
          if (item.typeFirst && item.type !== undefined) out.type = item.type;
          if (item.text !== undefined) out.text = item.text;
          Object.assign(out, item.extra);
          if (!item.typeFirst && item.type !== undefined) out.type = item.type;
          return out;
        })
      : generated.blocks,
    structuredContent: generated.structured,
    isError: generated.isError,
    _meta: generated.meta,
    resultType: generated.resultType,
    extra: { note: 'an unknown key' },
  };
  return JSON.stringify(Object.fromEntries(generated.order.map((key) => [key, values[key]])), null, generated.indent);
}

const cuts = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 12 });

describe('--output of a large result: what the inline path prints', () => {
  it('without --json: resultText and a final newline, for any result in any pieces (fast-check, 1,500 results)', async () => {
    await fc.assert(
      fc.asyncProperty(result, cuts, async (generated, at) => {
        const json = serverJson(generated);
        const expected = inline(json, false);
        const saved = await save(json, { cuts: at });
        if (expected === undefined) expect(saved).toEqual({ error: expect.any(TasksProtocolError) });
        else expect(saved).toEqual({ text: expected });
      }),
      { numRuns: 1_500 },
    );
  });

  it('with --json: the same JSON value as the inline document, laid out as JSON.stringify(, 2) (fast-check, 1,000 results)', async () => {
    await fc.assert(
      fc.asyncProperty(result, cuts, async (generated, at) => {
        const json = serverJson(generated);
        const expected = inline(json, true);
        const saved = await save(json, { json: true, cuts: at });
        if (expected === undefined) return void expect(saved).toEqual({ error: expect.any(TasksProtocolError) });
        if (!('text' in saved)) throw saved.error;
        // Keys in the server's order (the inline document has zod's), so compared as values; the layout is
        // JSON.stringify's of what the file holds.
        expect(sortedKeys(JSON.parse(saved.text))).toEqual(sortedKeys(JSON.parse(expected)));
        expect(saved.text).toBe(`${JSON.stringify(JSON.parse(saved.text), null, 2)}\n`);
        expect(saved.text).not.toContain('"resultType": "complete"');
      }),
      { numRuns: 1_000 },
    );
  });

  it('names an image, audio or any other block as the inline path does, and a text block whose text is not a string', async () => {
    const json = JSON.stringify({
      content: [
        { type: 'text', text: 'first' },
        { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
        { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' },
        { type: 'resource_link', uri: 'file:///x', name: 'x' },
        { type: 'resource', resource: { uri: 'file:///y', text: 'inside' } },
        { type: 'text', text: 42 },
        { type: 'text', text: null },
        { type: 'text', text: ['a'] },
        { type: 'text' },
        { text: 'typed last', type: 'text' },
      ],
      isError: true,
    });
    const expected = [
      'first',
      '[image content omitted; use --json]',
      '[audio content omitted; use --json]',
      '[resource_link content omitted; use --json]',
      '[resource content omitted; use --json]',
      ...Array.from({ length: 4 }, () => '[text content omitted; use --json]'),
      'typed last',
    ].join('\n');
    expect(inline(json, false)).toBe(`${expected}\n`);
    expect(await save(json)).toEqual({ text: `${expected}\n` });
  });

  it('takes back the text of a block already written to the file when its type, after it, is not text', async () => {
    const long = 'é漢🙂 '.repeat(40_000); // 440 KB: written to the file over many pieces before the type comes
    const json = JSON.stringify({
      content: [
        { type: 'text', text: 'kept' },
        { text: long, type: 'image' },
        // Short: a long one would write over what a rewind failed to take back.
        { text: 'after', type: 'text' },
      ],
    });
    const expected = 'kept\n[image content omitted; use --json]\nafter\n';
    const pieces = Array.from({ length: 40 }, (_, index) => (index + 1) / 41);
    expect(await save(json, { cuts: pieces })).toEqual({ text: expected });
  });

  it('writes structuredContent for a result without blocks, however large, and only then', async () => {
    const structured = { rows: Array.from({ length: 5_000 }, (_, index) => ({ index, name: `${'é漢🙂'.repeat(5)} ${index}` })) };
    const alone = JSON.stringify({ structuredContent: structured, content: [] });
    expect(alone.length).toBeGreaterThan(3 * 64 * 1024); // the spool is copied in several reads
    const saved = await save(alone, { cuts: [0.1, 0.5, 0.9] });
    expect(saved).toEqual({ text: `${JSON.stringify(structured, null, 2)}\n` });
    expect(saved).toEqual({ text: inline(alone, false) });
    const withBlock = JSON.stringify({ structuredContent: structured, content: [{ type: 'text', text: 'the text' }] });
    expect(await save(withBlock)).toEqual({ text: 'the text\n' });
  });

  it("keeps structuredContent's keys in the server's order, where the inline path has JSON.parse's (documented)", async () => {
    // As a server that keeps insertion order (Python) may send it: integer-like keys after others, a key twice.
    const json = '{"content":[],"structuredContent":{"b":1,"10":2,"2":3,"a":{"x":1,"1":0},"b":4}}';
    const saved = `{\n  "b": 1,\n  "10": 2,\n  "2": 3,\n  "a": {\n    "x": 1,\n    "1": 0\n  },\n  "b": 4\n}\n`;
    expect(await save(json)).toEqual({ text: saved });
    expect(inline(json, false)).toBe(`{\n  "2": 3,\n  "10": 2,\n  "b": 4,\n  "a": {\n    "1": 0,\n    "x": 1\n  }\n}\n`);
    // The same JSON value.
    expect(JSON.parse(saved)).toEqual(JSON.parse(inline(json, false) as string));
  });

  it('feeds a character cut inside its UTF-8 bytes whole to the renderer', async () => {
    const json = JSON.stringify({ content: [{ type: 'text', text: 'é漢🙂\u{10FFFF}' }] });
    const everyByte = Array.from({ length: Buffer.byteLength(json) }, (_, index) => index / Buffer.byteLength(json));
    expect(await save(json, { cuts: everyByte })).toEqual({ text: 'é漢🙂\u{10FFFF}\n' });
  });
});

describe('--output of a large result: what it refuses', () => {
  const refusals: [string, string, RegExp][] = [
    ['an array', '[]', /not a JSON object/],
    ['a string', '"text"', /not a JSON object/],
    ['no content', '{"structuredContent":{}}', /no content array/],
    ['content an object', '{"content":{}}', /content is not an array/],
    ['a block a string', '{"content":["text"]}', /content block 0 is not an object/],
    ['a block without type', '{"content":[{"type":"text","text":"a"},{"text":"b"}]}', /content block 1 has no type/],
    ['a type that is a number', '{"content":[{"type":1}]}', /content block 0 has a type that is not a string/],
    ['structuredContent an array', '{"content":[],"structuredContent":[]}', /structuredContent is not an object/],
    ['structuredContent null', '{"content":[],"structuredContent":null}', /structuredContent is not an object/],
    ['isError a string', '{"content":[],"isError":"true"}', /isError is not a boolean/],
    ['_meta a number', '{"content":[],"_meta":1}', /_meta is not an object/],
    ['invalid JSON', '{"content":[{"type":"text","text":"a\u0001"}]}', /raw control character/],
    ['JSON that ends early', '{"content":[{"type":"text","text":"a"}', /ended too early/],
  ];
  for (const [what, json, message] of refusals) {
    it(`refuses ${what} (as CallToolResultSchema or JSON.parse does), leaving no file`, async () => {
      // The inline path refuses it too: JSON.parse throws, or the schema does not match.
      expect(
        (() => {
          try {
            return inline(json, false);
          } catch {
            return undefined;
          }
        })(),
      ).toBeUndefined();
      for (const asJson of [false, true]) {
        const saved = await save(json, { json: asJson, cuts: [0.5] });
        expect(saved).toEqual({ error: expect.any(TasksProtocolError) });
        const error = (saved as { error: TasksProtocolError }).error;
        expect(error.code).toBeNull();
        expect(error.message).toMatch(message);
      }
    });
  }
});
