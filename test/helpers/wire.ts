/** Raw JSON-RPC over HTTP for tests that assert exact wire shapes and HTTP statuses. */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** Client capabilities that declare the Tasks Extension. */
export const DECLARING = { extensions: { [TASKS_EXTENSION]: {} } };

/** The per-request `_meta` envelope of a 2026-07-28 request. */
export function modernMeta(capabilities: object = DECLARING): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/clientInfo': { name: 'wire-test', version: '0' },
  };
}

export interface WireResponse {
  status: number;
  headers: Headers;
  /** The JSON-RPC response (from JSON or the last SSE `data:` line carrying a response). */
  body: { jsonrpc: '2.0'; id: unknown; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } } & Record<string, unknown>;
  /** Every JSON-RPC message seen (SSE streams may carry notifications first). */
  messages: unknown[];
}

let nextId = 1;

/** Parse a fetch response that is either JSON or an SSE stream. */
export async function readJsonRpc(response: Response): Promise<WireResponse> {
  const text = await response.text();
  const type = response.headers.get('content-type') ?? '';
  let messages: unknown[] = [];
  if (type.includes('text/event-stream')) {
    messages = text
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trim())
      .filter((data) => data.length > 0)
      .map((data) => JSON.parse(data));
  } else if (text.length > 0) {
    try {
      messages = [JSON.parse(text)];
    } catch {
      messages = [{ raw: text }];
    }
  }
  const body = ([...messages].reverse().find((message) => typeof message === 'object' && message !== null && ('result' in message || 'error' in message)) ??
    messages[0] ??
    {}) as WireResponse['body'];
  return { status: response.status, headers: response.headers, body, messages };
}

/**
 * POST one 2026-07-28 request with the SEP-2243 headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`).
 * `capabilities` defaults to declaring the Tasks Extension; `headers` override or add headers.
 */
export async function postModern(
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  options: {
    capabilities?: object;
    headers?: Record<string, string>;
    token?: string;
    id?: string | number;
    /** Sees the raw response body (e.g. to scan every byte a client received). */
    onBody?: (body: Buffer, status: number) => void;
  } = {},
): Promise<WireResponse> {
  const name = method === 'tools/call' ? params.name : method.startsWith('tasks/') ? params.taskId : undefined;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
    ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    ...options.headers,
  };
  const body = {
    jsonrpc: '2.0',
    id: options.id ?? nextId++,
    method,
    params: { ...params, _meta: { ...modernMeta(options.capabilities), ...(params._meta as object | undefined) } },
  };
  const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  options.onBody?.(Buffer.from(await response.clone().arrayBuffer()), response.status);
  return readJsonRpc(response);
}

/** POST a raw body with the given headers (for malformed-input tests). */
export async function postRaw(url: string, body: string, headers: Record<string, string> = {}): Promise<WireResponse> {
  return readJsonRpc(
    await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body }),
  );
}

/** Poll `tasks/get` (v2) until the status is terminal or `until` matches; returns the last result. */
export async function pollModernTask(
  url: string,
  taskId: string,
  options: { token?: string; until?: (status: string) => boolean; timeoutMs?: number; onPoll?: (task: Record<string, unknown>) => void } = {},
): Promise<Record<string, unknown>> {
  const until = options.until ?? ((status: string) => ['completed', 'failed', 'cancelled'].includes(status));
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  for (;;) {
    const response = await postModern(url, 'tasks/get', { taskId }, options.token ? { token: options.token } : {});
    const result = response.body.result;
    if (!result) throw new Error(`tasks/get failed: ${JSON.stringify(response.body)}`);
    options.onPoll?.(result);
    if (until(String(result.status))) return result;
    if (Date.now() > deadline) throw new Error(`task ${taskId} still ${String(result.status)} after ${options.timeoutMs ?? 15_000} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
