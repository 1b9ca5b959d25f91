import type { Writable } from 'node:stream';

import { ApplicationErrorReason, ErrorCode } from '../protocol/constants.js';
import { parseResultUri } from '../protocol/result-uri.js';
import { TasksProtocolError } from './errors.js';
import { writeOutputFile } from './file-destination.js';
import { readResourceContent, readResultChunks, type ResultChunkOptions } from './result-chunks.js';
import type { McpSession } from './session.js';
import type { CallToolResult } from './types.js';
import { CallToolResultSchema, toCallToolResult } from './wire-schemas.js';

/** Whether `uri` names a whole large result (`mcp-tasks://tasks/{taskId}/result`), not one of its chunks. */
function isWholeResultUri(uri: string): boolean {
  const named = parseResultUri(uri);
  return named !== undefined && named.chunk === undefined;
}

/** The URI of the whole result a bounded result links to, or `undefined` for a result that is whole already. */
export function resultResourceUri(result: CallToolResult): string | undefined {
  for (const block of result.content) {
    const uri = (block as { type: string; uri?: unknown }).uri;
    if (block.type === 'resource_link' && typeof uri === 'string' && isWholeResultUri(uri)) return uri;
  }
  return undefined;
}

/**
 * Bytes of the whole result a bounded result links to: its `resource_link`'s `size` (UTF-8 of the JSON text), for
 * {@link readResultResourceTo}'s `bytes`; `undefined` without such a link or without a usable `size`.
 */
export function resultResourceSize(result: CallToolResult): number | undefined {
  for (const block of result.content) {
    const { uri, size } = block as { type: string; uri?: unknown; size?: unknown };
    if (block.type === 'resource_link' && typeof uri === 'string' && isWholeResultUri(uri))
      return Number.isSafeInteger(size) && (size as number) > 0 ? (size as number) : undefined;
  }
  return undefined;
}

/**
 * The whole result behind a result resource (`resources/read` of `uri`): in one answer where the server sends it
 * whole (over HTTP it streams it), else chunk by chunk when it answers `-31004` `read_in_chunks` (`data.chunks`,
 * `data.chunkUri`), so no answer is larger than a chunk.
 * @throws TaskNotFoundError (`code` `-32602`) when the caller may not read it or it is gone (the task expired or
 *   was purged); TasksProtocolError for an answer that is not a tool result.
 */
export async function readResultResource(session: McpSession, uri: string): Promise<CallToolResult> {
  let text: string;
  try {
    const whole = await readResourceContent(session, uri);
    text = whole.text ?? Buffer.from(whole.blob ?? '', 'base64').toString('utf8');
  } catch (error) {
    const chunked = readInChunks(error);
    if (!chunked) throw error;
    const parts: Buffer[] = [];
    for await (const chunk of readResultChunks(session, uri, { bytes: chunked.bytes })) parts.push(chunk);
    text = Buffer.concat(parts).toString('utf8');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new TasksProtocolError(`resources/read ${uri}: the resource is not JSON`);
  }
  const result = CallToolResultSchema.safeParse(parsed);
  if (!result.success) throw new TasksProtocolError(`resources/read ${uri}: the resource is not a tool result`);
  return toCallToolResult(result.data);
}

/** What {@link readResultResourceTo} wrote. */
export interface ResultWritten {
  /** Bytes written: the UTF-8 of the result's JSON text. */
  bytes: number;
}

/** How {@link readResultResourceTo} reads: see {@link ResultChunkOptions}. */
export type ResultReadOptions = ResultChunkOptions;

/**
 * Like {@link readResultResource}, without holding the result: its JSON text (the whole `CallToolResult`, UTF-8, as
 * the server keeps it; not parsed here) goes to `destination` chunk by chunk — `resources/read` of its chunk
 * resources (64 KiB each, a few in flight, written in order), each with its own request timeout. Memory stays at a
 * few chunks whatever the result's size; a destination that does not keep up slows the reads (its `drain` is
 * awaited).
 * @param destination a stream (left open: the caller ends it), or a file path: the file appears only once the whole
 *   result is in it (written next to it, then renamed), and a failed read leaves none behind.
 * @param options `bytes`: the size of the result (its `resource_link`'s `size`), which saves a read at its end and
 *   checks the chunks' lengths; `signal`: aborts the read (what was written so far stays in a stream destination).
 * @throws TaskNotFoundError (`code` `-32602`) when the caller may not read it or it is gone (the task expired or
 *   was purged); TasksProtocolError for chunks that do not add up to `bytes`; TasksConnectionError when a chunk read
 *   fails (its request timeout included); the signal's abort error; the destination's own errors.
 */
export async function readResultResourceTo(
  session: McpSession,
  uri: string,
  destination: Writable | string,
  options: ResultReadOptions = {},
): Promise<ResultWritten> {
  if (typeof destination === 'string') {
    return writeOutputFile(
      destination,
      async (file) => {
        const stream = file.createWriteStream({ autoClose: false });
        const written = await readResultResourceTo(session, uri, stream, options);
        await new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
        return written;
      },
      options.signal ? { signal: options.signal } : {},
    );
  }
  const out = new DrainingWriter(destination);
  try {
    for await (const chunk of readResultChunks(session, uri, options)) {
      out.write(chunk);
      await out.drain();
    }
    return { bytes: out.bytes };
  } finally {
    out.release();
  }
}

/** Writes to a stream, waiting for `drain` when asked; the stream's error is thrown from {@link drain}. */
class DrainingWriter {
  bytes = 0;
  private full = false;
  private failed: Error | undefined;
  private readonly onError = (error: Error): void => {
    this.failed ??= error;
  };

  constructor(private readonly stream: Writable) {
    stream.on('error', this.onError);
  }

  write(data: Buffer): void {
    if (this.failed) return;
    this.bytes += data.length;
    if (!this.stream.write(data)) this.full = true;
  }

  async drain(): Promise<void> {
    if (this.full && !this.failed) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          this.stream.off('drain', done);
          this.stream.off('error', done);
          this.stream.off('close', done);
          resolve();
        };
        this.stream.on('drain', done).on('error', done).on('close', done);
      });
      this.full = false;
    }
    if (this.failed) throw this.failed;
  }

  release(): void {
    this.stream.off('error', this.onError);
  }
}

/** The size of the result to read in chunks instead, when `error` is the server's `-31004` `read_in_chunks`. */
function readInChunks(error: unknown): { bytes: number } | undefined {
  if (!(error instanceof TasksProtocolError) || error.code !== ErrorCode.ResultReadTooLarge) return undefined;
  const data = error.data as { reason?: unknown; bytes?: unknown } | undefined;
  if (data?.reason !== ApplicationErrorReason.ReadInChunks || !Number.isSafeInteger(data.bytes)) return undefined;
  return { bytes: data.bytes as number };
}
