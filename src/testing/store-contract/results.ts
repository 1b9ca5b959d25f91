import { describe, expect, it } from 'vitest';

import { RESULT_CHUNK_BYTES, type TaskStore } from '../../core/store.js';
import type { NewTask, TaskRecord } from '../../core/task.js';
import type { FakeClock } from '../fake-clock.js';
import { expectStoreError } from './harness.js';

/** What the large-result part of the contract suite needs from the suite around it. */
export interface ResultChunkContractContext {
  store(): TaskStore;
  clock(): FakeClock;
  /** Create a task, `overrides` applied (default owner, created now). */
  create(overrides?: Partial<NewTask>): Promise<TaskRecord>;
}

/** `n` bytes that differ per position and per `seed` (so a swapped or stale chunk is noticed). */
function bytes(n: number, seed: number): Uint8Array {
  const data = new Uint8Array(n);
  for (let index = 0; index < n; index += 1) data[index] = (index * 31 + seed) % 251;
  return data;
}

/**
 * The large-result part of the {@link TaskStore} contract (`putResultChunks` / `readResultChunk`, issue 10 §2):
 * chunks read back byte-exact in order, a second write replaces the first, nothing is written for an unknown task,
 * bad chunks are refused, and the chunks are deleted with their task (expiry) while another task's stay.
 */
export function describeResultsContract(context: ResultChunkContractContext): void {
  describe('result chunks (large results)', () => {
    it('reads back each chunk byte-exact by index, undefined past the last one and for a task without chunks', async () => {
      const store = context.store();
      const task = await context.create();
      const other = await context.create();
      const chunks = [bytes(RESULT_CHUNK_BYTES, 1), bytes(RESULT_CHUNK_BYTES, 2), bytes(17, 3)];
      expect(await store.putResultChunks(task.taskId, chunks)).toBe(true);
      for (const [index, chunk] of chunks.entries()) expect(Buffer.from((await store.readResultChunk(task.taskId, index))!)).toEqual(Buffer.from(chunk));
      expect(await store.readResultChunk(task.taskId, 3)).toBeUndefined();
      expect(await store.readResultChunk(other.taskId, 0)).toBeUndefined();
    });

    it('a second write replaces every chunk of the first (a re-run never mixes two results)', async () => {
      const store = context.store();
      const task = await context.create();
      await store.putResultChunks(task.taskId, [bytes(100, 1), bytes(100, 2), bytes(100, 3)]);
      expect(await store.putResultChunks(task.taskId, [bytes(50, 9)])).toBe(true);
      expect(Buffer.from((await store.readResultChunk(task.taskId, 0))!)).toEqual(Buffer.from(bytes(50, 9)));
      expect(await store.readResultChunk(task.taskId, 1)).toBeUndefined();
    });

    it('writes nothing for a task that does not exist (false)', async () => {
      const store = context.store();
      expect(await store.putResultChunks('Zz9Yy8Xx7Ww6Vv5Uu4Tt3S', [bytes(10, 1)])).toBe(false);
      expect(await store.readResultChunk('Zz9Yy8Xx7Ww6Vv5Uu4Tt3S', 0)).toBeUndefined();
    });

    it('with a lease owner: written only while that owner holds the working task (false for another holder, and once the task ended)', async () => {
      const store = context.store();
      const task = await context.create();
      expect((await store.claimRunnable('w-chunks', 60_000, 1)).map((claimed) => claimed.taskId)).toEqual([task.taskId]);
      // The run that lost its lease (another process holds it now) must not replace the holder's chunks.
      expect(await store.putResultChunks(task.taskId, [bytes(10, 1)], 'w-lost')).toBe(false);
      expect(await store.readResultChunk(task.taskId, 0)).toBeUndefined();
      // Control: the holder writes.
      expect(await store.putResultChunks(task.taskId, [bytes(10, 2)], 'w-chunks')).toBe(true);
      expect(Buffer.from((await store.readResultChunk(task.taskId, 0))!)).toEqual(Buffer.from(bytes(10, 2)));
      await store.transition(task.taskId, { to: 'cancelled', now: context.clock().now() });
      expect(await store.putResultChunks(task.taskId, [bytes(10, 3)], 'w-chunks')).toBe(false);
      expect(Buffer.from((await store.readResultChunk(task.taskId, 0))!)).toEqual(Buffer.from(bytes(10, 2)));
    });

    it('discardUnservedResultChunks deletes the chunks of a cancelled task and of one that failed with an error outcome: a working, a completed, a failed-with-a-result and an unknown task keep theirs (or have none)', async () => {
      const store = context.store();
      const now = context.clock().now();
      const cancelled = await context.create();
      const notStored = await context.create();
      const working = await context.create();
      const completed = await context.create();
      const failed = await context.create();
      for (const task of [cancelled, notStored, working, completed, failed])
        expect(await store.putResultChunks(task.taskId, [bytes(100, 1), bytes(100, 2), bytes(7, 3)])).toBe(true);
      await store.transition(cancelled.taskId, { to: 'cancelled', now });
      // The run stored its chunks, then its outcome could not be stored: the task failed with an error instead.
      const error = { code: -32603, message: 'Tool t ran, but its result could not be stored', data: { reason: 'result_not_stored' } };
      await store.transition(notStored.taskId, { to: 'failed', outcome: { kind: 'error', error }, now });
      expect(await store.discardUnservedResultChunks(notStored.taskId)).toBe(3);
      expect(await store.readResultChunk(notStored.taskId, 0)).toBeUndefined();
      await store.transition(completed.taskId, { to: 'completed', outcome: { kind: 'result', result: { content: [] } }, now });
      // A tool result with isError ends the task failed; a large one links to its chunks as well.
      await store.transition(failed.taskId, { to: 'failed', outcome: { kind: 'result', result: { content: [], isError: true } }, now });
      expect(await store.discardUnservedResultChunks(cancelled.taskId)).toBe(3);
      expect(await store.readResultChunk(cancelled.taskId, 0)).toBeUndefined();
      expect(await store.discardUnservedResultChunks(cancelled.taskId)).toBe(0);
      // Controls: a task a run may still write chunks for, and a task whose result names its chunks.
      expect(await store.discardUnservedResultChunks(working.taskId)).toBe(0);
      expect(await store.discardUnservedResultChunks(completed.taskId)).toBe(0);
      expect(await store.discardUnservedResultChunks(failed.taskId)).toBe(0);
      for (const task of [working, completed, failed]) expect(Buffer.from((await store.readResultChunk(task.taskId, 2))!)).toEqual(Buffer.from(bytes(7, 3)));
      expect(await store.discardUnservedResultChunks('Zz9Yy8Xx7Ww6Vv5Uu4Tt3S')).toBe(0);
    });

    it('refuses an empty or oversized chunk with invalid, writing nothing (negative control: the bound itself is accepted)', async () => {
      const store = context.store();
      const task = await context.create();
      await expectStoreError(store.putResultChunks(task.taskId, [bytes(10, 1), new Uint8Array(0)]), 'invalid');
      await expectStoreError(store.putResultChunks(task.taskId, [bytes(RESULT_CHUNK_BYTES + 1, 1)]), 'invalid');
      expect(await store.readResultChunk(task.taskId, 0)).toBeUndefined();
      expect(await store.putResultChunks(task.taskId, [bytes(RESULT_CHUNK_BYTES, 1)])).toBe(true);
    });

    it('deletes the chunks with their task when it expires; another task keeps its chunks', async () => {
      const store = context.store();
      const clock = context.clock();
      const short = await context.create({ ttlMs: 1000 });
      const long = await context.create({ ttlMs: 60_000 });
      await store.putResultChunks(short.taskId, [bytes(1000, 1), bytes(1000, 2)]);
      await store.putResultChunks(long.taskId, [bytes(1000, 3)]);
      clock.advance(1001);
      expect(await store.expireDue(10)).toEqual([short.taskId]);
      expect(await store.readResultChunk(short.taskId, 0)).toBeUndefined();
      expect(await store.readResultChunk(short.taskId, 1)).toBeUndefined();
      expect(Buffer.from((await store.readResultChunk(long.taskId, 0))!)).toEqual(Buffer.from(bytes(1000, 3)));
    });
  });
}
