import type { IncomingMessage } from 'node:http';

/** How much of an oversized body is read and dropped so the client can read our 413 instead of a reset. */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * Discard the rest of an oversized body (up to {@link DRAIN_LIMIT_BYTES}), then report it: answering while the
 * client is still sending makes many clients fail with EPIPE/ECONNRESET and never see the 413.
 */
async function tooLarge(request: IncomingMessage, limitBytes: number): Promise<{ ok: false; failure: BodyFailure }> {
  let drained = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    drained += chunk.length;
    if (drained > DRAIN_LIMIT_BYTES) break;
  }
  return { ok: false, failure: { kind: 'too_large', limitBytes } };
}

/**
 * The whole body, or `undefined` as soon as it exceeds `limitBytes` (the rest stays unread). Plain stream events:
 * a body is usually one chunk, and the async iterator costs more than the read itself.
 */
function collect(request: IncomingMessage, limitBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limitBytes) {
        cleanup();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(error);
    };
    const cleanup = (): void => {
      request.off('data', onData).off('end', onEnd).off('error', onError);
    };
    request.on('data', onData).on('end', onEnd).on('error', onError);
  });
}

/** Why a request body could not be read. */
export type BodyFailure = { kind: 'too_large'; limitBytes: number } | { kind: 'invalid_json' };

/**
 * Read and parse a JSON request body, stopping as soon as it exceeds `limitBytes` (bytes).
 * @returns the parsed value (`undefined` for an empty body) or the failure.
 */
export async function readJsonBody(request: IncomingMessage, limitBytes: number): Promise<{ ok: true; value: unknown } | { ok: false; failure: BodyFailure }> {
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limitBytes) return tooLarge(request, limitBytes);
  const body = await collect(request, limitBytes);
  if (body === undefined) return tooLarge(request, limitBytes);
  if (body.length === 0) return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(body.toString('utf8')) };
  } catch {
    return { ok: false, failure: { kind: 'invalid_json' } };
  }
}
