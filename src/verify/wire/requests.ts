/**
 * Raw JSON-RPC for both generations, as a client of any server: a 2025-11-25 session (`initialize`, then requests
 * carrying `Mcp-Session-Id` and `MCP-Protocol-Version`) and stateless 2026-07-28 requests (per-request `_meta`,
 * `Mcp-Method` / `Mcp-Name` headers). Nothing here judges an answer; checks do.
 */
import { encodeHeaderValue } from '../../client/v2-http.js';
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  TASKS_EXTENSION_ID,
  V1_PROTOCOL_VERSION,
  V2_PROTOCOL_VERSION,
} from '../../protocol/constants.js';
import { postJsonRpc, type Recorder, type WireAnswer } from './exchange.js';

/** Longest wait for a GET stream's headers before the requests that may answer on it go out (ms). */
const STREAM_OPEN_WAIT_MS = 2_000;

/** Where requests go and under which bounds. */
export interface Endpoint {
  url: string;
  recorder: Recorder;
  /** Aborts the requests; replaced by a fresh one for clean-up after a check ended. */
  signal: AbortSignal;
  /** Bound of one request (ms). */
  requestTimeoutMs: number;
}

/** The client identity verify announces. */
export const VERIFY_CLIENT_INFO = Object.freeze({ name: 'mcp-tasks-verify', version: '0.1.0' });
/** 2026-07-28 client capabilities declaring the Tasks Extension (E1) and form elicitation (so tasks may ask, E28). */
export const DECLARING_CAPABILITIES = Object.freeze({
  elicitation: Object.freeze({ form: Object.freeze({}) }),
  extensions: Object.freeze({ [TASKS_EXTENSION_ID]: Object.freeze({}) }),
});
/** 2026-07-28 client capabilities declaring only the Tasks Extension (no elicitation). */
export const EXTENSION_ONLY_CAPABILITIES = Object.freeze({ extensions: Object.freeze({ [TASKS_EXTENSION_ID]: Object.freeze({}) }) });
/** 2025-11-25 client capabilities: tasks (list, cancel) and form elicitation, so every v1 flow is allowed. */
export const V1_CLIENT_CAPABILITIES = Object.freeze({ tasks: Object.freeze({ list: {}, cancel: {} }), elicitation: Object.freeze({}) });

const ACCEPT = 'application/json, text/event-stream';
let nextRequestId = 1;

/** A fresh JSON-RPC request id (unique within this process). */
export function requestId(): number {
  return nextRequestId++;
}

function authHeader(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { authorization: `Bearer ${token}` };
}

/** Why a 2025-11-25 session could not be opened. */
export class SessionOpenError extends Error {
  override readonly name = 'SessionOpenError';
  constructor(
    message: string,
    readonly answer: WireAnswer | undefined,
  ) {
    super(message);
  }
}

/** Options of {@link V1Session.open}. */
export interface V1SessionOptions {
  token?: string;
  /** @defaultValue {@link V1_CLIENT_CAPABILITIES} */
  capabilities?: Record<string, unknown>;
  /** The version offered in `initialize`. @defaultValue 2025-11-25 */
  protocolVersion?: string;
}

/** A 2025-11-25 (or older) session opened with `initialize`. */
export class V1Session {
  private constructor(
    private readonly endpoint: Endpoint,
    private readonly token: string | undefined,
    /** The answer to `initialize`. */
    readonly initialize: WireAnswer,
    /** `Mcp-Session-Id` minted by the server, if any. */
    readonly sessionId: string | undefined,
    /** The protocol version the server chose. */
    readonly protocolVersion: string,
  ) {}

  /** The server's `InitializeResult.capabilities`. */
  get serverCapabilities(): Record<string, unknown> {
    return (this.initialize.response?.result?.capabilities as Record<string, unknown> | undefined) ?? {};
  }

  /**
   * `initialize` + `notifications/initialized`.
   * @throws SessionOpenError when the server answers anything but an `InitializeResult`.
   */
  static async open(endpoint: Endpoint, options: V1SessionOptions = {}): Promise<V1Session> {
    const offered = options.protocolVersion ?? V1_PROTOCOL_VERSION;
    const body = {
      jsonrpc: '2.0',
      id: requestId(),
      method: 'initialize',
      params: { protocolVersion: offered, capabilities: options.capabilities ?? V1_CLIENT_CAPABILITIES, clientInfo: VERIFY_CLIENT_INFO },
    };
    const answer = await postJsonRpc(endpoint.recorder, {
      url: endpoint.url,
      headers: { 'content-type': 'application/json', accept: ACCEPT, ...authHeader(options.token) },
      body,
      signal: endpoint.signal,
      timeoutMs: endpoint.requestTimeoutMs,
    });
    const result = answer.response?.result;
    if (answer.status !== 200 || !result || typeof result.protocolVersion !== 'string') {
      const why = answer.response?.error ? `error ${answer.response.error.code} "${answer.response.error.message}"` : `HTTP ${answer.status}`;
      throw new SessionOpenError(`initialize (${offered}) was answered with ${why}`, answer);
    }
    const session = new V1Session(endpoint, options.token, answer, answer.headers.get('mcp-session-id') ?? undefined, result.protocolVersion);
    await session.notify('notifications/initialized');
    return session;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      'content-type': 'application/json',
      accept: ACCEPT,
      'mcp-protocol-version': this.protocolVersion,
      ...(this.sessionId ? { 'mcp-session-id': this.sessionId } : {}),
      ...authHeader(this.token),
      ...extra,
    };
  }

  /** Send a request in this session and read the whole answer (an SSE stream until its response). */
  request(
    method: string,
    params?: Record<string, unknown>,
    options: { onMessage?: (message: unknown) => void | Promise<void>; timeoutMs?: number; headers?: Record<string, string> } = {},
  ): Promise<WireAnswer> {
    return postJsonRpc(this.endpoint.recorder, {
      url: this.endpoint.url,
      headers: this.headers(options.headers),
      body: { jsonrpc: '2.0', id: requestId(), method, ...(params === undefined ? {} : { params }) },
      signal: this.endpoint.signal,
      timeoutMs: options.timeoutMs ?? this.endpoint.requestTimeoutMs,
      ...(options.onMessage ? { onMessage: options.onMessage } : {}),
    });
  }

  /** Send a notification. */
  notify(method: string, params?: Record<string, unknown>): Promise<WireAnswer> {
    return postJsonRpc(this.endpoint.recorder, {
      url: this.endpoint.url,
      headers: this.headers(),
      body: { jsonrpc: '2.0', method, ...(params ? { params } : {}) },
      signal: this.endpoint.signal,
      timeoutMs: this.endpoint.requestTimeoutMs,
    });
  }

  /** Answer a server→client request (e.g. `elicitation/create`). */
  respond(id: unknown, result: Record<string, unknown>): Promise<WireAnswer> {
    return postJsonRpc(this.endpoint.recorder, {
      url: this.endpoint.url,
      headers: this.headers(),
      body: { jsonrpc: '2.0', id, result },
      signal: this.endpoint.signal,
      timeoutMs: this.endpoint.requestTimeoutMs,
    });
  }

  /**
   * Open the session's GET SSE stream (where a server may send its requests, R29/R55) and hand every message to
   * `onMessage` until `close()`; a server without one (405) or a failing stream is ignored. `ready` resolves once the
   * stream's headers arrived (or it failed, or after {@link STREAM_OPEN_WAIT_MS}): a request sent before may make the
   * server send on a stream it does not have yet, and a server may drop such a message (the SDK's transport does).
   */
  openStream(onMessage: (message: unknown) => void | Promise<void>): { ready: Promise<void>; close(): void } {
    const controller = new AbortController();
    const headers = this.headers();
    delete headers['content-type'];
    headers.accept = 'text/event-stream';
    let opened: () => void = () => undefined;
    const open = new Promise<void>((resolve) => (opened = resolve));
    void postJsonRpc(this.endpoint.recorder, {
      url: this.endpoint.url,
      headers,
      body: undefined,
      method: 'GET',
      signal: AbortSignal.any([this.endpoint.signal, controller.signal]),
      timeoutMs: 600_000,
      onMessage,
      onOpen: () => opened(),
    })
      .catch(() => undefined)
      .finally(() => opened());
    let timer: NodeJS.Timeout | undefined;
    const ready = Promise.race([open, new Promise<void>((resolve) => (timer = setTimeout(resolve, STREAM_OPEN_WAIT_MS)))]).finally(() => clearTimeout(timer));
    return { ready, close: () => controller.abort() };
  }

  /** End the session (HTTP DELETE); failures are ignored — the server may not support it. */
  async close(): Promise<void> {
    if (!this.sessionId || this.endpoint.signal.aborted) return;
    await postJsonRpc(this.endpoint.recorder, {
      url: this.endpoint.url,
      headers: this.headers(),
      body: undefined,
      method: 'DELETE',
      signal: this.endpoint.signal,
      timeoutMs: 2000,
    }).catch(() => undefined);
  }
}

/** Options of {@link v2Request}. */
export interface V2RequestOptions {
  token?: string;
  /** The `clientCapabilities` of `_meta`. @defaultValue {@link DECLARING_CAPABILITIES} */
  capabilities?: Record<string, unknown>;
  /** `_meta` entries to set; a `null` value removes the entry (for checks of missing fields). */
  meta?: Record<string, unknown>;
  /** Headers to set; a `null` value removes the header (for header checks). */
  headers?: Record<string, string | null>;
  timeoutMs?: number;
  onMessage?: (message: unknown) => void | Promise<void>;
  /** A raw body instead of the built one (malformed input). */
  rawBody?: string;
  /** Stop reading an SSE answer once this holds for a message. */
  stopWhen?: (message: unknown) => boolean;
  /** Read an SSE answer at most this long (ms), then close it. */
  readForMs?: number;
}

/** The name `Mcp-Name` carries for a method (B25, E38): the tool name or the task id. */
function nameOf(method: string, params: Record<string, unknown>): string | undefined {
  const name =
    method === 'tools/call' || method === 'prompts/get'
      ? params.name
      : method === 'resources/read'
        ? params.uri
        : method.startsWith('tasks/')
          ? params.taskId
          : undefined;
  return typeof name === 'string' ? name : undefined;
}

/** One stateless 2026-07-28 request with the per-request `_meta` envelope (B2) and the SEP-2243 headers (B25). */
export function v2Request(endpoint: Endpoint, method: string, params: Record<string, unknown> = {}, options: V2RequestOptions = {}): Promise<WireAnswer> {
  const meta: Record<string, unknown> = {
    [PROTOCOL_VERSION_META_KEY]: V2_PROTOCOL_VERSION,
    [CLIENT_CAPABILITIES_META_KEY]: options.capabilities ?? DECLARING_CAPABILITIES,
    [CLIENT_INFO_META_KEY]: VERIFY_CLIENT_INFO,
    ...((params._meta as Record<string, unknown> | undefined) ?? {}),
  };
  for (const [key, value] of Object.entries(options.meta ?? {})) {
    if (value === null) delete meta[key];
    else meta[key] = value;
  }
  const name = nameOf(method, params);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: ACCEPT,
    'mcp-protocol-version': V2_PROTOCOL_VERSION,
    'mcp-method': method,
    ...(name === undefined ? {} : { 'mcp-name': encodeHeaderValue(name) }),
    ...authHeader(options.token),
  };
  for (const [key, value] of Object.entries(options.headers ?? {})) {
    if (value === null) delete headers[key];
    else headers[key] = value;
  }
  const body = options.rawBody ?? { jsonrpc: '2.0', id: requestId(), method, params: { ...params, _meta: meta } };
  return postJsonRpc(endpoint.recorder, {
    url: endpoint.url,
    headers,
    body,
    signal: endpoint.signal,
    timeoutMs: options.timeoutMs ?? endpoint.requestTimeoutMs,
    ...(options.onMessage ? { onMessage: options.onMessage } : {}),
    ...(options.stopWhen ? { stopWhen: options.stopWhen } : {}),
    ...(options.readForMs === undefined ? {} : { readForMs: options.readForMs }),
  });
}
