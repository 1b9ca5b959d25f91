import type { TaskResults } from '../../core/ports/results.js';
import { checkResultChunks } from '../../core/store-rules.js';
import type { TaskOutcome } from '../../core/task.js';
import { toOutcome } from '../codec.js';
import type { PostgresContext } from './context.js';
import { SQL } from './sql.js';

/** The results port on PostgreSQL (see {@link TaskResults}). */
export class PostgresResults implements TaskResults {
  constructor(private readonly ctx: PostgresContext) {}

  async getOutcome(taskId: string): Promise<TaskOutcome | undefined> {
    const [row] = await this.ctx.read<{ kind: string; body: string }>('read an outcome', SQL.getOutcome, [taskId]);
    return row === undefined ? undefined : toOutcome(row);
  }

  /**
   * See {@link TaskResults.putResultChunks}: its own transaction (a 64 MiB result must not hold back the batch's
   * writes of other tasks, so the task row is only key-share locked; a transition of this task does not wait for the
   * inserts either, and the condition is confirmed `FOR SHARE` once they are done, see `SQL.confirmTaskForChunks`)
   * under an advisory lock of the task's chunk writers: two writers each deleted the chunks the other had not
   * committed yet, and the second insert failed on the primary key.
   */
  async putResultChunks(taskId: string, chunks: readonly Uint8Array[], leaseOwner?: string): Promise<boolean> {
    checkResultChunks(chunks);
    return this.ctx.inTransaction(
      'store result chunks',
      async (client) => {
        await client.query(SQL.lockChunkWriters, [taskId]);
        if ((await client.query(SQL.lockTaskForChunks, [taskId, leaseOwner ?? null])).rowCount === 0) return false;
        await client.query(SQL.deleteResultChunks, [taskId]);
        for (const [index, chunk] of chunks.entries())
          await client.query(SQL.insertResultChunk, [taskId, index, Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)]);
        // A transition that ended the task while the chunks were written is waited for here and seen: this write keeps
        // nothing. (Chunks a write committed before a cancel: see `discardUnservedResultChunks`.)
        if ((await client.query(SQL.confirmTaskForChunks, [taskId, leaseOwner ?? null])).rowCount === 0) {
          await client.query(SQL.deleteResultChunks, [taskId]);
          return false;
        }
        return true;
      },
      // Its final FOR SHARE can close a deadlock (a batch holding the row waits for a row whose holder waits for this
      // write's key-share lock): rewriting the chunks again is safe.
      { retryConflicts: true },
    );
  }

  /** See {@link TaskResults.discardUnservedResultChunks}: one statement; an ended task is final, so no lock is needed. */
  async discardUnservedResultChunks(taskId: string): Promise<number> {
    return this.ctx.inTransaction('discard result chunks', async (client) => (await client.query(SQL.discardUnservedResultChunks, [taskId])).rowCount ?? 0);
  }

  async readResultChunk(taskId: string, index: number): Promise<Uint8Array | undefined> {
    const [row] = await this.ctx.read<{ data: Buffer }>('read a result chunk', SQL.readResultChunk, [taskId, index]);
    return row?.data;
  }
}
