/**
 * One HTTP exchange with the server under test, captured as evidence: the request as sent (bearer tokens replaced
 * by their label) and the answer as received — status, the headers that matter, every JSON-RPC message of a JSON
 * or SSE body. Checks never talk to the server except through {@link postJsonRpc}, so every report carries what
 * was asked and what came back.
 */
import { sseMessages } from '../../client/v2-http.js';

/** A JSON-RPC response message. */
export interface JsonRpcResponse {
  jsonrpc?: string;
  id?: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

/** What was sent and what came back. */
export interface Exchange {
  /** ms since the check started. */
  at: number;
  request: { method: string; url: string; headers: Record<string, string>; body?: unknown };
  /** Absent when the transport failed before any answer (see `error`). */
  response?: { status: number; headers: Record<string, string>; messages: unknown[]; text?: string };
  /** Transport failure: connection refused or reset, timeout. */
  error?: string;
  durationMs: number;
}

/** Where evidence goes, and how tokens are shown in it. */
export interface Recorder {
  /** Milliseconds since the check started. */
  elapsed(): number;
  record(exchange: Exchange): void;
  /** The label a token is shown as (`token-a`, `token-b`); tokens never appear in evidence. */
  tokenLabel(token: string): string;
}

/** An answer to a POST: the HTTP status, the JSON-RPC response for the request's id (if any) and every message. */
export interface WireAnswer {
  status: number;
  headers: Headers;
  /** The JSON-RPC response to the request (matched by id; for notifications and parse failures: undefined). */
  response: JsonRpcResponse | undefined;
  /** Every JSON-RPC message of the body, in order (SSE streams may carry notifications and requests first). */
  messages: unknown[];
  /** The body when it was not JSON-RPC (an HTML error page, an empty 202). */
  text?: string;
  /** The recorded exchange (evidence), for a failure to point at. */
  exchange: Exchange;
}

/** The transport failed (refused, reset, timed out) — the server gave no answer. */
export class TransportError extends Error {
  override readonly name = 'TransportError';
  constructor(
    message: string,
    readonly exchange: Exchange,
  ) {
    super(message);
  }
}

const KEPT_RESPONSE_HEADERS = ['content-type', 'mcp-session-id', 'retry-after', 'www-authenticate', 'allow'];
/** Longest string kept in evidence (longer ones are cut, with their length noted). */
const EVIDENCE_STRING_LIMIT = 2048;

/** Options of {@link postJsonRpc}. */
export interface PostOptions {
  url: string;
  headers: Record<string, string>;
  /** A JSON-RPC message (serialised here) or a raw body string (for malformed-input checks). */
  body: unknown;
  signal: AbortSignal;
  /** Per-request bound (ms). @defaultValue 15000 */
  timeoutMs?: number;
  /**
   * Called for each message of an SSE answer as it arrives (server→client requests during `tasks/result`);
   * the answer resolves when the stream ends.
   */
  onMessage?: (message: unknown) => void | Promise<void>;
  method?: 'POST' | 'GET' | 'DELETE';
  /** Stop reading an SSE answer once this holds for a message (the stream is closed; the answer resolves). */
  stopWhen?: (message: unknown) => boolean;
  /** Read an SSE answer at most this long (ms), then close it and resolve with what arrived (listen streams). */
  readForMs?: number;
  /** Called once the answer's status and headers have arrived, before its body is read (a GET stream is open). */
  onOpen?: (status: number) => void;
}

/** Cut long strings so a report stays readable; structure is kept. */
export function trimForEvidence(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.length > EVIDENCE_STRING_LIMIT ? `${value.slice(0, EVIDENCE_STRING_LIMIT)}… (${value.length} chars)` : value;
  if (depth > 12 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.slice(0, 200).map((item) => trimForEvidence(item, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, trimForEvidence(item, depth + 1)]));
}

function shownHeaders(headers: Record<string, string>, recorder: Recorder): Record<string, string> {
  const shown: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const bearer = /^Bearer\s+(.+)$/i.exec(value);
    shown[name] = name.toLowerCase() === 'authorization' ? (bearer ? `Bearer <${recorder.tokenLabel(bearer[1] as string)}>` : '<redacted>') : value;
  }
  return shown;
}

function idOf(body: unknown): unknown {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { id?: unknown }).id : undefined;
}

function isResponseTo(message: unknown, id: unknown): message is JsonRpcResponse {
  if (typeof message !== 'object' || message === null) return false;
  const candidate = message as JsonRpcResponse & { method?: unknown };
  return (
    candidate.method === undefined && ('result' in candidate || 'error' in candidate) && (id === undefined || candidate.id === id || candidate.id === null)
  );
}

/**
 * POST one message (or GET/DELETE) and read the whole answer, JSON or SSE, recording the exchange.
 * @throws TransportError when no HTTP answer arrived (refused, reset, per-request timeout) — also recorded.
 * @throws the signal's reason when the check is aborted.
 */
export async function postJsonRpc(recorder: Recorder, options: PostOptions): Promise<WireAnswer> {
  const started = Date.now();
  const exchange: Exchange = {
    at: recorder.elapsed(),
    request: {
      method: options.method ?? 'POST',
      url: options.url,
      headers: shownHeaders(options.headers, recorder),
      ...(options.body === undefined
        ? {}
        : { body: trimForEvidence(typeof options.body === 'string' ? (safeParse(options.body) ?? options.body) : options.body) }),
    },
    durationMs: 0,
  };
  recorder.record(exchange);
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 15_000);
  const enough = new AbortController();
  const enoughTimer = options.readForMs === undefined ? undefined : setTimeout(() => enough.abort(), options.readForMs);
  const signal = AbortSignal.any([options.signal, timeout, enough.signal]);
  const id = idOf(options.body);
  const messages: unknown[] = [];
  try {
    const response = await fetch(options.url, {
      method: options.method ?? 'POST',
      headers: options.headers,
      ...(options.body === undefined ? {} : { body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) }),
      signal,
    });
    options.onOpen?.(response.status);
    const type = response.headers.get('content-type') ?? '';
    let text: string | undefined;
    if (type.includes('text/event-stream') && response.body) {
      try {
        for await (const message of sseMessages(response.body)) {
          messages.push(message);
          await options.onMessage?.(message);
          if ((isResponseTo(message, id) && id !== undefined) || options.stopWhen?.(message)) break;
        }
      } catch (error) {
        if (!enough.signal.aborted) throw error;
      }
    } else {
      text = await response.text();
      const parsed = safeParse(text);
      if (parsed !== undefined && typeof parsed === 'object' && parsed !== null) {
        messages.push(...(Array.isArray(parsed) ? parsed : [parsed]));
        text = undefined;
      }
    }
    const kept = Object.fromEntries(
      KEPT_RESPONSE_HEADERS.flatMap((name) => (response.headers.has(name) ? [[name, response.headers.get(name) as string]] : [])),
    );
    exchange.response = {
      status: response.status,
      headers: kept,
      messages: messages.map((message) => trimForEvidence(message)),
      ...(text ? { text: trimForEvidence(text) as string } : {}),
    };
    exchange.durationMs = Date.now() - started;
    clearTimeout(enoughTimer);
    return {
      status: response.status,
      headers: response.headers,
      response: messages.find((message) => isResponseTo(message, id)) as JsonRpcResponse | undefined,
      messages,
      ...(text !== undefined ? { text } : {}),
      exchange,
    };
  } catch (error) {
    clearTimeout(enoughTimer);
    exchange.durationMs = Date.now() - started;
    if (options.signal.aborted) {
      exchange.error = 'aborted (check timed out or finished)';
      throw options.signal.reason;
    }
    const reason = timeout.aborted ? `no answer within ${options.timeoutMs ?? 15_000} ms` : describeFetchError(error);
    exchange.error = reason;
    if (messages.length > 0) exchange.response = { status: 0, headers: {}, messages: messages.map((message) => trimForEvidence(message)) };
    throw new TransportError(reason, exchange);
  }
}

function describeFetchError(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ? `${cause.code}${cause.message ? `: ${cause.message}` : ''}` : error instanceof Error ? error.message : String(error);
}

function safeParse(text: string): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
