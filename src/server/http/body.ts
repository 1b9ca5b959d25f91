import type { IncomingMessage } from 'node:http';

/** How much of an oversized body is read and dropped so the client can read our 413 instead of a reset. */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * Deepest nesting of arrays and objects a request body may have. Real MCP messages nest a few levels (params,
 * arguments, `_meta`); a body nested thousands deep made recursive code further on (serialisation, schema
 * validation) overflow the stack and answer HTTP 500 (found by the hostile-input fuzzer). Checked on the bytes
 * before parsing.
 */
export const MAX_JSON_DEPTH = 100;

/** Whether the JSON text in `body` nests arrays/objects deeper than `limit` (brackets inside strings do not count). */
export function nestsDeeperThan(body: Buffer, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i += 1) {
    const byte = body[i] as number;
    if (inString) {
      if (byte === 0x5c) i += 1; // backslash: skip the escaped byte
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) inString = true;
    else if (byte === 0x7b || byte === 0x5b) {
      depth += 1;
      if (depth > limit) return true;
    } else if (byte === 0x7d || byte === 0x5d) depth -= 1;
  }
  return false;
}

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
export type BodyFailure = { kind: 'too_large'; limitBytes: number } | { kind: 'invalid_json' } | { kind: 'too_deep'; limit: number };

/**
 * Read and parse a JSON request body, stopping as soon as it exceeds `limitBytes` (bytes); a body nested deeper
 * than {@link MAX_JSON_DEPTH} is refused unparsed.
 * @returns the parsed value (`undefined` for an empty body) or the failure.
 */
export async function readJsonBody(request: IncomingMessage, limitBytes: number): Promise<{ ok: true; value: unknown } | { ok: false; failure: BodyFailure }> {
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limitBytes) return tooLarge(request, limitBytes);
  const body = await collect(request, limitBytes);
  if (body === undefined) return tooLarge(request, limitBytes);
  if (body.length === 0) return { ok: true, value: undefined };
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) return { ok: false, failure: { kind: 'too_deep', limit: MAX_JSON_DEPTH } };
  try {
    return { ok: true, value: JSON.parse(body.toString('utf8')) };
  } catch {
    return { ok: false, failure: { kind: 'invalid_json' } };
  }
}
