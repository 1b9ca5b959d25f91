import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { isTaskIdShape, newTaskId, taskIdOf } from '../../src/core/ids.js';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const BASE64URL = `${ALPHANUMERIC}-_`;

/** The 16 bytes an id carries, read independently of `taskIdOf`: first character mod 62, then 21 base64url digits. */
function bytesOf(id: string): Buffer {
  let value = 0n;
  for (let digit = 20; digit >= 0; digit -= 1) value = value * 64n + BigInt(BASE64URL.indexOf(id[digit + 1] as string));
  value = value * 62n + BigInt(ALPHANUMERIC.indexOf(id[0] as string));
  expect(value < 2n ** 128n).toBe(true);
  return Buffer.from(value.toString(16).padStart(32, '0'), 'hex');
}

describe('task ids (C-SEC-01, R13/R50, E44)', () => {
  const ids = Array.from({ length: 10_000 }, () => newTaskId());

  it('are unique, 22 base64url characters carrying 16 random bytes each', () => {
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids.slice(0, 1000)) {
      expect(isTaskIdShape(id)).toBe(true);
      expect(taskIdOf(bytesOf(id))).toBe(id);
    }
  });

  it('look random: every one of the 128 bit positions is set in about half of the ids, and neighbours share no prefix', () => {
    const ones = new Array<number>(128).fill(0);
    for (const id of ids) {
      const bytes = bytesOf(id);
      for (let bit = 0; bit < 128; bit += 1) if ((bytes[bit >> 3] as number) & (0x80 >> (bit & 7))) ones[bit] = (ones[bit] as number) + 1;
    }
    // With 10,000 fair coins the count stays within ±6 standard deviations (±300) except with negligible probability.
    for (const count of ones) expect(Math.abs(count - 5000)).toBeLessThan(300);
    const sharedPrefixes = ids.slice(1).filter((id, index) => id.slice(0, 4) === (ids[index] as string).slice(0, 4)).length;
    expect(sharedPrefixes).toBeLessThan(5);
  });

  it('never begin with "-" (a command line would take the id for an option), and the first character takes each of its 62 values', () => {
    const first = new Map<string, number>();
    for (const id of ids) first.set(id[0] as string, (first.get(id[0] as string) ?? 0) + 1);
    expect([...first.keys()].sort()).toEqual([...ALPHANUMERIC].sort());
    // 10,000 / 62 ≈ 161 each; ±6 standard deviations (±76).
    for (const count of first.values()) expect(Math.abs(count - 10_000 / 62)).toBeLessThan(76);
  });

  it('carry all 128 bits one-to-one: any 16 bytes come back from their id, whose first character is a letter or digit', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), (bytes) => {
        const id = taskIdOf(bytes);
        expect(id).toMatch(/^[A-Za-z0-9][A-Za-z0-9_-]{21}$/);
        expect(bytesOf(id).equals(Buffer.from(bytes))).toBe(true);
      }),
      { numRuns: 2000 },
    );
    for (const edge of [Buffer.alloc(16), Buffer.alloc(16, 0xff)]) expect(bytesOf(taskIdOf(edge)).equals(edge)).toBe(true);
  });

  it('negative control: the plain base64url of bytes whose first six bits are 62 begins with "-"; their id does not', () => {
    const bytes = Buffer.from('f8' + '00'.repeat(15), 'hex');
    expect(bytes.toString('base64url')[0]).toBe('-');
    expect(taskIdOf(bytes)[0]).not.toBe('-');
  });

  it('refuse any other length than 16 bytes', () => {
    expect(() => taskIdOf(new Uint8Array(15))).toThrow(RangeError);
  });
});
