import type { IncomingMessage } from 'node:http';

/**
 * Reading an HTTP request body within a limit: the one rule of every HTTP face of a process (the MCP endpoint, the
 * admin API, the dashboard). A body over the limit, or one refused unread (a wrong Content-Type), is drained before
 * the refusal is written: answering while the client is still sending makes many clients fail with
 * EPIPE/ECONNRESET and never see the 413/415 (found for the MCP endpoint first, then by the HTTP-layer fuzzer for
 * the admin API and the dashboard).
 */

/** How much of an oversized or refused body is read and dropped so the client can read the answer. */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * What reading a body gave: all of it; `too_large` (read and dropped up to {@link DRAIN_LIMIT_BYTES}: `drained`
 * says whether the client's sending ended, else the connection must close after the answer); or `aborted` (the
 * connection ended before the body did: a client gone, or one that sent less than its `Content-Length`).
 */
export type BodyRead = { kind: 'whole'; bytes: Buffer } | { kind: 'too_large'; drained: boolean } | { kind: 'aborted' };

/**
 * Read and drop the rest of a request body (up to {@link DRAIN_LIMIT_BYTES}) before refusing it. A client that
 * goes away meanwhile ends the drain.
 * @returns whether the whole body was read (`false`: close the connection after the answer).
 */
export async function discardBody(request: IncomingMessage): Promise<boolean> {
  let drained = 0;
  try {
    for await (const chunk of request as AsyncIterable<Buffer>) {
      drained += chunk.length;
      if (drained > DRAIN_LIMIT_BYTES) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * The body, stopping as soon as it exceeds `limitBytes` (declared by `Content-Length` or seen). Plain stream
 * events: a body is usually one chunk, and the async iterator costs more than the read itself.
 */
function collect(request: IncomingMessage, limitBytes: number): Promise<Buffer | 'too_large' | 'aborted'> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limitBytes) {
        cleanup();
        resolve('too_large');
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    };
    const onError = (): void => {
      cleanup();
      resolve('aborted');
    };
    const cleanup = (): void => {
      request.off('data', onData).off('end', onEnd).off('error', onError);
    };
    request.on('data', onData).on('end', onEnd).on('error', onError);
  });
}

/** Read the whole request body of at most `limitBytes` bytes (see {@link BodyRead}). */
export async function readRequestBody(request: IncomingMessage, limitBytes: number): Promise<BodyRead> {
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  const body = Number.isFinite(declared) && declared > limitBytes ? 'too_large' : await collect(request, limitBytes);
  if (body === 'aborted') return { kind: 'aborted' };
  if (body === 'too_large') return { kind: 'too_large', drained: await discardBody(request) };
  return { kind: 'whole', bytes: body };
}
