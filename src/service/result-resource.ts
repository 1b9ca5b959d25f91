import type { TaskStore } from '../core/store.js';
import type { TaskRecord } from '../core/task.js';
import { RESULT_RESOURCE_MIME_TYPE } from '../protocol/result-resource.js';

/**
 * A large task result as `resources/read` serves it (issue 10 §2): its chunks are read from the store one at a time
 * while the answer is written, so serving never holds more than one chunk (see {@link TaskStore.readResultChunk}).
 */
export interface ResultResource {
  uri: string;
  taskId: string;
  mimeType: typeof RESULT_RESOURCE_MIME_TYPE;
  /** Bytes of the whole result's JSON text (UTF-8): a writer that got fewer from {@link chunks} must not answer. */
  bytes: number;
  /**
   * Cache freshness for `ReadResourceResult.ttlMs` (ms): the task's remaining lifetime — the result never changes,
   * and it is gone when the task expires — or 0 ("re-fetch") for a task without a TTL, where no bound is known.
   */
  ttlMs: number;
  /**
   * The chunks in order (UTF-8 of the whole `CallToolResult` JSON; a character may straddle two chunks), each read
   * when asked for. A task deleted mid-way ends them early (fewer than {@link bytes}).
   */
  chunks(): AsyncGenerator<Uint8Array, void, undefined>;
}

/** The resource of `record`'s large result of `bytes` bytes. */
export function resultResource(store: TaskStore, uri: string, record: TaskRecord, bytes: number, now: number): ResultResource {
  const { taskId } = record;
  return {
    uri,
    taskId,
    mimeType: RESULT_RESOURCE_MIME_TYPE,
    bytes,
    ttlMs: record.expiresAt === null ? 0 : Math.max(0, record.expiresAt - now),
    async *chunks() {
      for (let index = 0; ; index += 1) {
        const chunk = await store.readResultChunk(taskId, index);
        if (!chunk) return;
        yield chunk;
      }
    },
  };
}
