// A minimal keep-alive HTTP/1.1 client on raw sockets: one connection, one request in flight at a time (no
// pipelining), bodies framed by content-length or chunked encoding (SSE answers to a POST arrive chunked and end
// when the answer has been sent).
//
// Why not `http.Agent` or fetch: on the 2-core machines this suite targets, the node:http client tops out at
// ~14k req/s against a bare echo server while raw sockets reach ~26–36k. With an Agent the load generator, not the
// server, would bound the echo baseline, and every ratio to it would look better than it is.
import net from 'node:net';

const CRLF = Buffer.from('\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');

/** One HTTP response: status, lower-cased headers and the body as a string. */
export class HttpResponse {
  constructor(status, headers, body) {
    this.status = status;
    this.headers = headers;
    this.body = body;
  }
}

function parseHead(text) {
  const lines = text.split('\r\n');
  const status = Number(lines[0].split(' ', 2)[1]);
  const headers = {};
  for (let i = 1; i < lines.length; i += 1) {
    const colon = lines[i].indexOf(':');
    if (colon > 0) headers[lines[i].slice(0, colon).trim().toLowerCase()] = lines[i].slice(colon + 1).trim();
  }
  return { status, headers };
}

/** A persistent connection to one `http://host:port`. Reconnects lazily after the server closed it while idle. */
export class HttpConnection {
  #host;
  #port;
  #socket;
  #connected;
  #pending;
  #buffer = Buffer.alloc(0);
  #closed = false;
  #hostHeader;

  constructor(origin) {
    const url = new URL(origin);
    this.#host = url.hostname;
    this.#port = Number(url.port);
    this.#hostHeader = url.host;
  }

  /**
   * Send one request and resolve with its complete response. Rejects when the connection fails or closes before
   * the response is complete (the caller counts that as an error; the next request reconnects).
   */
  async request(method, path, headers, body = '') {
    if (this.#pending) throw new Error('HttpConnection carries one request at a time');
    if (this.#closed) throw new Error('connection closed by the load generator');
    if (!this.#socket) this.#connect();
    await this.#connected;
    const payload = Buffer.from(body);
    let head = `${method} ${path} HTTP/1.1\r\nhost: ${this.#hostHeader}\r\ncontent-length: ${payload.length}\r\n`;
    for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
    return new Promise((resolve, reject) => {
      this.#pending = { resolve, reject, head: undefined, cursor: 0, parts: [] };
      this.#socket.write(Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), payload]));
    });
  }

  /** Close for good; a request in flight is rejected. */
  close() {
    this.#closed = true;
    this.#fail(new Error('connection closed by the load generator'));
    this.#socket?.destroy();
  }

  #connect() {
    const socket = net.connect(this.#port, this.#host);
    socket.setNoDelay(true);
    this.#socket = socket;
    this.#buffer = Buffer.alloc(0);
    this.#connected = new Promise((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    // A refused connect rejects `#connected`; keep that rejection from being reported as unhandled twice.
    this.#connected.catch(() => {});
    socket.on('data', (chunk) => this.#onData(chunk));
    socket.on('error', (error) => this.#fail(error));
    socket.on('close', () => {
      if (this.#socket === socket) this.#socket = undefined;
      this.#fail(new Error('connection closed by the server'));
    });
  }

  #fail(error) {
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.reject(error);
  }

  #onData(chunk) {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    const pending = this.#pending;
    if (!pending) return;
    if (!pending.head) {
      const end = this.#buffer.indexOf(HEAD_END);
      if (end < 0) return;
      pending.head = parseHead(this.#buffer.toString('latin1', 0, end));
      pending.cursor = end + 4;
      const { status, headers } = pending.head;
      if ((headers['transfer-encoding'] ?? '').includes('chunked')) pending.chunked = true;
      else pending.length = status === 204 || status === 304 ? 0 : Number(headers['content-length'] ?? NaN);
      if (!pending.chunked && Number.isNaN(pending.length)) {
        this.#fail(new Error('response without content-length or chunked encoding'));
        this.#socket?.destroy();
        return;
      }
    }
    const body = pending.chunked ? this.#readChunked(pending) : this.#readLength(pending);
    if (body === undefined) return;
    this.#pending = undefined;
    if ((pending.head.headers.connection ?? '').toLowerCase() === 'close') this.#socket?.destroy();
    pending.resolve(new HttpResponse(pending.head.status, pending.head.headers, body));
  }

  #readLength(pending) {
    const end = pending.cursor + pending.length;
    if (this.#buffer.length < end) return undefined;
    const body = this.#buffer.toString('utf8', pending.cursor, end);
    this.#buffer = this.#buffer.subarray(end);
    return body;
  }

  #readChunked(pending) {
    for (;;) {
      const lineEnd = this.#buffer.indexOf(CRLF, pending.cursor);
      if (lineEnd < 0) return undefined;
      const size = parseInt(this.#buffer.toString('latin1', pending.cursor, lineEnd), 16);
      if (size === 0) {
        // Last chunk: no trailers are sent by the servers measured here, so the message ends with one more CRLF.
        if (this.#buffer.length < lineEnd + 4) return undefined;
        const body = Buffer.concat(pending.parts).toString('utf8');
        this.#buffer = this.#buffer.subarray(lineEnd + 4);
        return body;
      }
      const dataEnd = lineEnd + 2 + size;
      if (this.#buffer.length < dataEnd + 2) return undefined;
      pending.parts.push(this.#buffer.subarray(lineEnd + 2, dataEnd));
      pending.cursor = dataEnd + 2;
    }
  }
}
