/**
 * Raw HTTP/1.1 exchanges with a server on loopback, for tests that must send what `fetch` will not: any method,
 * any header (or none: `fetch` adds `Accept: *\/*` and a `text/plain` Content-Type to string bodies), any body bytes
 * ({@link sendHttp}); and bytes on a bare socket for what even `node:http` will not send — duplicate headers,
 * hand-made chunked framing, a body shorter than its `Content-Length`, a request trickled in pieces
 * ({@link sendRawHttp}).
 */
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';

/** One raw HTTP exchange. */
export interface HttpAnswer {
  /** 0 when the server closed the connection without an answer (see `reset`). */
  status: number;
  /** The server reset the connection before answering (Node does that after a 431 for oversized headers). */
  reset?: boolean;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The JSON-RPC message of the answer (JSON body, or the last SSE `data:` message with a result or error). */
  message?: { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };
}

/** A request as the fuzzer builds it (the body is bytes: it may be anything). */
export interface HttpProbe {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer | string;
}

/** The JSON-RPC message of an answer body: the JSON itself, or the last SSE `data:` message with a result or error. */
export function parseAnswer(text: string, type: string): HttpAnswer['message'] {
  const candidates = type.includes('text/event-stream')
    ? text
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trim())
    : [text];
  const messages = candidates.flatMap((candidate) => {
    try {
      return [JSON.parse(candidate) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
  return ([...messages].reverse().find((message) => 'result' in message || 'error' in message) ?? messages[0]) as HttpAnswer['message'];
}

/**
 * Send one raw HTTP request to `port` (node:http, so that Host, Content-Type and every other header go out as
 * given) and read the whole answer.
 * @throws Error when no answer arrives within `timeoutMs` (a hang) or the connection fails.
 */
export function sendHttp(port: number, probe: HttpProbe, timeoutMs: number): Promise<HttpAnswer> {
  return new Promise((resolveAnswer, reject) => {
    const body = probe.body === undefined ? undefined : Buffer.isBuffer(probe.body) ? probe.body : Buffer.from(probe.body);
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: probe.method,
        path: probe.path,
        headers: { ...(body ? { 'content-length': String(body.length) } : {}), ...probe.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          resolveAnswer({ status: res.statusCode ?? 0, headers: res.headers, text, message: parseAnswer(text, String(res.headers['content-type'] ?? '')) });
        });
        res.on('error', reject);
      },
    );
    const timer = setTimeout(() => {
      req.destroy(new Error(`no answer within ${timeoutMs} ms (hang) to ${probe.method} ${probe.path}: ${String(body ?? '').slice(0, 200)}`));
    }, timeoutMs);
    req.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') resolveAnswer({ status: 0, reset: true, headers: {}, text: '' });
      else reject(error);
    });
    req.end(body);
  });
}

/** Bytes for {@link sendRawHttp}: written piece by piece, `pauseMs` apart; `halfClose` ends our side after the last. */
export interface RawRequest {
  pieces: Buffer[];
  pauseMs?: number;
  halfClose?: boolean;
  /**
   * Read nothing until every piece is written, as a busy client does: an answer the server sent early and then
   * reset the connection over (unread body bytes) is lost, as it is for such a client.
   */
  readAfterSending?: boolean;
}

/** Where the head of an answer ends, and its parsed status line and headers (names lower-cased, repeats joined). */
function parseHead(bytes: Buffer): { end: number; status: number; headers: Record<string, string> } | undefined {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  return { end: end + 4, status: Number(statusLine.split(' ')[1] ?? 0), headers };
}

/** The body of a chunked answer once its last chunk is in, else `undefined`. */
function dechunk(bytes: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size)) return undefined;
    if (size === 0) return Buffer.concat(parts);
    if (bytes.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/**
 * Write `request` on a fresh loopback socket to `port` and read one answer: complete by its `Content-Length`, its
 * last chunk, or the server closing the connection. Resolves `{status: 0, reset: true}` when the server closes or
 * resets the connection without an answer.
 * @throws Error when neither an answer nor a close comes within `timeoutMs` (a hang).
 */
export function sendRawHttp(port: number, request: RawRequest, timeoutMs: number): Promise<HttpAnswer> {
  return new Promise((resolveAnswer, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (error?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) return reject(error);
      const head = parseHead(received);
      if (!head) return resolveAnswer({ status: 0, reset: true, headers: {}, text: '' });
      const rest = received.subarray(head.end);
      const body = head.headers['transfer-encoding']?.includes('chunked') ? (dechunk(rest) ?? rest) : rest;
      const text = body.toString('utf8');
      resolveAnswer({ status: head.status, headers: head.headers, text, message: parseAnswer(text, head.headers['content-type'] ?? '') });
    };
    /** Whether the whole answer is in (then the rest of the connection does not matter). */
    const complete = (): boolean => {
      const head = parseHead(received);
      if (!head) return false;
      const rest = received.subarray(head.end);
      if (head.headers['content-length'] !== undefined) return rest.length >= Number(head.headers['content-length']);
      if (head.headers['transfer-encoding']?.includes('chunked')) return dechunk(rest) !== undefined;
      return head.status === 204 || head.status === 304 || (head.status >= 100 && head.status < 200);
    };
    const timer = setTimeout(
      () => finish(new Error(`no answer within ${timeoutMs} ms (hang): ${Buffer.concat(request.pieces).subarray(0, 200).toString('latin1')}`)),
      timeoutMs,
    );
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (complete()) finish();
    });
    socket.on('close', () => finish());
    socket.on('error', () => finish());
    if (request.readAfterSending) socket.pause();
    socket.once('connect', async () => {
      for (const [index, piece] of request.pieces.entries()) {
        if (settled || socket.destroyed) return;
        if (index > 0 && request.pauseMs) await new Promise((resolvePause) => setTimeout(resolvePause, request.pauseMs));
        await new Promise<void>((resolveWrite) => socket.write(piece, () => resolveWrite()));
      }
      if (request.halfClose && !socket.destroyed) socket.end();
      socket.resume();
    });
  });
}
