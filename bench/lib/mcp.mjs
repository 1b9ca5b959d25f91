// JSON-RPC over MCP Streamable HTTP for the load generator: both task generations, JSON or SSE answers, every answer
// checked (a benchmark that silently counts errors as work measures nothing).
import { HttpConnection } from './http-client.mjs';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
export const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const ACCEPT = 'application/json, text/event-stream';

/** A JSON-RPC error answer, or an HTTP/protocol failure. */
export class RpcError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

/** The JSON-RPC response in a body that is plain JSON or an SSE stream (notifications may come first). */
export function responseMessage(response) {
  if (!(response.headers['content-type'] ?? '').includes('text/event-stream')) {
    return response.body.length > 0 ? JSON.parse(response.body) : undefined;
  }
  let found;
  for (const line of response.body.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const message = JSON.parse(line.slice(5));
    if ('result' in message || 'error' in message) found = message;
  }
  return found;
}

/** POST one JSON-RPC message on `connection`; resolves with the result, throws {@link RpcError} otherwise. */
async function post(connection, path, headers, message) {
  const response = await connection.request('POST', path, headers, JSON.stringify(message));
  const answer = responseMessage(response);
  if (answer?.error) throw new RpcError(`${message.method}: ${answer.error.code} ${answer.error.message}`, answer.error.code);
  if (response.status !== 200 || !answer || !('result' in answer)) {
    throw new RpcError(`${message.method}: HTTP ${response.status} ${response.body.slice(0, 200)}`);
  }
  return { result: answer.result, response };
}

/** A 2026-07-28 requestor (stateless; per-request `_meta`, SEP-2243 headers). One connection, one request at a time. */
export class ModernClient {
  #connection;
  #path;
  #nextId = 1;

  /** `capabilities` defaults to declaring the Tasks Extension. */
  constructor(url, capabilities = { extensions: { [TASKS_EXTENSION]: {} } }) {
    const parsed = new URL(url);
    this.#connection = new HttpConnection(parsed.origin);
    this.#path = parsed.pathname;
    this.meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': capabilities,
      'io.modelcontextprotocol/clientInfo': { name: 'mcp-tasks-bench', version: '0' },
    };
  }

  /** The exact request body and headers `call` sends (the echo baseline replays them). */
  request(method, params) {
    const name = method === 'tools/call' ? params.name : method.startsWith('tasks/') ? params.taskId : undefined;
    const headers = { 'content-type': 'application/json', accept: ACCEPT, 'mcp-protocol-version': '2026-07-28', 'mcp-method': method };
    if (name !== undefined) headers['mcp-name'] = name;
    const message = { jsonrpc: '2.0', id: this.#nextId++, method, params: { ...params, _meta: this.meta } };
    return { headers, message };
  }

  async call(method, params = {}) {
    const { headers, message } = this.request(method, params);
    return (await post(this.#connection, this.#path, headers, message)).result;
  }

  close() {
    this.#connection.close();
  }
}

/** A 2025-11-25 session (initialize → Mcp-Session-Id → requests carrying it), as the SDK 1.x client speaks it. */
export class LegacySession {
  #connection;
  #path;
  #nextId = 1;
  #headers;

  constructor(url) {
    const parsed = new URL(url);
    this.#connection = new HttpConnection(parsed.origin);
    this.#path = parsed.pathname;
    this.#headers = { 'content-type': 'application/json', accept: ACCEPT };
  }

  /** `initialize` and `notifications/initialized`; afterwards every request carries the session id. */
  async open() {
    const params = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'mcp-tasks-bench', version: '0' } };
    const { response } = await post(this.#connection, this.#path, this.#headers, { jsonrpc: '2.0', id: 0, method: 'initialize', params });
    const sessionId = response.headers['mcp-session-id'];
    if (!sessionId) throw new RpcError('initialize: no Mcp-Session-Id');
    this.#headers = { ...this.#headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' };
    const notified = await this.#connection.request('POST', this.#path, this.#headers, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    if (notified.status !== 202) throw new RpcError(`notifications/initialized: HTTP ${notified.status}`);
    return this;
  }

  async call(method, params = {}) {
    return (await post(this.#connection, this.#path, this.#headers, { jsonrpc: '2.0', id: this.#nextId++, method, params })).result;
  }

  close() {
    this.#connection.close();
  }
}

/** A raw connection that POSTs prepared bodies (the echo baseline and anything else without MCP semantics). */
export class RawPoster {
  #connection;
  #path;

  constructor(url) {
    const parsed = new URL(url);
    this.#connection = new HttpConnection(parsed.origin);
    this.#path = parsed.pathname;
  }

  async post(headers, body) {
    const response = await this.#connection.request('POST', this.#path, headers, body);
    if (response.status !== 200) throw new RpcError(`HTTP ${response.status}`);
    return response;
  }

  close() {
    this.#connection.close();
  }
}
