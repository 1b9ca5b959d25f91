import { describe, expect, it } from 'vitest';

import { isTaskIdShape, newTaskId } from '../../src/core/ids.js';

describe('task ids (C-SEC-01, R13/R50, E44)', () => {
  const ids = Array.from({ length: 10_000 }, () => newTaskId());

  it('are unique, 22 base64url characters carrying 16 random bytes each', () => {
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids.slice(0, 1000)) {
      expect(isTaskIdShape(id)).toBe(true);
      expect(Buffer.from(id, 'base64url')).toHaveLength(16);
    }
  });

  it('look random: every one of the 128 bit positions is set in about half of the ids, and neighbours share no prefix', () => {
    const ones = new Array<number>(128).fill(0);
    for (const id of ids) {
      const bytes = Buffer.from(id, 'base64url');
      for (let bit = 0; bit < 128; bit += 1) if ((bytes[bit >> 3] as number) & (0x80 >> (bit & 7))) ones[bit] = (ones[bit] as number) + 1;
    }
    // With 10,000 fair coins the count stays within ±6 standard deviations (±300) except with negligible probability.
    for (const count of ones) expect(Math.abs(count - 5000)).toBeLessThan(300);
    const sharedPrefixes = ids.slice(1).filter((id, index) => id.slice(0, 4) === (ids[index] as string).slice(0, 4)).length;
    expect(sharedPrefixes).toBeLessThan(5);
  });
});
