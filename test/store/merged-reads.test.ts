/**
 * Issue 25: `MergedReads` (store/postgres/merged-reads.ts) — reads issued in one turn of the event loop share one
 * statement; each gets its own answer, and a failure stays with the read it belongs to.
 */
import { describe, expect, it } from 'vitest';

import { MergedReads } from '../../src/store/postgres/merged-reads.js';

class Outage extends Error {}

/** Items: a negative one matches nothing; `bad` fails its statement (and alone, itself); `undecodable` fails its row. */
function recording(options: { bad?: number; undecodable?: number; outage?: boolean } = {}) {
  const calls: Array<{ kind: 'one' | 'many'; items: number[] }> = [];
  const reads = new MergedReads<number, string>(
    async (item) => {
      calls.push({ kind: 'one', items: [item] });
      if (options.outage) throw new Outage('down');
      if (item === options.bad || item === options.undecodable) throw new Error(`no ${item}`);
      return item < 0 ? undefined : `a${item}`;
    },
    async (items) => {
      calls.push({ kind: 'many', items: [...items] });
      if (options.outage) throw new Outage('down');
      if (options.bad !== undefined && items.includes(options.bad)) throw new Error(`statement failed on ${options.bad}`);
      return items.map((item) =>
        item === options.undecodable ? { ok: false, error: new Error(`row ${item}`) } : { ok: true, value: item < 0 ? undefined : `a${item}` },
      );
    },
    3,
    (error) => !(error instanceof Outage),
  );
  return { calls, reads };
}

const statuses = (settled: Array<PromiseSettledResult<unknown>>) => settled.map((s) => (s.status === 'fulfilled' ? s.value : 'rejected'));

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

  it('a merged statement that fails is read again one at a time: only the read that fails alone fails', async () => {
    const { calls, reads } = recording({ bad: 5 });
    expect(statuses(await Promise.allSettled([1, 2, 3, 4, 5, 6].map((i) => reads.read(i))))).toEqual(['a1', 'a2', 'a3', 'a4', 'rejected', 'a6']);
    expect(calls.map((c) => c.kind)).toEqual(['many', 'many', 'one', 'one', 'one']);
  });

  it('a row that cannot be decoded fails its own read only, without a second statement', async () => {
    const { calls, reads } = recording({ undecodable: 2 });
    expect(statuses(await Promise.allSettled([1, 2, 3].map((i) => reads.read(i))))).toEqual(['a1', 'rejected', 'a3']);
    expect(calls.map((c) => c.kind)).toEqual(['many']);
  });

  it('a statement failing for a reason not read alone (the database unreachable) fails all its reads, nothing sent again', async () => {
    const { calls, reads } = recording({ outage: true });
    expect(statuses(await Promise.allSettled([1, 2, 3].map((i) => reads.read(i))))).toEqual(['rejected', 'rejected', 'rejected']);
    expect(calls.map((c) => c.kind)).toEqual(['many']);
  });
});
