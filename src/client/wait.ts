import { isAbort } from './error-mapping.js';
import { TasksConnectionError, TaskTimeoutError } from './errors.js';
import type { TaskSnapshot, WaitOptions } from './types.js';

/** Poll interval when the server gives no hint (ms). */
export const DEFAULT_POLL_INTERVAL_MS = 1000;
/** Floor under any server hint, so a hint of 0 cannot turn polling into a busy loop (ms). */
const MIN_POLL_INTERVAL_MS = 50;
/** Each delay is the interval times a uniform factor in [1 − J, 1 + J], so many clients do not poll in lockstep. */
export const POLL_JITTER = 0.2;
/** Ceiling of the exponential backoff after transient errors (ms). */
const MAX_BACKOFF_MS = 30_000;
/** Consecutive transient failures tolerated before the last one is thrown (≈ 1 min of backoff at 1 s polls). */
const MAX_TRANSIENT_FAILURES = 6;

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** Whether a status is final (`completed`, `failed`, `cancelled`). */
export function isTerminalStatus(status: string): boolean {
  return TERMINAL.has(status);
}

/** `interval` scaled by a random factor in [1 − POLL_JITTER, 1 + POLL_JITTER]. */
export function jittered(intervalMs: number, random: () => number = Math.random): number {
  return Math.round(intervalMs * (1 - POLL_JITTER + 2 * POLL_JITTER * random()));
}

/** The absolute deadline (epoch ms) from `deadline` and/or `timeoutMs`, the earlier one; `undefined` = none. */
export function resolveDeadline(options: Pick<WaitOptions, 'deadline' | 'timeoutMs'>, now = Date.now()): number | undefined {
  const candidates = [options.deadline, options.timeoutMs === undefined ? undefined : now + options.timeoutMs].filter((value): value is number => value !== undefined);
  return candidates.length === 0 ? undefined : Math.min(...candidates);
}

/** The reason an aborted signal carries, as an Error (a non-Error reason becomes an `AbortError`). */
export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException('The operation was aborted', 'AbortError');
}

/**
 * Ends sleeps of a wait early, e.g. when an answer was sent or a v1 `tasks/result` returned, so the next poll
 * happens at once instead of after the interval.
 */
export class Waker {
  private readonly sleepers = new Set<() => void>();
  private pending = false;

  /** Wake the current sleep, or the next one if none is running. */
  wake(): void {
    if (this.sleepers.size === 0) this.pending = true;
    for (const wake of this.sleepers) wake();
  }

  /** Sleep `ms`, or less when woken; resolves `true` when woken. Rejects with the signal's reason when aborted. */
  sleep(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      if (this.pending) {
        this.pending = false;
        return resolve(true);
      }
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.sleepers.delete(done);
      };
      const onAbort = (): void => {
        done();
        reject(abortReason(signal as AbortSignal));
      };
      const timer = setTimeout(() => {
        done();
        resolve(false);
      }, ms);
      this.sleepers.add(() => {
        done();
        resolve(true);
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** One poll: the budget caps the request so it cannot outlive the deadline. */
export type PollOnce = (budget: { signal?: AbortSignal; timeoutMs: number }) => Promise<TaskSnapshot>;

/** What a wait does with each non-terminal snapshot besides reporting it (answering input). */
export interface PollHooks {
  /**
   * Runs after `onUpdate` for every non-terminal snapshot; resolves `true` to look again at once. A retryable
   * {@link TasksConnectionError} counts as a transient failure (backoff, then the same snapshot is reacted to
   * again); any other error ends the wait.
   */
  react?: (snapshot: TaskSnapshot) => Promise<boolean>;
  /** Lets others end a sleep early. */
  waker?: Waker;
  /** The newest snapshot already seen (e.g. pushed before polling took over), for the first interval. */
  last?: TaskSnapshot;
}

/**
 * Poll until the task is terminal, at the server's interval (`pollIntervalMs`, default 1 s) with ±20 % jitter.
 * Transient failures (a retryable {@link TasksConnectionError}) back off exponentially from the interval up to
 * 30 s; the 7th in a row is thrown. No request is sent at or after the deadline.
 * @throws TaskTimeoutError at the deadline (the task keeps running).
 * @throws the signal's reason when aborted; any non-transient error of `poll` (e.g. TaskNotFoundError) or of the
 *   hooks as is.
 */
export async function pollUntilTerminal(taskId: string, poll: PollOnce, options: WaitOptions & PollHooks & { requestTimeoutMs: number }): Promise<TaskSnapshot> {
  const deadline = resolveDeadline(options);
  const { signal } = options;
  const waker = options.waker ?? new Waker();
  let last = options.last;
  let failures = 0;
  for (;;) {
    if (signal?.aborted) throw abortReason(signal);
    const remaining = deadline === undefined ? options.requestTimeoutMs : deadline - Date.now();
    if (remaining <= 0) throw new TaskTimeoutError(taskId, deadline as number, last);
    const interval = Math.max(MIN_POLL_INTERVAL_MS, last?.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS);
    let delay: number;
    try {
      const snapshot = await poll({ ...(signal ? { signal } : {}), timeoutMs: Math.min(options.requestTimeoutMs, remaining) });
      last = snapshot;
      options.onUpdate?.(snapshot);
      if (isTerminalStatus(snapshot.status)) return snapshot;
      const again = (await options.react?.(snapshot)) ?? false;
      failures = 0;
      delay = again ? 0 : jittered(Math.max(MIN_POLL_INTERVAL_MS, snapshot.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS));
    } catch (error) {
      if (signal?.aborted) throw abortReason(signal);
      const transient = error instanceof TasksConnectionError && error.retryable;
      // A hook stopped at the deadline (its signal includes it) is the deadline, not a failure of its own.
      if (deadline !== undefined && Date.now() >= deadline && (transient || isAbort(error))) throw new TaskTimeoutError(taskId, deadline, last);
      if (!transient) throw error;
      failures += 1;
      if (failures > MAX_TRANSIENT_FAILURES) throw error;
      delay = jittered(Math.min(MAX_BACKOFF_MS, interval * 2 ** (failures - 1)));
    }
    if (deadline !== undefined && Date.now() + delay >= deadline) {
      // Woken early (an answer went out), look once more; otherwise the deadline has come.
      const woken = await waker.sleep(Math.max(0, deadline - Date.now()), signal);
      if (!woken || Date.now() >= deadline) throw new TaskTimeoutError(taskId, deadline, last);
      continue;
    }
    if (delay > 0) await waker.sleep(delay, signal);
  }
}
