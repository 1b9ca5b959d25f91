/**
 * Resolve once `promise` has settled (either way) or `ms` have passed, whichever comes first; the timer is cleared
 * when the promise wins, and a rejection is observed here (never an unhandled rejection). For bounded waits on work
 * that must not hold a caller past a deadline: a shutdown, a read waiting for a commit in flight.
 */
export function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    const done = (): void => {
      clearTimeout(timer);
      resolve();
    };
    promise.then(done, done);
  });
}
