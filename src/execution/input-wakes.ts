import type { InputWaits } from './task-elicitor.js';

/**
 * How long a run waiting for answers in place sleeps without news before it reads its input requests again (ms):
 * the feed wakes it at once in the usual case; this covers an event the worker's feed missed (a reconnect).
 */
export const INPUT_WAKE_FALLBACK_MS = 2000;

/**
 * The runs of one worker that wait for answers in place (`elicits: 'in-place'`), by task id: the worker tells it of
 * every `input` or `status` event of a task (its own commits and other processes', through the feed), and each run
 * waiting on that task re-reads its answers.
 */
export class InputWakes implements InputWaits {
  private readonly waiters = new Map<string, Set<() => void>>();
  /**
   * Runs here that wait for answers now, counted by task: two runs of one task can wait at once for a moment (a run
   * whose task was handed back, and the run that started again from its answers), and the old one's end must not
   * clear the new one's mark.
   */
  private readonly waitingRuns = new Map<string, number>();

  constructor(private readonly fallbackMs = INPUT_WAKE_FALLBACK_MS) {}

  /** See {@link InputWaits.waiting}. */
  readonly waiting = (taskId: string, on: boolean): void => {
    const count = (this.waitingRuns.get(taskId) ?? 0) + (on ? 1 : -1);
    if (count > 0) this.waitingRuns.set(taskId, count);
    else this.waitingRuns.delete(taskId);
  };

  /** Whether the run of `taskId` waits for answers now. */
  isWaiting(taskId: string): boolean {
    return this.waitingRuns.has(taskId);
  }

  /** See {@link InputWaits.wake}. */
  readonly wake = (taskId: string, signal: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const set = this.waiters.get(taskId) ?? new Set<() => void>();
      const leave = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', aborted);
        set.delete(woke);
        if (set.size === 0 && this.waiters.get(taskId) === set) this.waiters.delete(taskId);
      };
      const woke = (): void => {
        leave();
        resolve();
      };
      const aborted = (): void => {
        leave();
        reject(signal.reason);
      };
      const timer = setTimeout(woke, this.fallbackMs);
      timer.unref();
      signal.addEventListener('abort', aborted, { once: true });
      set.add(woke);
      this.waiters.set(taskId, set);
    });

  /** Wake every run waiting on `taskId` (cheap when none is). */
  notify(taskId: string): void {
    const set = this.waiters.get(taskId);
    if (!set) return;
    for (const wake of [...set]) wake();
  }
}
