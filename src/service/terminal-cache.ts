import { isTerminal } from '../core/state-machine.js';
import type { TaskScope } from '../core/store.js';
import { inScope } from '../core/store-rules.js';
import type { TaskOutcome, TaskRecord } from '../core/task.js';

/** Terminal tasks kept in memory at most (the least recently read is dropped first). */
const MAX_ENTRIES = 4096;
/** Outcomes larger than this (JSON characters) are read from the database every time rather than kept. */
export const MAX_OUTCOME_CHARS = 16 * 1024;

interface Entry {
  record: TaskRecord;
  /** `undefined` until read; kept only when small. */
  outcome?: TaskOutcome;
}

/**
 * A read cache for terminal tasks, the hot target of repeated `tasks/get` and `tasks/result`, in front of every
 * store backend (a backend-neutral rule: it lives above the store). It is safe across processes because a terminal
 * task never changes (terminal states are final, and statusMessage writes skip them) until it expires; expiry is
 * judged by the reader on every read (`visibleAt`), and the sweeper's deletion only follows expiry. Bounded in
 * entries and in outcome size.
 */
export class TerminalTaskCache {
  private readonly entries = new Map<string, Entry>();

  /** The cached task as the store's scoped `get` would return it: `undefined` when foreign or of another generation. */
  lookup(taskId: string, scope: TaskScope): { hit: false } | { hit: true; record: TaskRecord | undefined } {
    const entry = this.entries.get(taskId);
    if (!entry) return { hit: false };
    const { record } = entry;
    return { hit: true, record: inScope(record, scope) ? record : undefined };
  }

  /** Keep `record` if it is terminal. */
  remember(record: TaskRecord): void {
    if (!isTerminal(record.status) || this.entries.has(record.taskId)) return;
    this.entries.set(record.taskId, { record });
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
  }

  /** The cached outcome of a cached terminal task, if it was kept. */
  outcome(taskId: string): TaskOutcome | undefined {
    return this.entries.get(taskId)?.outcome;
  }

  /** Keep the outcome of a cached terminal task when it is small (`chars`: its JSON length). */
  rememberOutcome(taskId: string, outcome: TaskOutcome, chars: number): void {
    const entry = this.entries.get(taskId);
    if (entry && chars <= MAX_OUTCOME_CHARS) entry.outcome = outcome;
  }

  /**
   * Read-through `get`: the cached answer for a terminal task, else `load()` (the backend's scoped read), whose
   * terminal result is remembered.
   */
  async read(taskId: string, scope: TaskScope, load: () => Promise<TaskRecord | undefined>): Promise<TaskRecord | undefined> {
    const cached = this.lookup(taskId, scope);
    if (cached.hit) return cached.record;
    return this.loaded(await load());
  }

  /** `record` as the store's scoped read returned it, remembered when terminal (a read that had to skip the cache). */
  loaded(record: TaskRecord | undefined): TaskRecord | undefined {
    if (record) this.remember(record);
    return record;
  }

  /** Read-through `getOutcome`: the cached outcome, else `load()` (outcome and its JSON length), kept when small. */
  async readOutcome(taskId: string, load: () => Promise<{ outcome: TaskOutcome; chars: number } | undefined>): Promise<TaskOutcome | undefined> {
    const cached = this.outcome(taskId);
    if (cached) return cached;
    const loaded = await load();
    if (!loaded) return undefined;
    this.rememberOutcome(taskId, loaded.outcome, loaded.chars);
    return loaded.outcome;
  }

  /** Drop a task (it expired or was deleted). */
  forget(taskId: string): void {
    this.entries.delete(taskId);
  }
}
