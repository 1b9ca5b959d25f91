/**
 * Cooperative scheduling for long scans that run on the server's event loop: the tools check their abort
 * signal and give other work (requests, polls, cancellations) a turn at least every {@link CHECK_INTERVAL_LINES}
 * lines and at least every {@link MAX_SLICE_MS} of elapsed time, whichever comes first. The line count alone is not
 * enough: how long a line takes depends on the input, and a few thousand slow lines would hold every other
 * request of the server for seconds.
 */

/** Lines processed at most between two abort checks and event-loop yields. */
export const CHECK_INTERVAL_LINES = 10_000;
/** Milliseconds a scan keeps the event loop at most (plus one {@link CLOCK_CHECK_LINES} batch) before yielding. */
export const MAX_SLICE_MS = 20;
/**
 * Lines between two clock reads. A read costs about 0.1 µs, a few percent of a short line, so it is not done for
 * every line; and with the work per line bounded (see the template miner) a batch this small stays far below
 * {@link MAX_SLICE_MS}.
 */
export const CLOCK_CHECK_LINES = 16;
/**
 * Characters between two clock reads, whatever the number of lines: the work per line is linear in its length
 * (the per-line patterns are linear, checked by a property test), so long lines read the clock sooner.
 */
export const CLOCK_CHECK_CHARACTERS = 32 * 1024;

/** Resolves on the next turn of the event loop, after pending I/O callbacks have run. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Decides when a loop over lines yields; see the module comment. Call {@link Pacer.due} once per line (cheap and
 * synchronous) and `await` {@link Pacer.pause} only when it says so, so that most lines cost no promise.
 */
export class Pacer {
  private linesSinceYield = 0;
  private charactersSinceClock = 0;
  private sliceStart = performance.now();

  constructor(private readonly signal: AbortSignal) {}

  /**
   * Counts one line; whether the slice is used up and the caller should `await pause()` now.
   *
   * @param characters - the line's length, which the time it takes is proportional to.
   */
  due(characters = 0): boolean {
    const lines = ++this.linesSinceYield;
    if (lines >= CHECK_INTERVAL_LINES) return true;
    this.charactersSinceClock += characters;
    if (lines % CLOCK_CHECK_LINES !== 0 && this.charactersSinceClock < CLOCK_CHECK_CHARACTERS) return false;
    this.charactersSinceClock = 0;
    return performance.now() - this.sliceStart >= MAX_SLICE_MS;
  }

  /**
   * Checks the abort signal, then gives the event loop a turn and starts a new slice.
   *
   * @throws the signal's reason when aborted.
   */
  async pause(): Promise<void> {
    this.signal.throwIfAborted();
    await yieldToEventLoop();
    this.linesSinceYield = 0;
    this.charactersSinceClock = 0;
    this.sliceStart = performance.now();
  }
}
