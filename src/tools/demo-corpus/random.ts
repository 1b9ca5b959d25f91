/**
 * Seeded randomness for the demo corpus: the same seed gives byte-identical files on every machine.
 */

/** A deterministic source of pseudo-random values (mulberry32: tiny, fast, good enough for test data). */
export class Random {
  private state: number;

  /** @param seed - any 32-bit integer. */
  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** An element chosen with the given weights (`[item, weight]` pairs, weights > 0). */
  weighted<T>(items: readonly (readonly [T, number])[]): T {
    let total = 0;
    for (const [, weight] of items) total += weight;
    let r = this.next() * total;
    for (const [item, weight] of items) {
      r -= weight;
      if (r < 0) return item;
    }
    return (items[items.length - 1] as readonly [T, number])[0];
  }

  /** `length` lower-case hexadecimal digits. */
  hex(length: number): string {
    let s = '';
    while (s.length < length)
      s += Math.floor(this.next() * 4_294_967_296)
        .toString(16)
        .padStart(8, '0');
    return s.slice(0, length);
  }

  /** A private-range IPv4 address or, with `external`, a documentation-range one. */
  ip(external = false): string {
    return external
      ? `${this.pick(['198.51.100', '203.0.113', '192.0.2'])}.${this.int(1, 254)}`
      : `10.${this.int(0, 3)}.${this.int(0, 255)}.${this.int(1, 254)}`;
  }
}

/** A 32-bit seed derived from a base seed and an index, so that each file has its own independent stream. */
export function deriveSeed(seed: number, index: number): number {
  let h = (seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}
