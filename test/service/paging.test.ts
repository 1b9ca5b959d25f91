import { randomBytes } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { CursorCodec } from '../../src/service/paging.js';

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

  it('R39 another spelling of the same bytes (spare bits of the last base64url character set) is refused too', () => {
    // 12 + 4 + 16 bytes = 32 bytes = 43 characters: the last one carries 2 bits of data and 4 spare bits.
    const cursor = codec.encode(1234, 'i|alice|t');
    const last = cursor.at(-1) as string;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const sameBytes = alphabet
      .split('')
      .filter((char) => char !== last && Buffer.from(`${cursor.slice(0, -1)}${char}`, 'base64url').equals(Buffer.from(cursor, 'base64url')));
    expect(sameBytes.length).toBeGreaterThan(0);
    for (const char of sameBytes)
      expect(() => codec.decode(`${cursor.slice(0, -1)}${char}`, 'i|alice|t')).toThrow(expect.objectContaining({ message: 'Invalid cursor' }));
    expect(codec.decode(cursor, 'i|alice|t')).toBe(1234);
  });
});
