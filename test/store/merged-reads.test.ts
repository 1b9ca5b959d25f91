/**
 * Issue 25: `MergedReads` (store/postgres/merged-reads.ts) — reads issued in one turn of the event loop share one
 * statement; each gets its own answer, a failed statement fails only its own reads.
 */
import { describe, expect, it } from 'vitest';

import { MergedReads } from '../../src/store/postgres/merged-reads.js';

function recording(failOn?: number) {
  const calls: Array<{ kind: 'one' | 'many'; items: number[] }> = [];
  const reads = new MergedReads<number, string>(
    async (item) => {
      calls.push({ kind: 'one', items: [item] });
      return item === failOn ? Promise.reject(new Error(`no ${item}`)) : `a${item}`;
    },
    async (items) => {
      calls.push({ kind: 'many', items: [...items] });
      if (failOn !== undefined && items.includes(failOn)) throw new Error(`no ${failOn}`);
      return items.map((item) => (item < 0 ? undefined : `a${item}`));
    },
    3,
  );
  return { calls, reads };
}

describe('MergedReads (issue 25)', () => {
  it('reads of one turn go as statements of at most maxItems, each answered in item order; a lone read goes alone', async () => {
    const { calls, reads } = recording();
    expect(await Promise.all([1, 2, -3, 4, 5, 6, 7].map((i) => reads.read(i)))).toEqual(['a1', 'a2', undefined, 'a4', 'a5', 'a6', 'a7']);
    expect(calls).toEqual([
      { kind: 'many', items: [1, 2, -3] },
      { kind: 'many', items: [4, 5, 6] },
      { kind: 'one', items: [7] },
    ]);
    calls.length = 0;
    // Control: reads of separate turns are never merged.
    expect(await reads.read(8)).toBe('a8');
    expect(await reads.read(9)).toBe('a9');
    expect(calls).toEqual([
      { kind: 'one', items: [8] },
      { kind: 'one', items: [9] },
    ]);
  });

  it('a statement that fails rejects its own reads only', async () => {
    const { reads } = recording(5);
    const settled = await Promise.allSettled([1, 2, 3, 4, 5, 6].map((i) => reads.read(i)));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'rejected', 'rejected']);
  });
});
