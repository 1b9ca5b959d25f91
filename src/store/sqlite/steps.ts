import { type JournalEntry, MAX_TOOL_STATE_KEYS, type TaskSteps } from '../../core/ports/steps.js';
import { toolStateJson, tooManyToolStateKeys } from '../../core/store-rules.js';
import type { JsonValue } from '../../core/task.js';
import { writtenEntry } from '../codec.js';
import type { SqliteContext } from './context.js';

/** What `SQL.lookupStep` answers: whether the task is run under the owner (0/1) and the step's JSON, if any. */
type JournalRow = { held: number; value: string | null };

/** The steps port on SQLite (see {@link TaskSteps}): journaled steps and per-owner tool state. */
export class SqliteSteps implements TaskSteps {
  constructor(private readonly ctx: SqliteContext) {}

  async getStep(taskId: string, name: string): Promise<{ value: JsonValue } | undefined> {
    const row = (await this.ctx.readDurable('read a step', () => this.ctx.stmt.getStep.get({ taskId, name }))) as { value: string } | undefined;
    return row === undefined ? undefined : { value: this.ctx.codec.stepValue(taskId, name, row.value) };
  }

  /** See {@link TaskSteps.lookupStep}. */
  async lookupStep(taskId: string, name: string, leaseOwner: string): Promise<JournalEntry> {
    const row = (await this.ctx.readDurable('read a step', () => this.ctx.stmt.lookupStep.get({ taskId, name, leaseOwner, unheld: 0 }))) as JournalRow;
    return this.ctx.codec.journalEntry(taskId, name, row);
  }

  /** See {@link TaskSteps.putStep}: the write and, when it inserted nothing, the look at what won, in one write of the committer. */
  async putStep(taskId: string, name: string, value: JsonValue, leaseOwner?: string): Promise<Exclude<JournalEntry, { kind: 'absent' }>> {
    const json = this.ctx.codec.stepText(taskId, name, value);
    const now = this.ctx.clock.now();
    const owner = leaseOwner ?? null;
    const won = await this.ctx.committer.enqueue((): JournalRow | 'inserted' =>
      this.ctx.stmt.putStep.get({ taskId, name, value: json, now, leaseOwner: owner }) !== undefined
        ? 'inserted'
        : (this.ctx.stmt.lookupStep.get({ taskId, name, leaseOwner: owner, unheld: 1 }) as JournalRow),
    );
    return won === 'inserted' ? { kind: 'journaled', value } : writtenEntry(this.ctx.codec.journalEntry(taskId, name, won));
  }

  async getToolState(ownerKey: string, tool: string, key: string): Promise<JsonValue | undefined> {
    const row = (await this.ctx.readDurable('read tool state', () => this.ctx.stmt.getToolState.get({ ownerKey, tool, key }))) as { value: string } | undefined;
    return row === undefined ? undefined : (JSON.parse(row.value) as JsonValue);
  }

  /** See {@link TaskSteps.putToolState}; the key bound is checked in the write's transaction. */
  async putToolState(ownerKey: string, tool: string, key: string, value: JsonValue, now: number): Promise<void> {
    const json = toolStateJson(tool, key, value);
    await this.ctx.committer.enqueue(() => {
      const { changes } = this.ctx.stmt.putToolState.run({ ownerKey, tool, key, value: json, now, maxKeys: MAX_TOOL_STATE_KEYS });
      if (changes === 0) throw tooManyToolStateKeys(MAX_TOOL_STATE_KEYS);
    });
  }
}
