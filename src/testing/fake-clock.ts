import type { Clock } from '../core/clock.js';

/**
 * A {@link Clock} that moves only when told to, so time-dependent behaviour (TTL expiry, lease lapse, poll
 * intervals) is tested without sleeping. Times are epoch milliseconds.
 */
export class FakeClock implements Clock {
  private current: number;

  /** @param startMs initial time in epoch ms (default 0). @throws {RangeError} when not a finite number. */
  constructor(startMs = 0) {
    this.current = FakeClock.check(startMs, 'startMs');
  }

  /** The current fake time, epoch ms. */
  now(): number {
    return this.current;
  }

  /**
   * Move forward by `ms` milliseconds.
   * @returns the new time, epoch ms.
   * @throws {RangeError} when `ms` is negative or not finite (time never runs backwards by accident; use `set`).
   */
  advance(ms: number): number {
    if (FakeClock.check(ms, 'ms') < 0) throw new RangeError(`FakeClock.advance: ms must be >= 0, got ${ms}`);
    this.current += ms;
    return this.current;
  }

  /** Jump to `ms` (epoch ms), forwards or backwards. @throws {RangeError} when not finite. */
  set(ms: number): void {
    this.current = FakeClock.check(ms, 'ms');
  }

  private static check(value: number, name: string): number {
    if (!Number.isFinite(value)) throw new RangeError(`FakeClock: ${name} must be a finite number, got ${value}`);
    return value;
  }
}
