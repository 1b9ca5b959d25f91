import { createServer, type IncomingMessage, type OutgoingHttpHeaders, request as httpRequest, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A loopback fault proxy for MCP over Streamable HTTP: it forwards every request to a target server and, when a
 * fault is armed, cuts the client's TCP connection at a protocol point — before an answer reaches the client (the
 * server did process the request), or right after it — and then stays "down" (every connection is reset at once)
 * for a while, as a network partition would. It understands just enough of the traffic to find those points: the
 * JSON-RPC methods of each POST body and the JSON-RPC answers in JSON or SSE response bodies.
 *
 * Used by the test suite and meant for `mcp-tasks verify`'s recovery gate; it binds to 127.0.0.1 only.
 */

/** A fault, armed with {@link FaultProxy.arm}; it fires once. */
export interface Fault {
  /** JSON-RPC method whose answer the fault waits for (e.g. `tools/call`, `tasks/get`, `tasks/cancel`). */
  method: string;
  /**
   * - `drop-answer`: the request reaches the server; its answer never reaches the client (connection reset);
   * - `after-answer`: the answer is delivered, then the connection is cut.
   */
  cut: 'drop-answer' | 'after-answer';
  /** Only an answer whose JSON-RPC `result` satisfies this (e.g. `status === 'completed'`); default: any answer. */
  when?: (result: Record<string, unknown>) => boolean;
  /** After the cut, every connection is reset for this long (ms); `0` heals at once. @defaultValue 0 */
  downMs?: number;
}

interface Armed extends Fault {
  fired: () => void;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer']);

/** A running fault proxy. */
export class FaultProxy {
  /** The proxy's URL: the target's path on the proxy's port. */
  readonly url: string;
  private readonly sockets = new Set<Socket>();
  private readonly counts = new Map<string, number>();
  private readonly faults: Armed[] = [];
  private downUntil = 0;
  private healTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly server: Server,
    private readonly target: URL,
  ) {
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}${target.pathname}${target.search}`;
  }

  /** Start a proxy on a free loopback port in front of `targetUrl` (an `http:` URL). */
  static async start(targetUrl: string): Promise<FaultProxy> {
    const target = new URL(targetUrl);
    if (target.protocol !== 'http:') throw new TypeError(`the fault proxy forwards to http: URLs only (got ${target.protocol})`);
    const holder: { proxy?: FaultProxy } = {};
    const server = createServer((request, response) => holder.proxy?.handle(request, response));
    server.keepAliveTimeout = 5000;
    server.on('connection', (socket) => {
      const proxy = holder.proxy;
      if (!proxy || proxy.isDown) return void socket.destroy();
      proxy.sockets.add(socket);
      socket.on('close', () => proxy.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    holder.proxy = new FaultProxy(server, target);
    return holder.proxy;
  }

  /** Whether connections are being reset right now. */
  get isDown(): boolean {
    return Date.now() < this.downUntil;
  }

  /** How many requests of a JSON-RPC method the proxy forwarded to the server (a batch counts each member). */
  forwarded(method: string): number {
    return this.counts.get(method) ?? 0;
  }

  /** Arm a fault; resolves when it fired. */
  arm(fault: Fault): Promise<void> {
    return new Promise((resolve) => this.faults.push({ ...fault, fired: resolve }));
  }

  /** Reset every open connection and every new one for `ms` (or until {@link heal}). */
  goDown(ms = Number.POSITIVE_INFINITY): void {
    this.downUntil = Date.now() + ms;
    clearTimeout(this.healTimer);
    if (Number.isFinite(ms)) this.healTimer = setTimeout(() => this.heal(), ms).unref();
    for (const socket of this.sockets) socket.destroy();
  }

  /** Accept connections again. */
  heal(): void {
    clearTimeout(this.healTimer);
    this.downUntil = 0;
  }

  /** Stop the proxy and reset every connection. */
  async close(): Promise<void> {
    clearTimeout(this.healTimer);
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    if (this.isDown) return void request.socket.destroy();
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const requests = jsonRpcRequests(body);
      for (const { method } of requests) this.counts.set(method, (this.counts.get(method) ?? 0) + 1);
      const fault = this.faults.find((candidate) => requests.some((rpc) => rpc.method === candidate.method));
      const ids = new Set(requests.filter((rpc) => fault && rpc.method === fault.method).map((rpc) => rpc.id));
      this.forward(request, body, response, fault, ids);
    });
  }

  private forward(request: IncomingMessage, body: Buffer, response: ServerResponse, fault: Armed | undefined, ids: Set<unknown>): void {
    const headers = Object.fromEntries(Object.entries(request.headers).filter(([name]) => !HOP_BY_HOP.has(name)));
    const upstream = httpRequest(
      { host: this.target.hostname, port: this.target.port, path: request.url, method: request.method, headers: { ...headers, host: this.target.host } },
      (answer) => {
        const type = String(answer.headers['content-type'] ?? '');
        const passHeaders: OutgoingHttpHeaders = Object.fromEntries(
          Object.entries(answer.headers).filter(([name]) => !HOP_BY_HOP.has(name) && name !== 'content-length'),
        );
        if (!fault) {
          response.writeHead(answer.statusCode ?? 502, passHeaders);
          answer.pipe(response);
          return;
        }
        if (type.includes('text/event-stream')) this.relayEvents(answer, response, passHeaders, fault, ids);
        else this.relayJson(answer, response, passHeaders, fault, ids);
      },
    );
    upstream.on('error', () => response.socket?.destroy());
    response.on('close', () => upstream.destroy());
    upstream.end(body);
  }

  /** A JSON answer: read it whole, then deliver it or cut. */
  private relayJson(answer: IncomingMessage, response: ServerResponse, headers: OutgoingHttpHeaders, fault: Armed, ids: Set<unknown>): void {
    const chunks: Buffer[] = [];
    answer.on('data', (chunk: Buffer) => chunks.push(chunk));
    answer.on('end', () => {
      const text = Buffer.concat(chunks);
      const hit = answersIn(text.toString('utf8')).some((message) => this.matches(fault, ids, message));
      if (hit && fault.cut === 'drop-answer') return this.fire(fault, response);
      response.writeHead(answer.statusCode ?? 502, { ...headers, 'content-length': String(text.length) });
      response.end(text, () => {
        if (hit) this.fire(fault, response);
      });
    });
  }

  /** An SSE answer: relay event by event; the matching answer event is dropped or followed by the cut. */
  private relayEvents(answer: IncomingMessage, response: ServerResponse, headers: OutgoingHttpHeaders, fault: Armed, ids: Set<unknown>): void {
    response.writeHead(answer.statusCode ?? 502, headers);
    let buffer = '';
    answer.setEncoding('utf8');
    answer.on('data', (chunk: string) => {
      buffer += chunk;
      for (;;) {
        const end = buffer.search(/\r?\n\r?\n/);
        if (end < 0) return;
        const separator = buffer.slice(end).match(/^\r?\n\r?\n/)?.[0].length ?? 2;
        const event = buffer.slice(0, end + separator);
        buffer = buffer.slice(end + separator);
        const data = event
          .split(/\r?\n/)
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).trimStart())
          .join('\n');
        const hit = answersIn(data).some((message) => this.matches(fault, ids, message));
        if (hit && fault.cut === 'drop-answer') return this.fire(fault, response);
        response.write(event);
        if (hit) return void response.write('', () => this.fire(fault, response));
      }
    });
    answer.on('end', () => response.end(buffer));
  }

  private matches(fault: Armed, ids: Set<unknown>, message: Record<string, unknown>): boolean {
    if (!this.faults.includes(fault) || !ids.has(message.id)) return false;
    const result = message.result;
    if (typeof result !== 'object' || result === null) return fault.when === undefined && message.error !== undefined;
    return fault.when ? fault.when(result as Record<string, unknown>) : true;
  }

  private fire(fault: Armed, response: ServerResponse): void {
    const index = this.faults.indexOf(fault);
    if (index < 0) return;
    this.faults.splice(index, 1);
    response.socket?.destroy();
    if ((fault.downMs ?? 0) > 0) this.goDown(fault.downMs);
    fault.fired();
  }
}

/** The JSON-RPC requests (with an id or not) of a POST body; empty when it is not JSON-RPC. */
function jsonRpcRequests(body: Buffer): Array<{ method: string; id: unknown }> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return [];
  }
  return (Array.isArray(parsed) ? parsed : [parsed]).flatMap((message) =>
    typeof message === 'object' && message !== null && typeof (message as { method?: unknown }).method === 'string'
      ? [{ method: (message as { method: string }).method, id: (message as { id?: unknown }).id }]
      : [],
  );
}

/** The JSON-RPC messages in a text (one message or a batch); empty when it is not JSON. */
function answersIn(text: string): Array<Record<string, unknown>> {
  try {
    const parsed = JSON.parse(text) as unknown;
    return (Array.isArray(parsed) ? parsed : [parsed]).filter((message): message is Record<string, unknown> => typeof message === 'object' && message !== null);
  } catch {
    return [];
  }
}
