import { randomBytes } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { isBinaryBlock, MAX_ODD_SHARE } from '../../src/tools/binary.js';

describe('isBinaryBlock', () => {
  it('takes a NUL byte anywhere for binary (how git and grep tell), even in otherwise plain text', () => {
    expect(isBinaryBlock(Buffer.from(`${'plain text\n'.repeat(1000)}\0`))).toBe(true);
    expect(isBinaryBlock(Buffer.from('UTF-16 with BOM', 'utf16le'))).toBe(true);
  });

  it('takes random bytes without a NUL for binary', () => {
    const random = Buffer.from(randomBytes(8192).map((byte) => byte || 1));
    expect(random.includes(0)).toBe(false);
    expect(isBinaryBlock(random)).toBe(true);
  });

  it('keeps ASCII, UTF-8, Latin-1, terminal colours and an empty block as text', () => {
    expect(isBinaryBlock(Buffer.alloc(0))).toBe(false);
    expect(isBinaryBlock(Buffer.from('2024-03-01 INFO ok\r\n\tat x\f\b\v'.repeat(100)))).toBe(false);
    expect(isBinaryBlock(Buffer.from('日本語のログ ✓ ünïcödé 🚀\n'.repeat(100)))).toBe(false);
    expect(isBinaryBlock(Buffer.from('Le café est prêt à été\n'.repeat(100), 'latin1'))).toBe(false);
    expect(isBinaryBlock(Buffer.from('\u001b[31mERROR\u001b[0m x\n'.repeat(100)))).toBe(false);
  });

  it('counts a UTF-8 character cut by the end of the block as text', () => {
    const text = Buffer.from('€'.repeat(10));
    expect(isBinaryBlock(text.subarray(0, text.length - 1))).toBe(false);
  });

  it('draws the line at the share of odd bytes: control characters and invalid UTF-8', () => {
    const block = (odd: number, byte: number) => Buffer.concat([Buffer.alloc(odd, byte), Buffer.alloc(1000 - odd, 0x61)]);
    const limit = 1000 * MAX_ODD_SHARE;
    for (const byte of [0x01, 0x7f, 0xff, 0x80, 0xc0]) {
      expect(isBinaryBlock(block(limit, byte)), `0x${byte.toString(16)} × ${limit}`).toBe(false);
      expect(isBinaryBlock(block(limit + 1, byte)), `0x${byte.toString(16)} × ${limit + 1}`).toBe(true);
    }
    // Overlong and surrogate encodings are not valid UTF-8.
    expect(isBinaryBlock(Buffer.from([0xe0, 0x80, 0x80, 0xed, 0xa0, 0x80].flatMap((b) => Array(100).fill(b))))).toBe(true);
  });
});
