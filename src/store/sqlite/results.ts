import type { TaskResults } from '../../core/ports/results.js';
import { checkResultChunks } from '../../core/store-rules.js';
import type { TaskOutcome } from '../../core/task.js';
import { toOutcome } from '../codec.js';
import type { SqliteContext } from './context.js';

/** The results port on SQLite (see {@link TaskResults}); chunks are replaced in one write transaction of the group commit. */
export class SqliteResults implements TaskResults {
  constructor(private readonly ctx: SqliteContext) {}

  async getOutcome(taskId: string): Promise<TaskOutcome | undefined> {
    const row = (await this.ctx.readDurable('read an outcome', () => this.ctx.stmt.getOutcome.get({ taskId }))) as { kind: string; body: string } | undefined;
    return row === undefined ? undefined : toOutcome(row);
  }

  /** See {@link TaskResults.putResultChunks}: a write of the committer, so writers of one task are serialized. */
  async putResultChunks(taskId: string, chunks: readonly Uint8Array[], leaseOwner?: string): Promise<boolean> {
    checkResultChunks(chunks);
    const { stmt } = this.ctx;
    return this.ctx.committer.enqueue(() => {
      if (!(leaseOwner === undefined ? stmt.taskExists.get({ taskId }) : stmt.taskRunUnder.get({ taskId, leaseOwner }))) return false;
      stmt.deleteResultChunks.run({ taskId });
      chunks.forEach((chunk, index) => stmt.insertResultChunk.run({ taskId, index, data: chunk }));
      return true;
    });
  }

  /**
   * See {@link TaskResults.discardUnservedResultChunks}. Every cancel calls it: a task without chunks (nearly all) is
   * answered from a read, without a write transaction and its fsync. Chunks cannot appear after that read for a task
   * this deletes from: its writes need the task `working` and held (`putResultChunks`).
   */
  async discardUnservedResultChunks(taskId: string): Promise<number> {
    const { stmt } = this.ctx;
    if (!(await this.ctx.readDurable('read result chunks', () => stmt.hasResultChunks.get({ taskId })))) return 0;
    return this.ctx.committer.enqueue(() => stmt.discardUnservedResultChunks.run({ taskId }).changes);
  }

  async readResultChunk(taskId: string, index: number): Promise<Uint8Array | undefined> {
    const row = await this.ctx.readDurable('read a result chunk', () => this.ctx.stmt.readResultChunk.get({ taskId, index }) as { data: Buffer } | undefined);
    return row?.data;
  }
}
