import { ErrorCode } from '../../protocol/constants.js';

/**
 * HTTP status of JSON-RPC errors the base protocol fixes (2026-07-28 B26): `-32601` → 404,
 * `-32020/-32021/-32022` → 400. The SDK sets these for the errors its own validation ladder raises, but answers
 * errors thrown by our handlers with 200 (except `-32021`). This seam corrects the status of single JSON answers;
 * pinned to `@modelcontextprotocol/server` 2.4.0 by a contract test.
 */
const STATUS_BY_CODE: ReadonlyMap<number, number> = new Map([
  [ErrorCode.MethodNotFound, 404],
  [ErrorCode.HeaderMismatch, 400],
  [ErrorCode.MissingRequiredClientCapability, 400],
  [ErrorCode.UnsupportedProtocolVersion, 400],
]);

/** The spec's HTTP status for a JSON-RPC error code, or `undefined` when the spec leaves it open. */
function httpStatusForErrorCode(code: number): number | undefined {
  return STATUS_BY_CODE.get(code);
}

/** Return `response` with the spec's HTTP status when it is a 200 JSON body carrying one of those errors. */
export async function withSpecErrorStatus(response: Response): Promise<Response> {
  if (response.status !== 200 || !(response.headers.get('content-type') ?? '').includes('application/json')) return response;
  const text = await response.text();
  let status = 200;
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown } };
    const code = body?.error?.code;
    if (typeof code === 'number') status = httpStatusForErrorCode(code) ?? 200;
  } catch {
    // Not ours to judge: pass the body through untouched.
  }
  return new Response(text, { status, headers: response.headers });
}
