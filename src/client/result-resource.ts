import type { Writable } from 'node:stream';

import { z } from 'zod';

import { ApplicationErrorReason, ErrorCode } from '../protocol/constants.js';
import { parseResultUri } from '../protocol/result-uri.js';
import { writeFileAtomically } from './atomic-file.js';
import { TaskNotFoundError, TasksProtocolError } from './errors.js';
import { type TextDiversion, withTextDiversion } from './result-stream.js';
import type { McpSession } from './session.js';
import type { CallToolResult } from './types.js';
import { CallToolResultSchema, toCallToolResult } from './wire-schemas.js';

/** A `ReadResourceResult` as far as a result resource needs it: its one content, JSON `text` or base64 `blob`. */
const ReadResourceResultSchema = z.looseObject({
  contents: z.array(z.looseObject({ uri: z.string(), text: z.string().optional(), blob: z.string().optional() })).min(1),
});

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
 * The whole result behind a result resource (`resources/read` of `uri`): in one answer where the server sends it
 * whole (over HTTP it streams it), else chunk by chunk when it answers `-31004` `read_in_chunks` (`data.chunks`,
 * `data.chunkUri`), so no answer is larger than a chunk.
 * @throws TaskNotFoundError (`code` `-32602`) when the caller may not read it or it is gone (the task expired or
 *   was purged); TasksProtocolError for an answer that is not a tool result.
 */
export async function readResultResource(session: McpSession, uri: string): Promise<CallToolResult> {
  const read = (target: string): Promise<{ text?: string; blob?: string }> => readContent(session, target);
  let text: string;
  try {
    const whole = await read(uri);
    text = whole.text ?? Buffer.from(whole.blob ?? '', 'base64').toString('utf8');
  } catch (error) {
    const chunked = readInChunks(error);
    if (!chunked) throw error;
    const parts: Buffer[] = [];
    for (let index = 0; index < chunked.chunks; index += 1) {
      const chunk = await read(chunked.chunkUri.replace('{index}', String(index)));
      parts.push(chunk.blob === undefined ? Buffer.from(chunk.text ?? '', 'utf8') : Buffer.from(chunk.blob, 'base64'));
    }
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

/**
 * Like {@link readResultResource}, without holding the result: its JSON text (the whole `CallToolResult`, UTF-8, as
 * the server keeps it; not parsed here) goes to `destination` as it arrives — from the HTTP answer's body as it is
 * read (the server's fast path streams it), or chunk by chunk when the server answers `-31004` `read_in_chunks`.
 * Memory stays at a piece of the answer, whatever the result's size; a destination that does not keep up slows the
 * read (its `drain` is awaited).
 * @param destination a stream (left open: the caller ends it), or a file path: the file appears only once the whole
 *   result is in it (written next to it, then renamed), and a failed read leaves none behind.
 * @throws TaskNotFoundError (`code` `-32602`) when the caller may not read it or it is gone (the task expired or
 *   was purged); a
 *   TasksConnectionError when the answer broke off (the server ends it when the result is deleted while it is sent);
 *   the destination's own errors.
 */
export async function readResultResourceTo(session: McpSession, uri: string, destination: Writable | string): Promise<ResultWritten> {
  if (typeof destination === 'string') {
    return writeFileAtomically(destination, async (file) => {
      const stream = file.createWriteStream({ autoClose: false });
      const written = await readResultResourceTo(session, uri, stream);
      await new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
      return written;
    });
  }
  const out = new DrainingWriter(destination);
  try {
    const diversion: TextDiversion = { uri, diverted: false, text: (piece) => out.write(Buffer.from(piece, 'utf8')), drain: () => out.drain() };
    let whole: { text?: string; blob?: string } | undefined;
    try {
      whole = await withTextDiversion(diversion, () => readContent(session, uri));
    } catch (error) {
      const chunked = readInChunks(error);
      if (!chunked) throw error;
      for (let index = 0; index < chunked.chunks; index += 1) {
        const chunk = await readContent(session, chunked.chunkUri.replace('{index}', String(index)));
        out.write(chunk.blob === undefined ? Buffer.from(chunk.text ?? '', 'utf8') : Buffer.from(chunk.blob, 'base64'));
        await out.drain();
      }
    }
    // Not diverted: an answer that did not come over HTTP (or came whole in a blob), small by the server's bound.
    if (whole && !diversion.diverted) out.write(whole.text === undefined ? Buffer.from(whole.blob ?? '', 'base64') : Buffer.from(whole.text, 'utf8'));
    await out.drain();
    return { bytes: out.bytes };
  } finally {
    out.release();
  }
}

/**
 * One `resources/read`. The server answers `-32602` for a result it no longer keeps (its task expired or was purged)
 * as for one the caller may not read — one answer for both, so nothing leaks: a {@link TaskNotFoundError} of the
 * task the URI names.
 */
async function readContent(session: McpSession, uri: string): Promise<{ text?: string; blob?: string }> {
  try {
    return (await session.request('resources/read', { uri }, ReadResourceResultSchema)).contents[0] as { text?: string; blob?: string };
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

/** The chunks to read instead, when `error` is the server's `-31004` `read_in_chunks`. */
function readInChunks(error: unknown): { chunks: number; chunkUri: string } | undefined {
  if (!(error instanceof TasksProtocolError) || error.code !== ErrorCode.ResultReadTooLarge) return undefined;
  const data = error.data as { reason?: unknown; chunks?: unknown; chunkUri?: unknown } | undefined;
  if (data?.reason !== ApplicationErrorReason.ReadInChunks || typeof data.chunks !== 'number' || typeof data.chunkUri !== 'string') return undefined;
  return { chunks: data.chunks, chunkUri: data.chunkUri };
}
