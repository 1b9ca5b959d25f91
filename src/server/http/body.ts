import type { IncomingMessage } from 'node:http';

/** Why a request body could not be read. */
export type BodyFailure = { kind: 'too_large'; limitBytes: number } | { kind: 'invalid_json' };

/**
 * Read and parse a JSON request body, stopping as soon as it exceeds `limitBytes` (bytes).
 * @returns the parsed value (`undefined` for an empty body) or the failure.
 */
export async function readJsonBody(request: IncomingMessage, limitBytes: number): Promise<{ ok: true; value: unknown } | { ok: false; failure: BodyFailure }> {
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limitBytes) return { ok: false, failure: { kind: 'too_large', limitBytes } };
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limitBytes) return { ok: false, failure: { kind: 'too_large', limitBytes } };
    chunks.push(chunk);
  }
  if (size === 0) return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
  } catch {
    return { ok: false, failure: { kind: 'invalid_json' } };
  }
}
