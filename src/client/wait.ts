import { resolveBudgets } from './budgets.js';
import { isAbort } from './error-mapping.js';
import { TaskOutcomeUnknownError, TasksConnectionError, TaskTimeoutError } from './errors.js';
import { withRequestDeadline } from './request-deadline.js';
import type { TaskSnapshot, TaskStatus, WaitOptions } from './types.js';

/** Poll interval when the server gives no hint (ms). */
export const DEFAULT_POLL_INTERVAL_MS = 1000;
/** Floor under any server hint, so a hint of 0 cannot turn polling into a busy loop (ms). */
const MIN_POLL_INTERVAL_MS = 50;
/** Each delay is the interval times a uniform factor in [1 − J, 1 + J], so many clients do not poll in lockstep. */
export const POLL_JITTER = 0.2;
/** Ceiling of the exponential backoff after transient errors (ms). */
const MAX_BACKOFF_MS = 30_000;

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
  const candidates = [options.deadline, options.timeoutMs === undefined ? undefined : now + options.timeoutMs].filter(
    (value): value is number => value !== undefined,
  );
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
  /** The last status known from elsewhere (the journal), reported when the outcome becomes unknown before any poll succeeded. */
  known?: TaskStatus;
  /** No poll before this time (epoch ms): the server's interval, remembered across processes by the journal. */
  notBefore?: number;
}

/**
 * Poll until the task is terminal, at the server's interval (`pollIntervalMs`, default 1 s) with ±20 % jitter.
 * Transient failures (a retryable {@link TasksConnectionError}) back off exponentially from the interval up to
 * 30 s, for as long as the reconciliation budget allows; `onConnection` hears of each outage and its end. Every
 * request counts against the status budget. No request is sent at or after the deadline, and nothing (progress,
 * pushed notifications) moves the deadline.
 * @throws TaskTimeoutError at the deadline or when a status budget is used up (the task keeps running).
 * @throws TaskOutcomeUnknownError when the server stayed unreachable for the whole reconciliation budget.
 * @throws the signal's reason when aborted; any non-transient error of `poll` (e.g. TaskNotFoundError) or of the
 *   hooks as is.
 */
export async function pollUntilTerminal(
  taskId: string,
  poll: PollOnce,
  options: WaitOptions & PollHooks & { requestTimeoutMs: number },
): Promise<TaskSnapshot> {
  const deadline = resolveDeadline(options);
  const { signal } = options;
  const budgets = resolveBudgets(options.budgets);
  const startedAt = Date.now();
  const statusUntil = budgets.statusMs === undefined ? undefined : startedAt + budgets.statusMs;
  const waker = options.waker ?? new Waker();
  let last = options.last;
  let outage: { since: number; failures: number } | undefined;
  let reads = 0;
  if (options.notBefore !== undefined && options.notBefore > Date.now()) {
    const until = deadline === undefined ? options.notBefore : Math.min(deadline, options.notBefore);
    await waker.sleep(until - Date.now(), signal);
  }
  for (;;) {
    if (signal?.aborted) throw abortReason(signal);
    const now = Date.now();
    const remaining = deadline === undefined ? options.requestTimeoutMs : deadline - now;
    if (remaining <= 0) throw new TaskTimeoutError(taskId, deadline as number, last);
    if (reads >= budgets.statusReads) throw new TaskTimeoutError(taskId, now, last, 'statusReads');
    if (statusUntil !== undefined && now >= statusUntil) throw new TaskTimeoutError(taskId, now, last, 'statusMs');
    const interval = Math.max(MIN_POLL_INTERVAL_MS, last?.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS);
    let delay: number;
    try {
      reads += 1;
      // The deadline goes down to the fetch: the check above may be several asynchronous steps before the send.
      const snapshot = await withRequestDeadline(deadline, () =>
        poll({ ...(signal ? { signal } : {}), timeoutMs: Math.min(options.requestTimeoutMs, remaining) }),
      );
      if (outage) options.onConnection?.({ state: 'reachable', taskId, downMs: Date.now() - outage.since });
      outage = undefined;
      last = snapshot;
      options.onUpdate?.(snapshot);
      if (isTerminalStatus(snapshot.status)) return snapshot;
      const again = (await options.react?.(snapshot)) ?? false;
      delay = again ? 0 : jittered(Math.max(MIN_POLL_INTERVAL_MS, snapshot.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS));
    } catch (error) {
      if (signal?.aborted) throw abortReason(signal);
      const transient = error instanceof TasksConnectionError && error.retryable;
      // A hook stopped at the deadline (its signal includes it) is the deadline, not a failure of its own.
      if (deadline !== undefined && Date.now() >= deadline && (transient || isAbort(error))) throw new TaskTimeoutError(taskId, deadline, last);
      if (!transient) throw error;
      outage ??= { since: Date.now(), failures: 0 };
      outage.failures += 1;
      if (Date.now() - outage.since >= budgets.reconcileMs)
        throw new TaskOutcomeUnknownError(taskId, 'unreachable', last?.status ?? options.known, last, { cause: error });
      delay = Math.min(
        jittered(Math.min(MAX_BACKOFF_MS, interval * 2 ** (outage.failures - 1))),
        Math.max(MIN_POLL_INTERVAL_MS, outage.since + budgets.reconcileMs - Date.now()),
      );
      options.onConnection?.({ state: 'unreachable', taskId, error, since: outage.since, retryInMs: delay });
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

/**
 * Retry a read (`tasks/result`, `tasks/cancel`) through transient failures with the same backoff as polling, until
 * `budgetMs` has passed since the first failure; `onConnection` hears of the outage.
 * @throws the last transient error once the budget is used up; any other error at once; the signal's reason.
 */
export async function retryTransient<T>(
  taskId: string,
  read: () => Promise<T>,
  options: { budgetMs: number; signal?: AbortSignal; onConnection?: WaitOptions['onConnection']; intervalMs?: number },
): Promise<T> {
  let outage: { since: number; failures: number } | undefined;
  for (;;) {
    try {
      const value = await read();
      if (outage) options.onConnection?.({ state: 'reachable', taskId, downMs: Date.now() - outage.since });
      return value;
    } catch (error) {
      if (options.signal?.aborted) throw abortReason(options.signal);
      if (!(error instanceof TasksConnectionError && error.retryable)) throw error;
      outage ??= { since: Date.now(), failures: 0 };
      outage.failures += 1;
      const left = outage.since + options.budgetMs - Date.now();
      if (left <= 0) throw error;
      const delay = Math.min(left, jittered(Math.min(MAX_BACKOFF_MS, (options.intervalMs ?? DEFAULT_POLL_INTERVAL_MS) * 2 ** (outage.failures - 1))));
      options.onConnection?.({ state: 'unreachable', taskId, error, since: outage.since, retryInMs: delay });
      await new Waker().sleep(delay, options.signal);
    }
  }
}
