import type { ServerResponse } from 'node:http';
import { StringDecoder } from 'node:string_decoder';

import type { JsonObject } from '../../core/task.js';
import type { ResultResource } from '../../service/tasks/result-reads.js';

/** Bytes of a chunk decoded, escaped and written at a time. */
const WRITE_SLICE_BYTES = 16 * 1024;

/** How the answer is framed: a JSON body (2026-07-28) or one SSE `message` event of a 2025 session. */
export type StreamFraming = 'json' | { sessionId: string };

/**
 * Answer `resources/read` of a large result by writing the JSON-RPC response incrementally (issue 10 §2): the
 * envelope up to the `text` string, then each chunk read from the store — UTF-8 decoded across chunk boundaries and
 * JSON-escaped — written as it comes (awaiting `drain`), then the rest of the result (`fields`: `ttlMs`,
 * `cacheScope`, `resultType`, `_meta`). The server holds one chunk at a time, never the whole result; the body is
 * sent with chunked transfer encoding (its length is not known before it is escaped).
 *
 * Why one `text` written incrementally rather than several `contents` blobs: a reader gets the whole
 * `CallToolResult` JSON as one document, exactly as the tool returned it, with any JSON-RPC client; several blobs
 * would still make one response body, so they would not bound memory either.
 *
 * When the chunks end before `resource.bytes` (the task was deleted mid-way) or the client goes away, the response
 * is destroyed: the client sees a broken response, never a truncated result that parses.
 */
export async function streamResourceResult(
  response: ServerResponse,
  id: string | number,
  framing: StreamFraming,
  resource: ResultResource,
  fields: JsonObject,
): Promise<void> {
  const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"contents":[{"uri":${JSON.stringify(resource.uri)},"mimeType":${JSON.stringify(resource.mimeType)},"text":"`;
  const rest = JSON.stringify(fields);
  const tail = rest === '{}' ? '"}]}}' : `"}],${rest.slice(1)}}`;
  if (framing === 'json') response.writeHead(200, { 'content-type': 'application/json' });
  else
    response.writeHead(200, {
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'content-type': 'text/event-stream',
      'mcp-session-id': framing.sessionId,
      'x-accel-buffering': 'no',
    });
  const [prefix, suffix] = framing === 'json' ? ['', ''] : ['event: message\ndata: ', '\n\n'];
  if (!(await write(response, prefix + head))) return;
  const decoder = new StringDecoder('utf8');
  let bytes = 0;
  for await (const chunk of resource.chunks()) {
    bytes += chunk.byteLength;
    // In slices: short-lived strings stay in V8's young generation (scavenged at once); a chunk-sized string would
    // be a large object, kept until a full GC, and 64 MiB of them would pile up.
    for (let offset = 0; offset < chunk.byteLength; offset += WRITE_SLICE_BYTES) {
      const text = decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset + offset, Math.min(WRITE_SLICE_BYTES, chunk.byteLength - offset)));
      if (!(await write(response, JSON.stringify(text).slice(1, -1)))) return;
    }
  }
  const last = decoder.end();
  if (bytes !== resource.bytes) {
    response.destroy(new Error(`result of task ${resource.taskId} ended after ${bytes} of ${resource.bytes} bytes`));
    return;
  }
  if (!(await write(response, `${last === '' ? '' : JSON.stringify(last).slice(1, -1)}${tail}${suffix}`))) return;
  response.end();
}

/** Write `text`, waiting for `drain` when the socket's buffer is full; `false` once the client has gone away. */
async function write(response: ServerResponse, text: string): Promise<boolean> {
  if (response.destroyed) return false;
  if (response.write(text)) return true;
  return new Promise<boolean>((resolve) => {
    const done = (drained: boolean) => () => {
      response.off('drain', onDrain);
      response.off('close', onClose);
      resolve(drained);
    };
    const onDrain = done(true);
    const onClose = done(false);
    response.once('drain', onDrain);
    response.once('close', onClose);
  });
}
