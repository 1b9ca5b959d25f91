/**
 * Raw HTTP/1.1 exchanges with a server on loopback, for tests that must send what `fetch` will not: any method,
 * any header (or none: `fetch` adds `Accept: *\/*` and a `text/plain` Content-Type to string bodies), any body bytes.
 */
import { request as httpRequest } from 'node:http';

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

function parseAnswer(text: string, type: string): HttpAnswer['message'] {
  const candidates = type.includes('text/event-stream')
    ? text.split('\n').filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trim())
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
      { host: '127.0.0.1', port, method: probe.method, path: probe.path, headers: { ...(body ? { 'content-length': String(body.length) } : {}), ...probe.headers }, agent: false },
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
