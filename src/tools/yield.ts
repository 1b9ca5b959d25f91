/**
 * Cooperative scheduling for long scans that run on the server's event loop: the tools check their abort
 * signal and give other work (requests, polls, cancellations) a turn at least every {@link CHECK_INTERVAL_LINES}.
 */

/** Lines processed at most between two abort checks and event-loop yields. */
export const CHECK_INTERVAL_LINES = 10_000;

/** Resolves on the next turn of the event loop, after pending I/O callbacks have run. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
