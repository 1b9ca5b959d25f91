/**
 * The depth measure of what clients send and tools hand back (core/json-depth.ts): levels of arrays and objects,
 * capped, without recursion — and bounded for values that are not trees (review of stop 46: a walk that pushed
 * every child pushed width × cap entries for a wide cycle, and one without a budget doubled at each level of a
 * diamond-shaped graph).
 */
import { describe, expect, it } from 'vitest';

import { depthUpTo } from '../../src/core/json-depth.js';

/** An array `depth` levels deep, built without recursion. */
function nested(depth: number): unknown {
  let value: unknown = [];
  for (let i = 1; i < depth; i += 1) value = [value];
  return value;
}

describe('depthUpTo', () => {
  it('counts arrays and objects (a scalar is 0, {} is 1) and stops at the cap', () => {
    expect(depthUpTo('x', 5)).toBe(0);
    expect(depthUpTo(null, 5)).toBe(0);
    expect(depthUpTo({}, 5)).toBe(1);
    expect(depthUpTo({ a: [1, { b: [] }] }, 5)).toBe(4);
    expect(depthUpTo([[], [[[]]], {}], 5)).toBe(4);
    expect(depthUpTo(nested(5), 5)).toBe(5);
    expect(depthUpTo(nested(6), 5)).toBe(6);
    expect(depthUpTo(nested(200_000), 32)).toBe(33);
  });

  it('a cycle is deeper than any cap, however wide; a shared reference is not a cycle', () => {
    const self: unknown[] = [];
    for (let i = 0; i < 100_000; i += 1) self.push(self);
    expect(depthUpTo(self, 1_000)).toBe(1_001);
    const inner = { leaf: true };
    expect(depthUpTo({ a: inner, b: [inner, inner] }, 1_000)).toBe(3);
    const loop: Record<string, unknown> = { a: { b: {} } };
    (loop.a as { b: Record<string, unknown> }).b.c = loop;
    expect(depthUpTo(loop, 1_000)).toBe(1_001);
  });

  it('a diamond-shaped graph is measured while its paths fit the budget, and answers too deep past it (JSON.stringify would never finish it)', () => {
    let diamond: unknown = { leaf: true };
    for (let i = 0; i < 10; i += 1) diamond = { a: diamond, b: diamond };
    expect(depthUpTo(diamond, 1_000)).toBe(11);
    expect(depthUpTo(diamond, 1_000, 2_047)).toBe(11);
    expect(depthUpTo(diamond, 1_000, 2_046)).toBe(1_001);
    for (let i = 0; i < 50; i += 1) diamond = { a: diamond, b: diamond };
    expect(depthUpTo(diamond, 1_000, 100_000)).toBe(1_001);
  });
});
