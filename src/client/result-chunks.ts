/**
 * A large result read back as its chunk resources (`mcp-tasks://tasks/{taskId}/result/chunks/{index}`, 64 KiB of its
 * JSON text each, issue 23 §5), through the session's ordinary `resources/read` — on every path and generation, so
 * no answer is larger than a chunk and each read has its own request timeout, whatever the result's size.
 */
import { z } from 'zod';

import { ErrorCode } from '../protocol/constants.js';
import { parseResultUri, RESULT_READ_CHUNK_BYTES, resultChunkCount, resultChunkUri } from '../protocol/result-uri.js';
import { TaskNotFoundError, TasksProtocolError } from './errors.js';
import type { McpSession } from './session.js';

/** A `ReadResourceResult` as far as a result resource needs it: its one content, JSON `text` or base64 `blob`. */
const ReadResourceResultSchema = z.looseObject({
  contents: z.array(z.looseObject({ uri: z.string(), text: z.string().optional(), blob: z.string().optional() })).min(1),
});

/** Chunk reads in flight at once: enough to hide a round trip on loopback and LAN, few enough to hold ~4 × 64 KiB. */
export const CHUNK_READS_IN_FLIGHT = 4;

/** How to read a large result's chunks. */
export interface ResultChunkOptions {
  /**
   * Bytes of the whole result's JSON text: the `size` of its `resource_link` (or `bytes` of the `-31004` answer).
   * It fixes the number of chunks and each one's length, both checked. Without it, chunks are read until one is
   * shorter than {@link RESULT_READ_CHUNK_BYTES} (a result of a whole number of chunks ends at the first index the
   * server does not know, after the chunk before it is read again to tell "past the end" from "gone").
   */
  bytes?: number;
  /** Aborts the reads in flight (the SDK cancels them) and ends the iteration with the abort's error. */
  signal?: AbortSignal;
}

/**
 * The chunks of the large result `uri` (`mcp-tasks://tasks/{taskId}/result`) in order, as bytes (a character may
 * straddle two chunks: decode them as one stream). Up to {@link CHUNK_READS_IN_FLIGHT} reads are in flight; a
 * consumer that stops early (or fails) cancels the rest.
 * @throws TaskNotFoundError (`code` `-32602`) when the caller may not read it or it is gone (the task expired or was
 *   purged); TasksProtocolError for a URI that names no large result, or chunks whose lengths do not add up to
 *   `bytes`; TasksConnectionError when a read fails on the way (its own request timeout included); the signal's
 *   abort error once aborted.
 */
export async function* readResultChunks(session: McpSession, uri: string, options: ResultChunkOptions = {}): AsyncGenerator<Buffer, void, undefined> {
  const named = parseResultUri(uri);
  if (named === undefined || named.chunk !== undefined) throw new TasksProtocolError(`${uri} does not name a large task result`);
  const total = options.bytes === undefined ? undefined : resultChunkCount(options.bytes);
  // Our own controller, so that a consumer that stops early cancels the reads it will never take.
  const stop = new AbortController();
  const onAbort = (): void => stop.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.signal?.aborted) onAbort();
  const read = (index: number): Promise<Buffer> => readChunk(session, resultChunkUri(named.taskId, index), stop.signal);
  const inFlight: Promise<Buffer>[] = [];
  let requested = 0;
  let bytes = 0;
  try {
    for (let index = 0; total === undefined || index < total; index += 1) {
      while (inFlight.length < CHUNK_READS_IN_FLIGHT && (total === undefined || requested < total)) {
        const pending = read(requested);
        pending.catch(() => {}); // taken (and thrown) in order below, or never needed: past the end, or cancelled
        inFlight.push(pending);
        requested += 1;
      }
      let chunk: Buffer;
      try {
        chunk = await (inFlight.shift() as Promise<Buffer>);
      } catch (error) {
        // This index may be past the end rather than gone — the result is still there when the chunk before it can
        // be read again: the end, when the size is unknown (the chunk before was whole); a server whose size counts
        // more chunks than it has, when it is known (a fault of the server, not a result that went away).
        if (!(index > 0 && error instanceof TaskNotFoundError && !stop.signal.aborted)) throw error;
        const stillKept = (await read(index - 1)).length > 0;
        if (stillKept && total === undefined) return;
        if (stillKept)
          throw new TasksProtocolError(`resources/read ${uri}: chunk ${index} does not exist, but the result's ${options.bytes} bytes need ${total} chunks`);
        throw error;
      }
      // Chunks read before an abort are not handed out after it.
      options.signal?.throwIfAborted();
      bytes += chunk.length;
      if (total !== undefined && (index + 1 < total ? chunk.length !== RESULT_READ_CHUNK_BYTES : bytes !== options.bytes))
        throw new TasksProtocolError(`resources/read ${uri}: chunk ${index} has ${chunk.length} bytes, which does not add up to the result's ${options.bytes}`);
      yield chunk;
      if (total === undefined && chunk.length < RESULT_READ_CHUNK_BYTES) return;
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    stop.abort();
  }
}

/** The bytes of one chunk resource (a base64 `blob`; a `text` is taken as UTF-8). */
async function readChunk(session: McpSession, uri: string, signal: AbortSignal): Promise<Buffer> {
  const content = await readResourceContent(session, uri, signal);
  return content.blob === undefined ? Buffer.from(content.text ?? '', 'utf8') : Buffer.from(content.blob, 'base64');
}

/**
 * One `resources/read` of a result resource. The server answers `-32602` for a result it no longer keeps (its task
 * expired or was purged) as for one the caller may not read — one answer for both, so nothing leaks: a
 * {@link TaskNotFoundError} of the task the URI names.
 * @throws TaskNotFoundError as said; whatever `session.request` throws otherwise.
 */
export async function readResourceContent(session: McpSession, uri: string, signal?: AbortSignal): Promise<{ text?: string; blob?: string }> {
  try {
    const answer = await session.request('resources/read', { uri }, ReadResourceResultSchema, signal ? { signal } : {});
    return answer.contents[0] as { text?: string; blob?: string };
  } catch (error) {
    const taskId = parseResultUri(uri)?.taskId;
    if (!(error instanceof TasksProtocolError && error.code === ErrorCode.InvalidParams && taskId !== undefined)) throw error;
    throw new TaskNotFoundError(
      taskId,
      `The result of task ${taskId} is no longer kept on the server (the task expired or was purged), or is not visible to these credentials`,
      { cause: error },
    );
  }
}
