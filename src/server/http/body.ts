import type { IncomingMessage } from 'node:http';

import { readRequestBody } from '../../core/request-body.js';

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
      if (byte === 0x5c)
        i += 1; // backslash: skip the escaped byte
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) inString = true;
    else if (byte === 0x7b || byte === 0x5b) {
      depth += 1;
      if (depth > limit) return true;
    } else if (byte === 0x7d || byte === 0x5d) depth -= 1;
  }
  return false;
}

/** Why a request body could not be read (`aborted`: the connection ended first; nobody is left to answer). */
export type BodyFailure = { kind: 'too_large'; limitBytes: number } | { kind: 'invalid_json' } | { kind: 'too_deep'; limit: number } | { kind: 'aborted' };

/**
 * Read and parse a JSON request body, stopping as soon as it exceeds `limitBytes` (bytes); a body nested deeper
 * than {@link MAX_JSON_DEPTH} is refused unparsed.
 * @returns the parsed value (`undefined` for an empty body) or the failure.
 */
export async function readJsonBody(request: IncomingMessage, limitBytes: number): Promise<{ ok: true; value: unknown } | { ok: false; failure: BodyFailure }> {
  const read = await readRequestBody(request, limitBytes);
  if (read.kind === 'aborted') return { ok: false, failure: { kind: 'aborted' } };
  if (read.kind === 'too_large') return { ok: false, failure: { kind: 'too_large', limitBytes } };
  const body = read.bytes;
  if (body.length === 0) return { ok: true, value: undefined };
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) return { ok: false, failure: { kind: 'too_deep', limit: MAX_JSON_DEPTH } };
  try {
    return { ok: true, value: JSON.parse(body.toString('utf8')) };
  } catch {
    return { ok: false, failure: { kind: 'invalid_json' } };
  }
}
