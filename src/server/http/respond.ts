import type { ServerResponse } from 'node:http';

/** Write a JSON-RPC error response with an explicit HTTP status (our own answers, outside the SDK). */
export function writeJsonRpcError(
  response: ServerResponse,
  status: number,
  id: string | number | null,
  code: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  response.end(body);
}
