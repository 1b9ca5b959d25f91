import type { FetchLike } from '@modelcontextprotocol/client';

import { CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY, V2_PROTOCOL_VERSION } from '../protocol/constants.js';

/**
 * Raw 2026-07-28 Streamable HTTP requests, for the exchanges `@modelcontextprotocol/client` 2.4.0 cannot carry:
 * a `tools/call` answered with `resultType: "task"` (the SDK rejects it) and `subscriptions/listen` with the
 * Tasks Extension's `taskIds` filter (the SDK's filter type has no such field).
 */

/** Where and as whom raw requests go; mirrors what the SDK transport sends. */
export interface ModernEndpoint {
  url: URL;
  fetch: FetchLike;
  token?: string;
  headers?: Record<string, string>;
  clientInfo: { name: string; version: string };
  /** The `ClientCapabilities` for the per-request `_meta` envelope (B2), e.g. `{extensions:{…}, elicitation:{form:{}}}`. */
  capabilities: Record<string, unknown>;
}

const SENTINEL_PREFIX = '=?base64?';
const SENTINEL_SUFFIX = '?=';

/** SEP-2243 header value: plain printable ASCII as is, anything else (or sentinel look-alikes) as `=?base64?…?=`. */
export function encodeHeaderValue(value: string): string {
  const plain =
    value.length > 0 && value === value.trim() && /^[\t\x20-\x7e]*$/.test(value) && !(value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX));
  return plain ? value : `${SENTINEL_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${SENTINEL_SUFFIX}`;
}

/** The per-request `_meta` envelope of a 2026-07-28 request (B2). */
export function modernMeta(endpoint: ModernEndpoint): Record<string, unknown> {
  return {
    [PROTOCOL_VERSION_META_KEY]: V2_PROTOCOL_VERSION,
    [CLIENT_CAPABILITIES_META_KEY]: endpoint.capabilities,
    [CLIENT_INFO_META_KEY]: endpoint.clientInfo,
  };
}

/**
 * POST one JSON-RPC request with the 2026-07-28 headers (B25): `MCP-Protocol-Version`, `Mcp-Method`, and
 * `Mcp-Name` when `name` is given. Resolves with the HTTP response as it arrives (the body is not read).
 * @throws whatever `fetch` throws (network failure, abort).
 */
export function postModern(
  endpoint: ModernEndpoint,
  body: { id: string; method: string; params: Record<string, unknown> },
  options: { name?: string; signal: AbortSignal },
): Promise<Response> {
  // One Headers object, so a caller's `mcp-name` in any letter case cannot become a duplicate header (-32020).
  const headers = new Headers(endpoint.headers);
  headers.set('content-type', 'application/json');
  headers.set('accept', 'application/json, text/event-stream');
  headers.set('mcp-protocol-version', V2_PROTOCOL_VERSION);
  headers.set('mcp-method', body.method);
  if (options.name !== undefined) headers.set('mcp-name', encodeHeaderValue(options.name));
  if (endpoint.token !== undefined) headers.set('authorization', `Bearer ${endpoint.token}`);
  return endpoint.fetch(endpoint.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', ...body }), signal: options.signal });
}

/**
 * The JSON messages of an SSE body, one per event, in order; events whose data is not JSON are skipped. Ends with
 * the body; cancelling the iteration (break, return) cancels the body.
 */
export async function* sseMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      const lines = buffer.split(/\r\n|\r|\n/);
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        if (line === '') {
          const event = data.join('\n');
          data = [];
          if (event.length === 0) continue;
          let message: unknown;
          try {
            message = JSON.parse(event);
          } catch {
            continue; // not a JSON-RPC message
          }
          yield message;
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
        }
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
