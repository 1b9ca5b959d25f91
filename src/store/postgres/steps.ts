import { type JournalEntry, MAX_TOOL_STATE_KEYS, type TaskSteps } from '../../core/ports/steps.js';
import { toolStateJson, tooManyToolStateKeys } from '../../core/store-rules.js';
import type { JsonValue } from '../../core/task.js';
import { writtenEntry } from '../codec.js';
import type { PostgresContext } from './context.js';
import { SQL } from './sql.js';

/** What `SQL.lookupStep` answers: whether the task is run under the owner and the step's stored text, if any. */
type JournalRow = { held: boolean; value: string | null };

/** The steps port on PostgreSQL (see {@link TaskSteps}): journaled steps and per-owner tool state. */
export class PostgresSteps implements TaskSteps {
  constructor(private readonly ctx: PostgresContext) {}

  async getStep(taskId: string, name: string): Promise<{ value: JsonValue } | undefined> {
    const [row] = await this.ctx.read<{ value: string }>('read a step', SQL.getStep, [taskId, name]);
    return row === undefined ? undefined : { value: this.ctx.codec.stepValue(taskId, name, row.value) };
  }

  /** See {@link TaskSteps.lookupStep}. */
  async lookupStep(taskId: string, name: string, leaseOwner: string): Promise<JournalEntry> {
    const [row] = await this.ctx.read<JournalRow>('read a step', SQL.lookupStep, [taskId, name, leaseOwner, false]);
    return this.ctx.codec.journalEntry(taskId, name, row!);
  }

  /**
   * See {@link TaskSteps.putStep}: a write of the batch; when it inserted nothing, a second statement of the same
   * transaction looks at what won (a write that lost a race commits no row of its own, so this costs nothing more on
   * the path every first write takes).
   */
  async putStep(taskId: string, name: string, value: JsonValue, leaseOwner?: string): Promise<Exclude<JournalEntry, { kind: 'absent' }>> {
    const json = this.ctx.codec.stepText(taskId, name, value);
    const owner = leaseOwner ?? null;
    const won = await this.ctx.batcher.enqueue(async (tx): Promise<JournalRow | 'inserted'> => {
      if ((await tx.query(SQL.putStep, [taskId, name, json, this.ctx.clockNow(), owner])).length > 0) return 'inserted';
      const [row] = await tx.query<JournalRow>(SQL.lookupStep, [taskId, name, owner, true]);
      return row!;
    });
    return won === 'inserted' ? { kind: 'journaled', value } : writtenEntry(this.ctx.codec.journalEntry(taskId, name, won));
  }

  async getToolState(ownerKey: string, tool: string, key: string): Promise<JsonValue | undefined> {
    const [row] = await this.ctx.read<{ value: string }>('read tool state', SQL.getToolState, [ownerKey, tool, key]);
    return row === undefined ? undefined : (JSON.parse(row.value) as JsonValue);
  }

  /** See {@link TaskSteps.putToolState}; the key bound is checked in the write's own statement. */
  async putToolState(ownerKey: string, tool: string, key: string, value: JsonValue, now: number): Promise<void> {
    const json = toolStateJson(tool, key, value);
    await this.ctx.batcher.enqueue(async (tx) => {
      const written = await tx.query(SQL.putToolState, [ownerKey, tool, key, json, now, MAX_TOOL_STATE_KEYS]);
      if (written.length === 0) throw tooManyToolStateKeys(MAX_TOOL_STATE_KEYS);
    });
  }
}
