import { TasksConnectionError, TaskTimeoutError } from './errors.js';
import type { TaskSubscription } from './listen.js';
import type { TaskSnapshot, WaitOptions } from './types.js';
import { abortReason, isTerminalStatus, type PollHooks, type PollOnce, pollUntilTerminal, resolveDeadline, Waker } from './wait.js';

/** Where one wait gets its snapshots, and what it does with them. */
export interface FollowPlan {
  poll: PollOnce;
  /** Opens a push subscription for the task (2026-07-28 listen); any failure to open it means polling. */
  subscribe?: (signal: AbortSignal) => Promise<TaskSubscription>;
  /**
   * Answers input for a non-terminal snapshot; `signal` ends with the wait (caller's signal or deadline).
   * Resolves `true` when it sent something, so the task is looked at again at once.
   */
  react?: (snapshot: TaskSnapshot, signal: AbortSignal) => Promise<boolean>;
  /** Lets others (a returning v1 `tasks/result`) end a poll sleep early. */
  waker?: Waker;
  /** What the journal knows (last status, next allowed poll) and hears back (each scheduled poll). */
  hooks?: Pick<PollHooks, 'known' | 'notBefore'>;
}

/** setTimeout's largest delay (≈ 24.8 days); later deadlines are enforced by the poll loop alone. */
const MAX_TIMER_MS = 2_147_483_647;

/** An error raised by `onUpdate`/`react` rather than by the snapshot source. */
class HookFailure {
  constructor(readonly error: unknown) {}
}

/** A non-transient error of the first `tasks/get` (e.g. an unknown task): it ends the wait. */
class PollFailure {
  constructor(readonly error: unknown) {}
}

/**
 * Follow a task until it is terminal: through pushed notifications when `plan.subscribe` opens a subscription
 * that accepts the task (one `tasks/get` first, so the state before the subscription is known), else — and when
 * the stream ends early or fails — by polling (see `pollUntilTerminal`). Every snapshot goes to `onUpdate`, then
 * (when not terminal) to `react`. Pushed snapshots older than one already seen are skipped.
 * @throws TaskTimeoutError at the deadline; the signal's reason when aborted; errors of `poll`, `onUpdate` and
 *   `react` as `pollUntilTerminal` describes.
 */
export async function followUntilTerminal(taskId: string, plan: FollowPlan, options: WaitOptions & { requestTimeoutMs: number }): Promise<TaskSnapshot> {
  const deadline = resolveDeadline(options);
  const stop = new AbortController();
  const timer =
    deadline === undefined
      ? undefined
      : setTimeout(
          () => stop.abort(new DOMException('The wait reached its deadline', 'TimeoutError')),
          Math.min(MAX_TIMER_MS, Math.max(0, deadline - Date.now())),
        );
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  const react = plan.react;
  const hooks = {
    ...(react ? { react: (snapshot: TaskSnapshot) => react(snapshot, signal) } : {}),
    waker: plan.waker ?? new Waker(),
  };
  try {
    let last: TaskSnapshot | undefined;
    if (plan.subscribe) {
      const pushed = await followPushed(taskId, plan.subscribe, plan.poll, { ...options, ...hooks, ...(deadline === undefined ? {} : { deadline }) }, signal);
      if (pushed.terminal) return pushed.terminal;
      last = pushed.last;
      if (deadline !== undefined && Date.now() >= deadline) throw new TaskTimeoutError(taskId, deadline, last);
    }
    return await pollUntilTerminal(taskId, plan.poll, {
      ...options,
      ...plan.hooks,
      ...(deadline === undefined ? {} : { deadline }),
      ...hooks,
      ...(last ? { last } : {}),
    });
  } finally {
    clearTimeout(timer);
  }
}

/** The wait's options with `deadline` resolved once (a relative `timeoutMs` must not move it). */
type PushOptions = WaitOptions & { requestTimeoutMs: number; react?: (snapshot: TaskSnapshot) => Promise<boolean> };

/**
 * The push phase: `{terminal}` when the task ended while subscribed, else `{last}` (the newest snapshot seen) for
 * polling to take over.
 */
async function followPushed(
  taskId: string,
  subscribe: NonNullable<FollowPlan['subscribe']>,
  poll: PollOnce,
  options: PushOptions,
  signal: AbortSignal,
): Promise<{ terminal?: TaskSnapshot; last?: TaskSnapshot }> {
  const deadline = resolveDeadline(options);
  let last: TaskSnapshot | undefined;
  const observe = async (snapshot: TaskSnapshot): Promise<boolean> => {
    if (last && Date.parse(snapshot.lastUpdatedAt) < Date.parse(last.lastUpdatedAt)) return false; // queued before the newest
    last = snapshot;
    try {
      options.onUpdate?.(snapshot);
      if (isTerminalStatus(snapshot.status)) return true;
      await options.react?.(snapshot);
    } catch (error) {
      throw new HookFailure(error);
    }
    return false;
  };
  const stopped = (error: unknown): Error | undefined => {
    if (options.signal?.aborted) return abortReason(options.signal);
    if (signal.aborted) return new TaskTimeoutError(taskId, deadline as number, last);
    if (error instanceof HookFailure) return error.error instanceof TasksConnectionError && error.error.retryable ? undefined : (error.error as Error);
    return undefined;
  };

  let subscription: TaskSubscription;
  try {
    subscription = await subscribe(signal);
  } catch (error) {
    const fatal = stopped(error);
    if (fatal) throw fatal;
    return {};
  }
  try {
    if (!subscription.taskIds.includes(taskId)) return {};
    // Subscribed first, read second: nothing that changes after this read can be missed.
    const current = await poll({ signal, timeoutMs: options.requestTimeoutMs }).catch((error: unknown) => {
      throw error instanceof TasksConnectionError && error.retryable ? error : new PollFailure(error);
    });
    if (await observe(current)) return { terminal: current };
    for await (const pushed of subscription) {
      if (pushed.taskId === taskId && (await observe(pushed))) return { terminal: pushed };
    }
  } catch (error) {
    const fatal = stopped(error);
    if (fatal) throw fatal;
    if (error instanceof PollFailure) throw error.error;
    // Otherwise the stream failed, or a hook failed transiently: polling takes over (and retries the hook).
  } finally {
    subscription.close();
  }
  return last ? { last } : {};
}
