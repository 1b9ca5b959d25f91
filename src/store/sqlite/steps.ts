import { MAX_TOOL_STATE_KEYS, type TaskSteps } from '../../core/ports/steps.js';
import { toolStateJson, tooManyToolStateKeys } from '../../core/store-rules.js';
import type { JsonValue } from '../../core/task.js';
import type { SqliteContext } from './context.js';

/** The steps port on SQLite (see {@link TaskSteps}): journaled steps and per-owner tool state. */
export class SqliteSteps implements TaskSteps {
  constructor(private readonly ctx: SqliteContext) {}

  async getStep(taskId: string, name: string): Promise<{ value: JsonValue } | undefined> {
    const row = (await this.ctx.readDurable('read a step', () => this.ctx.stmt.getStep.get({ taskId, name }))) as { value: string } | undefined;
    return row === undefined ? undefined : { value: this.ctx.codec.stepValue(taskId, name, row.value) };
  }

  /** See {@link TaskSteps.putStep}. A step of a missing task is dropped. */
  async putStep(taskId: string, name: string, value: JsonValue): Promise<void> {
    const json = this.ctx.codec.stepText(taskId, name, value);
    const now = this.ctx.clock.now();
    await this.ctx.committer.enqueue(() => this.ctx.stmt.putStep.run({ taskId, name, value: json, now }));
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
