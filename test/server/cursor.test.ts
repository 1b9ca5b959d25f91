import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CursorCodec } from '../../src/server/cursor.js';

describe('tasks/list cursors', () => {
  const codec = new CursorCodec(randomBytes(32));

  it('R37 round-trips for the owner that got it and hides the sequence number', () => {
    const cursor = codec.encode(4711, 'i|alice|t');
    expect(codec.decode(cursor, 'i|alice|t')).toBe(4711);
    expect(Buffer.from(cursor, 'base64url').toString('latin1')).not.toContain('4711');
    expect(codec.encode(4711, 'i|alice|t')).not.toBe(cursor);
  });

  it('R39 a borrowed, altered, truncated or foreign-key cursor is -32602 "Invalid cursor"', () => {
    const cursor = codec.encode(12, 'i|alice|t');
    const flipped = `${cursor.slice(0, 5)}${cursor[5] === 'A' ? 'B' : 'A'}${cursor.slice(6)}`;
    for (const [candidate, owner] of [
      [cursor, 'i|bob|t'],
      [flipped, 'i|alice|t'],
      [cursor.slice(0, 20), 'i|alice|t'],
      ['not a cursor!', 'i|alice|t'],
      [new CursorCodec(randomBytes(32)).encode(12, 'i|alice|t'), 'i|alice|t'],
    ] as const) {
      expect(() => codec.decode(candidate, owner)).toThrow(expect.objectContaining({ code: -32602, message: 'Invalid cursor' }));
    }
  });
});
