/** A source of time in epoch milliseconds; tests substitute a fake one (see `mcp-tasks/testing`). */
export interface Clock {
  now(): number;
}

/** Wall-clock time. */
export const systemClock: Clock = { now: () => Date.now() };
