import { z } from 'zod';

import { ApplicationErrorReason, ErrorCode } from '../protocol/constants.js';
import { parseResultUri } from '../protocol/result-uri.js';
import { TasksProtocolError } from './errors.js';
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
 * @throws TasksProtocolError `-32602` when the caller may not read it or it is gone (the task expired), or for an
 *   answer that is not a tool result.
 */
export async function readResultResource(session: McpSession, uri: string): Promise<CallToolResult> {
  const read = async (target: string): Promise<{ text?: string; blob?: string }> =>
    (await session.request('resources/read', { uri: target }, ReadResourceResultSchema)).contents[0] as { text?: string; blob?: string };
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

/** The chunks to read instead, when `error` is the server's `-31004` `read_in_chunks`. */
function readInChunks(error: unknown): { chunks: number; chunkUri: string } | undefined {
  if (!(error instanceof TasksProtocolError) || error.code !== ErrorCode.ResultReadTooLarge) return undefined;
  const data = error.data as { reason?: unknown; chunks?: unknown; chunkUri?: unknown } | undefined;
  if (data?.reason !== ApplicationErrorReason.ReadInChunks || typeof data.chunks !== 'number' || typeof data.chunkUri !== 'string') return undefined;
  return { chunks: data.chunks, chunkUri: data.chunkUri };
}
