import { MAX_TOOL_STATE_KEYS, type TaskSteps } from '../../core/ports/steps.js';
import { toolStateJson, tooManyToolStateKeys } from '../../core/store-rules.js';
import type { JsonValue } from '../../core/task.js';
import type { PostgresContext } from './context.js';
import { SQL } from './sql.js';

/** The steps port on PostgreSQL (see {@link TaskSteps}): journaled steps and per-owner tool state. */
export class PostgresSteps implements TaskSteps {
  constructor(private readonly ctx: PostgresContext) {}

  async getStep(taskId: string, name: string): Promise<{ value: JsonValue } | undefined> {
    const [row] = await this.ctx.read<{ value: string }>('read a step', SQL.getStep, [taskId, name]);
    return row === undefined ? undefined : { value: this.ctx.codec.stepValue(taskId, name, row.value) };
  }

  /** See {@link TaskSteps.putStep}. A step of a missing task is dropped. */
  async putStep(taskId: string, name: string, value: JsonValue): Promise<void> {
    const json = this.ctx.codec.stepText(taskId, name, value);
    await this.ctx.batcher.enqueue((tx) => tx.query(SQL.putStep, [taskId, name, json, this.ctx.clockNow()]));
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
