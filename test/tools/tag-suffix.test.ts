/**
 * The component tag of a log header without its suffix (`sshd[42]:` → `sshd`): the linear `withoutTagSuffix` gives
 * what the pattern it replaces gave, on every string of brackets, colons and letters (fast-check), and on the
 * documented examples. The pattern was quadratic on a tag of many `[` and no `]` (CI, stop 40: a 100 kB line took
 * 0.8 s); the timing is checked by the `tag of open brackets` family in pathological-lines.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { withoutTagSuffix } from '../../src/tools/analyze-logs/line.js';

const PATTERN = /(?:\[[^\]]*\])?:?\]?$/;

describe('withoutTagSuffix', () => {
  it('the documented examples', () => {
    expect(withoutTagSuffix('sshd[42]:')).toBe('sshd');
    expect(withoutTagSuffix('crond(pam_unix)[2915]:')).toBe('crond(pam_unix)');
    expect(withoutTagSuffix('main.go:10]')).toBe('main.go:10');
    expect(withoutTagSuffix('a[b[c]')).toBe('a');
    expect(withoutTagSuffix('kernel')).toBe('kernel');
    expect(withoutTagSuffix('')).toBe('');
  });

  it('is what the old pattern gave, on any string of [ ] : and letters (fast-check, 2,000 strings)', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('[', ']', ':', 'a', '0', '('), maxLength: 14 }), (tag) => {
        expect(withoutTagSuffix(tag)).toBe(tag.replace(PATTERN, ''));
      }),
      { numRuns: 2_000 },
    );
  });
});
