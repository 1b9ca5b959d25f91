import { RESULT_CHUNK_BYTES, type TaskStore } from '../../core/store.js';
import type { TaskRecord } from '../../core/task.js';
import { RESULT_CHUNK_MIME_TYPE, RESULT_READ_CHUNK_BYTES, RESULT_RESOURCE_MIME_TYPE, resultChunkCount } from '../../protocol/result-uri.js';

// A chunk resource lies inside one stored chunk.
if (RESULT_CHUNK_BYTES % RESULT_READ_CHUNK_BYTES !== 0) throw new Error('RESULT_CHUNK_BYTES must be a multiple of RESULT_READ_CHUNK_BYTES');

/**
 * A large task result as `resources/read` serves it (issue 10 §2): its chunks are read from the store one at a time
 * while the answer is written, so serving never holds more than one chunk (see {@link TaskStore.readResultChunk}).
 * Either the whole result (`mcp-tasks://tasks/{taskId}/result`, the JSON text) or one 64 KiB chunk resource of it
 * (`…/result/chunks/{index}`, bytes, cut from the stored chunk that holds it; issue 23 §5).
 */
export interface ResultResource {
  uri: string;
  taskId: string;
  /** `undefined`: the whole result; else the index of the one chunk this resource is. */
  chunk?: number;
  mimeType: typeof RESULT_RESOURCE_MIME_TYPE | typeof RESULT_CHUNK_MIME_TYPE;
  /** Bytes of this resource (the whole result's JSON text, UTF-8, or the chunk): a writer that got fewer from {@link chunks} must not answer. */
  bytes: number;
  /** Chunk resources of the whole result (`protocol/result-uri.ts`), so a path that cannot stream it can name them. */
  totalChunks: number;
  /**
   * Cache freshness for `ReadResourceResult.ttlMs` (ms): the task's remaining lifetime — the result never changes,
   * and it is gone when the task expires — or 0 ("re-fetch") for a task without a TTL, where no bound is known.
   */
  ttlMs: number;
  /**
   * The chunks in order (UTF-8 of the whole `CallToolResult` JSON; a character may straddle two chunks), each read
   * when asked for — just the one for a chunk resource. A task deleted mid-way ends them early (fewer than {@link bytes}).
   */
  chunks(): AsyncGenerator<Uint8Array, void, undefined>;
}

/**
 * The resource of `record`'s large result of `bytes` bytes: the whole result, or chunk resource `chunk` of it (the
 * caller checked that the index is below {@link resultChunkCount}).
 */
export function resultResource(store: TaskStore, uri: string, record: TaskRecord, bytes: number, now: number, chunk?: number): ResultResource {
  const { taskId } = record;
  const common = { uri, taskId, totalChunks: resultChunkCount(bytes), ttlMs: record.expiresAt === null ? 0 : Math.max(0, record.expiresAt - now) };
  if (chunk !== undefined) {
    const start = chunk * RESULT_READ_CHUNK_BYTES;
    return {
      ...common,
      chunk,
      mimeType: RESULT_CHUNK_MIME_TYPE,
      bytes: Math.min(RESULT_READ_CHUNK_BYTES, bytes - start),
      async *chunks() {
        const stored = await store.readResultChunk(taskId, Math.floor(start / RESULT_CHUNK_BYTES));
        const offset = start % RESULT_CHUNK_BYTES;
        if (stored && stored.byteLength > offset) yield stored.subarray(offset, offset + RESULT_READ_CHUNK_BYTES);
      },
    };
  }
  return {
    ...common,
    mimeType: RESULT_RESOURCE_MIME_TYPE,
    bytes,
    async *chunks() {
      for (let index = 0; ; index += 1) {
        const data = await store.readResultChunk(taskId, index);
        if (!data) return;
        yield data;
      }
    },
  };
}
