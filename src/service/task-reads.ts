import type { Clock } from '../core/clock.js';
import type { WorkerHandOff } from '../core/hand-off.js';
import { settledWithin } from '../core/settled-within.js';
import type { TaskScope, TaskStore } from '../core/store.js';
import { visibleAt } from '../core/store-rules.js';
import type { TaskGeneration, TaskOutcome, TaskRecord } from '../core/task.js';
import { outcomeBodyOf } from '../core/tool-outcome.js';
import { keysetPage, rowsToRead } from './paging.js';
import { MAX_OUTCOME_CHARS, TerminalTaskCache } from './terminal-cache.js';

/** One page of an owner's tasks, as {@link TaskReads.list} returns it. */
export interface TaskPage {
  /** The visible tasks of the page, ascending by `seq` (fewer than the page size when some had expired). */
  tasks: TaskRecord[];
  /** Where the next page starts (`afterSeq`), or `undefined` when this was the last page. */
  nextAfterSeq: number | undefined;
}

/** Ends this process's worker committed that no read has taken yet, kept at most (the oldest are dropped first). */
const MAX_JUST_ENDED = 256;
/** A task larger than this (JSON characters, its arguments included) is not kept on its end: its read goes to the store. */
const MAX_JUST_ENDED_CHARS = 16 * 1024;
/**
 * Longest a read waits for the end of its task that this process is committing, before it reads the store anyway
 * (a group commit takes milliseconds; a database that stalls must not hold a poll for its statement timeout).
 */
const COMMITTING_WAIT_MS = 100;

/** A task's end as this process's worker committed it (see {@link TaskReads}). */
interface JustEnded {
  record: TaskRecord;
  /** The outcome as its stored JSON reads back, when small enough for the terminal cache. */
  outcome?: { outcome: TaskOutcome; chars: number };
}

/**
 * Reads on behalf of requestors, with the rules every backend shares applied once above the store: a task past its
 * `expiresAt` is gone (`visibleAt`, judged on this process's clock; the sweep deletes the row later on the store's
 * clock), and terminal tasks are served from a {@link TerminalTaskCache}. Errors: the store's `StoreError`s pass
 * through.
 */
export class TaskReads {
  private readonly terminal = new TerminalTaskCache();
  /** Ends heard from this process's worker, by task id, oldest first; the first read of the task takes its entry. */
  private readonly justEnded = new Map<string, JustEnded>();

  /**
   * @param handOff - the worker of this process, if any: the ends it commits are kept (a few hundred, small ones
   *   only) until the task's first read, which then answers from them like a terminal-cache hit; and a read of a task
   *   whose end it is committing waits up to {@link COMMITTING_WAIT_MS} for that commit. So the `tasks/get` or
   *   `tasks/result` woken by the commit's own event reads nothing from the store (issue 25).
   */
  constructor(
    private readonly store: TaskStore,
    private readonly clock: Clock,
    private readonly handOff?: Pick<WorkerHandOff, 'pendingOutcome' | 'onOutcomeWritten'>,
  ) {
    handOff?.onOutcomeWritten((record, outcome) => this.written(record, outcome));
  }

  /**
   * The task within `scope` as a requestor may see it now; `undefined` when missing, foreign, other generation or
   * expired — or, with `scope.requireSession`, when that session has no record: such a read always goes to the store
   * (it is the request's session check), and a terminal task it finds is remembered as usual.
   */
  async get(taskId: string, scope: TaskScope): Promise<TaskRecord | undefined> {
    // A terminal task's small outcome comes with it (one read), so `outcome` then needs none (issue 25).
    let outcome: { outcome: TaskOutcome; chars: number } | undefined;
    const load = async (): Promise<TaskRecord | undefined> => {
      const read = await this.store.getWithOutcome(taskId, scope, MAX_OUTCOME_CHARS);
      outcome = read?.outcome;
      return read?.record;
    };
    if (scope.requireSession === undefined) {
      const committing = this.handOff?.pendingOutcome(taskId);
      if (committing) await settledWithin(committing, COMMITTING_WAIT_MS);
      this.takeJustEnded(taskId);
    }
    const record = scope.requireSession === undefined ? await this.terminal.read(taskId, scope, load) : await this.terminal.loaded(await load());
    if (outcome) this.terminal.rememberOutcome(taskId, outcome.outcome, outcome.chars);
    if (record === undefined || visibleAt(record, this.clock.now())) return record;
    this.terminal.forget(taskId);
    return undefined;
  }

  /**
   * A task this process's worker has just ended, as written: kept for its first read (not in the terminal cache, which
   * holds only what requestors read), its outcome too when small — as its stored JSON reads back, so the answer is
   * exactly what a read from the store would give.
   */
  private written(record: TaskRecord, outcome: TaskOutcome | undefined): void {
    if (jsonCharsUpTo(record, MAX_JUST_ENDED_CHARS + 1) > MAX_JUST_ENDED_CHARS) return;
    const ended: JustEnded = { record };
    if (outcome) {
      const body = outcomeBodyOf(outcome);
      const chars = jsonCharsUpTo(body, MAX_OUTCOME_CHARS + 1);
      if (chars <= MAX_OUTCOME_CHARS) {
        const stored = JSON.parse(JSON.stringify(body)) as never;
        ended.outcome = { outcome: outcome.kind === 'error' ? { kind: 'error', error: stored } : { kind: 'result', result: stored }, chars };
      }
    }
    this.justEnded.set(record.taskId, ended);
    if (this.justEnded.size > MAX_JUST_ENDED) this.justEnded.delete(this.justEnded.keys().next().value as string);
  }

  /** Move the just-ended entry of `taskId`, if any, into the terminal cache: a read has come for it. */
  private takeJustEnded(taskId: string): void {
    const ended = this.justEnded.get(taskId);
    if (!ended) return;
    this.justEnded.delete(taskId);
    this.terminal.remember(ended.record);
    if (ended.outcome) this.terminal.rememberOutcome(taskId, ended.outcome.outcome, ended.outcome.chars);
  }

  /** The stored outcome of a terminal task (the caller has read the task within its scope first). */
  outcome(taskId: string): Promise<TaskOutcome | undefined> {
    return this.terminal.readOutcome(taskId, async () => {
      const outcome = await this.store.getOutcome(taskId);
      return outcome === undefined ? undefined : { outcome, chars: jsonCharsUpTo(outcomeBodyOf(outcome), MAX_OUTCOME_CHARS + 1) };
    });
  }

  /**
   * One page of `limit` rows of an owner's tasks of one generation after `afterSeq`, expired ones left out (the
   * paging rule of `service/paging.ts`).
   */
  async list(scope: TaskScope & { generation: TaskGeneration }, afterSeq: number, limit: number): Promise<TaskPage> {
    const now = this.clock.now();
    const page = keysetPage(await this.store.list(scope, { afterSeq, limit: rowsToRead(limit) }), limit, (record) => visibleAt(record, now));
    return { tasks: page.rows, nextAfterSeq: page.nextSeq };
  }
}

/**
 * The length of `value`'s JSON text, counted only up to `cap` (a larger value answers `cap`): sizing an outcome for
 * the cache costs at most `cap` characters of work, however large the outcome is. Strings count their length plus
 * quotes, so escapes make the estimate low by their backslashes only.
 */
export function jsonCharsUpTo(value: unknown, cap: number): number {
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && total < cap) {
    const item = stack.pop();
    if (typeof item === 'string') total += item.length + 2;
    else if (Array.isArray(item)) {
      total += 1 + item.length;
      for (let i = 0; i < item.length && total < cap; i += 1) stack.push(item[i]);
    } else if (item !== null && typeof item === 'object') {
      total += 1;
      for (const key in item) {
        if (total >= cap) break;
        total += key.length + 4;
        stack.push((item as Record<string, unknown>)[key]);
      }
    } else total += String(item).length;
  }
  return Math.min(total, cap);
}
