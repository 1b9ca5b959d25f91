/**
 * Incremental Server-Sent Events reading for tests that must act while a stream is still open (a `tasks/result`
 * stream carrying an `elicitation/create`, a `subscriptions/listen` stream, a legacy session's GET stream), plus a
 * raw 2025-11-25 session over fetch for tests that must speak the wire themselves (replies after a restart).
 * `readJsonRpc` in `wire.ts` reads whole bodies; these read message by message.
 */
import { modernMeta, readJsonRpc, type WireResponse } from './wire.js';

/** The JSON-RPC messages of an SSE body, as they arrive. */
export class SseMessages {
  /** Every message parsed so far, in arrival order. */
  readonly messages: Array<Record<string, unknown>> = [];
  private ended = false;
  private failure: unknown;
  private readonly listeners = new Set<() => void>();

  constructor(body: ReadableStream<Uint8Array>) {
    void this.pump(body);
  }

  /** Whether the stream has ended (closed by either side, or failed). */
  get done(): boolean {
    return this.ended;
  }

  /**
   * The first message at index ≥ `from` that `match` accepts; waits for it. The deadline only stops a hung test
   * (no timing is asserted); it throws with every message seen so far.
   */
  async waitFor(
    match: (message: Record<string, unknown>) => boolean,
    options: { from?: number; timeoutMs?: number; what?: string } = {},
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + (options.timeoutMs ?? 20_000);
    for (;;) {
      const found = this.messages.slice(options.from ?? 0).find(match);
      if (found) return found;
      if (this.ended)
        throw new Error(
          `${options.what ?? 'message'} not received before the stream ended${this.failure ? ` (${String(this.failure)})` : ''}; got ${JSON.stringify(this.messages)}`,
        );
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`${options.what ?? 'message'} not received; got ${JSON.stringify(this.messages)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(remaining, 250));
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        this.listeners.add(done);
      });
    }
  }

  private wake(): void {
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) listener();
  }

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          this.event(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf('\n\n');
        }
      }
      if (buffer.trim().length > 0) this.event(buffer);
    } catch (error) {
      this.failure = error;
    } finally {
      this.ended = true;
      this.wake();
    }
  }

  private event(block: string): void {
    const data = block
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n');
    if (data.trim().length === 0) return;
    this.messages.push(JSON.parse(data) as Record<string, unknown>);
    this.wake();
  }
}

/** An open HTTP response whose body is read as SSE (or a plain JSON answer when the server did not stream). */
export interface OpenStream {
  status: number;
  headers: Headers;
  /** Present when the server answered with `text/event-stream`. */
  sse?: SseMessages;
  /** Present when the server answered with anything else (e.g. a JSON error). */
  json?: WireResponse;
  /** Abort the request (the client side closes the stream). */
  close(): void;
}

/** POST `body` with `headers` and keep the answer open as a stream. */
export async function openStream(url: string, body: unknown, headers: Record<string, string>): Promise<OpenStream> {
  const controller = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  return asOpenStream(response, controller);
}

/** `response` read as SSE when it streams, else as one JSON-RPC answer; closing aborts `controller`. */
async function asOpenStream(response: Response, controller: AbortController): Promise<OpenStream> {
  const close = (): void => controller.abort();
  if ((response.headers.get('content-type') ?? '').includes('text/event-stream') && response.body) {
    return { status: response.status, headers: response.headers, sse: new SseMessages(response.body), close };
  }
  return { status: response.status, headers: response.headers, json: await readJsonRpc(response), close };
}

/**
 * Open a 2026-07-28 `subscriptions/listen` stream with the SEP-2243 headers. `capabilities` defaults to declaring
 * the Tasks Extension; `id` is the listen request id (= the subscription id of every message on the stream).
 */
export function openListen(
  url: string,
  notifications: Record<string, unknown>,
  options: { id: string | number; capabilities?: object; token?: string },
): Promise<OpenStream> {
  const body = { jsonrpc: '2.0', id: options.id, method: 'subscriptions/listen', params: { notifications, _meta: modernMeta(options.capabilities) } };
  return openStream(url, body, {
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'subscriptions/listen',
    ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
  });
}

/**
 * A 2025-11-25 session spoken raw over fetch: `initialize` (with the given client capabilities), then
 * `notifications/initialized`; requests carry `Mcp-Session-Id` and `MCP-Protocol-Version`. Lets a test read a
 * server→client request off a `tasks/result` stream and send the client's reply itself (e.g. after a restart).
 */
export class RawLegacySession {
  private nextId = 1;

  private constructor(
    readonly url: string,
    readonly sessionId: string,
    private readonly token: string | undefined,
  ) {}

  /** Initialise a new session at `url`. */
  static async open(url: string, options: { capabilities?: object; token?: string } = {}): Promise<RawLegacySession> {
    const auth: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
    const init = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: options.capabilities ?? {}, clientInfo: { name: 'raw-legacy-e2e', version: '0' } },
      }),
    });
    const sessionId = init.headers.get('mcp-session-id');
    const answer = await readJsonRpc(init);
    if (!sessionId || !answer.body.result) throw new Error(`initialize failed (HTTP ${answer.status}): ${JSON.stringify(answer.body)}`);
    const session = new RawLegacySession(url, sessionId, options.token);
    const initialized = await session.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    if (initialized.status !== 202) throw new Error(`notifications/initialized answered HTTP ${initialized.status}`);
    return session;
  }

  /** Headers of every request of this session (`sessionId` overrides the session id, e.g. a stale one). */
  headers(sessionId = this.sessionId): Record<string, string> {
    return {
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-11-25',
      ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
    };
  }

  /** POST one message (request, notification or response) and read the whole answer. */
  async post(message: unknown, options: { url?: string; sessionId?: string } = {}): Promise<WireResponse> {
    const response = await fetch(options.url ?? this.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...this.headers(options.sessionId) },
      body: JSON.stringify(message),
    });
    return readJsonRpc(response);
  }

  /** One request, its whole answer read. */
  request(method: string, params: Record<string, unknown> = {}): Promise<WireResponse> {
    return this.post({ jsonrpc: '2.0', id: this.nextId++, method, params });
  }

  /** Open the session's GET stream (standalone SSE) at `url` (default: the session's URL). */
  async getStream(url = this.url): Promise<OpenStream> {
    const controller = new AbortController();
    const response = await fetch(url, { method: 'GET', headers: { accept: 'text/event-stream', ...this.headers() }, signal: controller.signal });
    return asOpenStream(response, controller);
  }

  /** One request whose answer stays open as a stream (e.g. `tasks/result`). */
  stream(method: string, params: Record<string, unknown> = {}): Promise<OpenStream> {
    return openStream(this.url, { jsonrpc: '2.0', id: this.nextId++, method, params }, this.headers());
  }
}
