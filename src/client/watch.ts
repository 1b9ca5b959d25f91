import type { TaskSnapshot, WaitOptions } from './types.js';

/**
 * Turn a wait (which reports snapshots through `onUpdate`) into an async generator of those snapshots. Returning
 * from the consumer's loop aborts the wait; the wait's error is thrown from the generator after the snapshots
 * before it.
 */
export async function* watchSnapshots(wait: (options: WaitOptions) => Promise<TaskSnapshot>, options: WaitOptions): AsyncGenerator<TaskSnapshot> {
  const controller = new AbortController();
  const queue: TaskSnapshot[] = [];
  let wake: (() => void) | undefined;
  let outcome: { error: unknown } | { done: true } | undefined;
  const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
  void wait({
    ...options,
    signal,
    onUpdate: (snapshot) => {
      options.onUpdate?.(snapshot);
      queue.push(snapshot);
      wake?.();
    },
  })
    .then(
      () => (outcome = { done: true }),
      (error: unknown) => (outcome = { error }),
    )
    .finally(() => wake?.());
  try {
    for (;;) {
      const next = queue.shift();
      if (next) {
        yield next;
        continue;
      }
      if (outcome) {
        if ('error' in outcome) throw outcome.error;
        return;
      }
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    controller.abort();
  }
}
