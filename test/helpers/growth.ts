/**
 * How the time of a function grows with its input, measured robustly enough for a shared, noisy machine: each
 * size is timed as the fastest of several runs (the run least disturbed by other processes), and a suspicious
 * ratio is measured again with more runs before it counts. Used with wide margins only (a linear function shows a
 * ratio near the size ratio, a quadratic one near its square), never with a tight threshold.
 */

/** Fastest of at least `minRuns` runs of `fn`, repeated until they took `minTotalMs` (at most 200 runs). */
export function fastestMs(fn: () => void, minRuns = 3, minTotalMs = 10): number {
  let best = Number.POSITIVE_INFINITY;
  let total = 0;
  for (let runs = 0; runs < 200 && (runs < minRuns || total < minTotalMs); runs++) {
    const start = performance.now();
    fn();
    const ms = performance.now() - start;
    total += ms;
    best = Math.min(best, ms);
  }
  return best;
}

/** Time ratio of `run(large)` to `run(small)` (inputs built beforehand, outside the timing). */
export interface Growth {
  smallMs: number;
  largeMs: number;
  ratio: number;
}

/**
 * Measures the growth from `small` to `large` input; while the ratio exceeds `suspicious`, measures again (up to
 * three more times) with more runs and keeps the lowest ratio, so that a pause of the machine during one measurement cannot fail a
 * test on its own.
 */
export function growth<T>(run: (input: T) => void, small: T, large: T, suspicious: number): Growth {
  const measure = (minRuns: number): Growth => {
    // A few warm-up calls compile the patterns and the code on both sizes before anything is timed.
    run(small);
    run(large);
    const smallMs = fastestMs(() => run(small), minRuns);
    const largeMs = fastestMs(() => run(large), minRuns);
    return { smallMs, largeMs, ratio: largeMs / Math.max(smallMs, 0.001) };
  };
  // A linear function measured during a pause of the machine can look suspicious once or twice; a quadratic one
  // looks so every time (its ratio is about the square of the size ratio), so a few more measurements, each with
  // more runs, keep their lowest ratio without hiding a real one.
  let best = measure(3);
  for (const minRuns of [10, 20, 40]) {
    if (best.ratio <= suspicious) break;
    const again = measure(minRuns);
    if (again.ratio < best.ratio) best = again;
  }
  return best;
}
