/**
 * Polling protection (2025-11-25 R21/R52, SEP-2663 E18: servers MAY rate-limit clients that poll faster than the
 * hint). Only repeated too-fast polls of the same non-terminal task by the same owner are throttled — never the
 * first poll, never one that finds the task terminal — by raising the poll interval in the answer and delaying the
 * answer until the interval has passed. No error is ever returned for polling too fast.
 *
 * The hint is adaptive (see `poll-hint.ts`: it grows with the task's age), so a poll is judged against the hint
 * the previous answer gave, not against the larger one this answer will give: a client that honours each hint is
 * never judged too fast.
 */

/** A poll counts as too fast when it comes sooner than this share of the advertised interval after the previous. */
const TOO_FAST_SHARE = 0.5;
/** Too-fast polls in a row before the throttle acts (the first quick re-check after a create is normal). */
const STRIKES_BEFORE_THROTTLE = 2;
/** The advertised interval grows at most this many doublings for a persistent fast poller. */
const MAX_DOUBLINGS = 4;
/** Tracked (owner, task) pairs; the least recently polled is forgotten first. */
const MAX_TRACKED = 100_000;

/** What to do with one poll. */
export interface PollAdvice {
  /** The poll interval to put in this answer (ms). */
  pollIntervalMs: number;
  /** How long to hold the answer back (ms); 0 = answer now. */
  delayMs: number;
}

interface PollState {
  lastAt: number;
  strikes: number;
  /** The hint (before any raise) the previous answer was based on, ms. */
  hintMs: number;
  /** Polls of this task by this owner so far. */
  count: number;
}

/** What a {@link PollThrottle} reports (metrics); must not throw. */
export interface PollObserver {
  /** A too-fast poll is held back for `delayMs`. */
  heldBack?(delayMs: number): void;
  /** A task was found terminal after `polls` polls (by one owner, since this process tracks it). */
  polledToEnd?(polls: number): void;
}

/** Per-process memory of recent polls, bounded by {@link MAX_TRACKED}. */
export class PollThrottle {
  private readonly polls = new Map<string, PollState>();

  constructor(
    private readonly maxDelayMs: number,
    private readonly observer: PollObserver = {},
  ) {}

  /**
   * Record a `tasks/get` and advise on it. A poll is too fast when it comes sooner than half the hint of the
   * previous answer; it is then held back until that hint has passed, and answered with this poll's hint doubled
   * once per strike (at most {@link MAX_DOUBLINGS} times; the caller clamps it to what its generation allows).
   * @param intervalMs - the task's poll hint for this answer (ms)
   * @param terminal - whether the poll found the task terminal (never throttled; tracking ends)
   * @param now - epoch ms
   */
  observe(ownerKey: string, taskId: string, intervalMs: number, terminal: boolean, now: number): PollAdvice {
    const key = `${ownerKey}\n${taskId}`;
    const previous = this.polls.get(key);
    if (terminal) {
      if (previous) {
        this.polls.delete(key);
        this.observer.polledToEnd?.(previous.count + 1);
      }
      return { pollIntervalMs: intervalMs, delayMs: 0 };
    }
    const elapsed = previous ? now - previous.lastAt : Number.POSITIVE_INFINITY;
    const toldMs = previous?.hintMs ?? intervalMs;
    const strikes = elapsed < toldMs * TOO_FAST_SHARE ? (previous?.strikes ?? 0) + 1 : 0;
    if (previous) this.polls.delete(key); // re-insert: Map order is recency order
    this.polls.set(key, { lastAt: now, strikes, hintMs: intervalMs, count: (previous?.count ?? 0) + 1 });
    if (this.polls.size > MAX_TRACKED) this.polls.delete(this.polls.keys().next().value as string);
    if (strikes < STRIKES_BEFORE_THROTTLE) return { pollIntervalMs: intervalMs, delayMs: 0 };
    const doublings = Math.min(strikes - STRIKES_BEFORE_THROTTLE + 1, MAX_DOUBLINGS);
    const delayMs = Math.min(Math.max(0, toldMs - elapsed), this.maxDelayMs);
    this.observer.heldBack?.(delayMs);
    return { pollIntervalMs: intervalMs * 2 ** doublings, delayMs };
  }

  /** Number of tracked pairs (for tests). */
  get size(): number {
    return this.polls.size;
  }
}

/** Resolve after `ms`, or at once when `signal` aborts (a client that went away needs no answer). */
export function holdBack(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
