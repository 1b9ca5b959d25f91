import type { Clock } from '../../core/clock.js';
import type { TaskEventFeed } from '../../core/event-feed.js';
import { isTerminal } from '../../core/state-machine.js';
import type { TaskRecord } from '../../core/task.js';
import type { ToolRegistry } from '../../core/tool-registry.js';
import type { TaskActor } from '../access.js';
import type { ServiceDoor } from '../door.js';
import type { TaskReads } from '../task-reads.js';
import { changesResultWait, type FreshTasks } from './fresh-tasks.js';

/** A blocking `tasks/result` whose look is done (see {@link ResultWaits.openResultWait}). */
export interface ResultWait {
  /** `settled` (terminal at the look) or `waits` (its tool never asks for input). */
  path: 'settled' | 'waits';
  /**
   * The v1 session the look did not check (the look used the record this process created, {@link FreshTasks}): the
   * wait's reads check it instead, so a wait that ends finds the task missing when the session is gone; the caller
   * must check it itself before it commits to an answer earlier (e.g. sends response headers), and then say so with
   * `checked()`: the wait's later reads stop checking it, as the wait of a look that read the session does not
   * either (a session record that goes away after that — a DELETE elsewhere, the idle prune of a long wait — must not
   * turn the task's result into "Task not found").
   */
  uncheckedSession?: { id: string; checked(): void };
  /** The wait, from the record the look read; start it exactly once. */
  wait: (signal: AbortSignal) => Promise<TaskRecord>;
}

/** The events of one task that can change a waiting `tasks/result`'s answer, followed until `close`. */
interface Wakes {
  /** Resolved by the next such event from now on (the first call: from the subscription on); taken before each read. */
  next: () => Promise<void>;
  close: () => void;
}

/**
 * The blocking v1 `tasks/result` of the tasks door (R24): the look an adapter takes to choose its path, and the
 * wait until the task is terminal, woken by the event feed. Part of `TasksDoor`, which delegates to it.
 */
export class ResultWaits {
  constructor(
    private readonly options: {
      feed: TaskEventFeed;
      door: ServiceDoor;
      reads: TaskReads;
      tools: Pick<ToolRegistry, 'get'>;
      clock: Clock;
      fresh?: FreshTasks;
    },
  ) {}

  /**
   * What a blocking v1 `tasks/result` of the actor's task will have to do, for an adapter that chooses between two
   * paths of one operation (the fast path answers it itself unless questions may have to go out on the call's stream,
   * R29): `settled` — terminal now; `waits` — not terminal, and its tool never asks for input, so only its end can
   * reach the call; `asks` — waiting for input now, or its tool may ask; `undefined` — not visible to the actor. The
   * answer must come from the operation ({@link waitForTerminal}), never from this.
   * @param requireSession - the v1 session whose request this is, when the adapter has not read it: the read checks
   *   that its record exists (`TaskScope.requireSession`) and answers `undefined` when it does not.
   */
  async resultPath(actor: TaskActor, taskId: string, requireSession?: string): Promise<'settled' | 'waits' | 'asks' | undefined> {
    const record = await this.options.reads.get(taskId, {
      ownerKey: actor.ownerKey,
      generation: actor.generation,
      ...(requireSession === undefined ? {} : { requireSession }),
    });
    return record && this.pathOf(record);
  }

  /** {@link resultPath} of a task read just now. */
  private pathOf(record: TaskRecord): 'settled' | 'waits' | 'asks' {
    if (isTerminal(record.status)) return 'settled';
    // A tool this process does not know (loaded only by the workers) may ask.
    const tool = this.options.tools.get(record.toolName);
    return record.status === 'input_required' || !tool || (tool.elicits ?? false) !== false ? 'asks' : 'waits';
  }

  /**
   * Wait until the task is terminal and return it (v1 `tasks/result`, R24). Woken by the event feed (this process's
   * commits at once, other processes' through the tail); re-reads the task on every event of it that leaves it
   * other than `working` (or concerns its input or expiry).
   * @param onUpdate - called with each non-terminal state seen (v1 delivers the task's questions from here)
   * @throws TasksError `-32602` "Task not found" when the task is or becomes missing or expired; `signal`'s reason
   *   when it aborts first.
   */
  waitForTerminal(actor: TaskActor, taskId: string, signal: AbortSignal, onUpdate?: (record: TaskRecord) => Promise<void>): Promise<TaskRecord> {
    return this.waitFrom(actor, taskId, this.wakes(taskId), undefined, signal, onUpdate);
  }

  /**
   * {@link resultPath} and the {@link waitForTerminal} that follows it with ONE read of the task (issue 25: the wait
   * read again what the look had just read): the task's events are followed from before that read, so nothing that
   * happens after it is missed, and the wait starts from the record read. `undefined` or `asks` as
   * {@link resultPath} answers them (nothing is followed then); otherwise the path and the wait, which the caller
   * must start exactly once (it answers as {@link waitForTerminal}, the hooks' task check included).
   * @param requireSession - as for {@link resultPath}
   */
  async openResultWait(actor: TaskActor, taskId: string, requireSession?: string): Promise<ResultWait | 'asks' | undefined> {
    const wakes = this.wakes(taskId);
    // A task this process created that nothing has changed since (issue 25: no read; see FreshTasks): subscribed
    // above, in this same turn, so whatever changes it from now on wakes the wait.
    const fresh = this.options.fresh?.get(taskId, { ownerKey: actor.ownerKey, generation: actor.generation }, this.options.clock.now());
    if (fresh) {
      if (this.pathOf(fresh) === 'waits') {
        let check = requireSession;
        return {
          path: 'waits',
          ...(requireSession === undefined ? {} : { uncheckedSession: { id: requireSession, checked: () => (check = undefined) } }),
          wait: (signal) => this.waitFrom(actor, taskId, wakes, fresh, signal, undefined, () => check),
        };
      }
    }
    let record: TaskRecord | undefined;
    try {
      record = await this.options.reads.get(taskId, {
        ownerKey: actor.ownerKey,
        generation: actor.generation,
        ...(requireSession === undefined ? {} : { requireSession }),
      });
    } catch (error) {
      wakes.close();
      throw error;
    }
    const path = record && this.pathOf(record);
    if (!record || path === undefined || path === 'asks') {
      wakes.close();
      return record && 'asks';
    }
    const first = record;
    return { path, wait: (signal) => this.waitFrom(actor, taskId, wakes, first, signal) };
  }

  /** The events of `taskId` that can change a waiting `tasks/result`'s answer, followed from now until `close`. */
  private wakes(taskId: string): Wakes {
    let wake: () => void = () => {};
    let woken = new Promise<void>((resolve) => (wake = resolve));
    // Only events that can change the answer or the questions wake the read (issue 25: one read of the task fewer per run).
    const close = this.options.feed.subscribeTask(taskId, (event) => {
      if (changesResultWait(event)) wake();
    });
    let taken = false;
    return {
      // Resolved by the next event from now on (the first one: from the subscription on); taken before each read.
      next: () => {
        if (taken) woken = new Promise<void>((resolve) => (wake = resolve));
        taken = true;
        return woken;
      },
      close,
    };
  }

  /**
   * The loop of {@link waitForTerminal}, on `wakes` taken before `first` (a record already read) or before its first
   * read. `requireSession`: a read also checks the v1 session it names then (the look did not check it).
   */
  private waitFrom(
    actor: TaskActor,
    taskId: string,
    wakes: Wakes,
    first: TaskRecord | undefined,
    signal: AbortSignal,
    onUpdate?: (record: TaskRecord) => Promise<void>,
    requireSession?: () => string | undefined,
  ): Promise<TaskRecord> {
    const { door } = this.options;
    const context = { operation: 'waitForTerminal', actor: actor, generation: actor.generation, taskId } as const;
    return door
      .run(context, async () => {
        let seen = first;
        for (;;) {
          // Events from before this read on: one that lands while it runs wakes the next round.
          const woken = wakes.next();
          let record: TaskRecord;
          if (seen) {
            door.admit(context, seen);
            record = seen;
            seen = undefined;
          } else record = await door.scoped(actor, taskId, 'waitForTerminal', requireSession?.());
          if (isTerminal(record.status)) return record;
          await onUpdate?.(record);
          await until(woken, signal);
          if (signal.aborted) throw signal.reason ?? new Error('aborted');
        }
      })
      .finally(() => wakes.close());
  }
}

/** Resolve on `woken` or when `signal` aborts, whichever comes first. */
function until(woken: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    void woken.then(done);
  });
}
