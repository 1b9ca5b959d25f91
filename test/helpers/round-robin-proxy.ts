import { createServer, type IncomingMessage, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the proxy forwarded: to which backend (index into `targets`), with which JSON-RPC method. */
export interface ProxiedRequest {
  backend: number;
  httpMethod: string;
  /** JSON-RPC `method` of a POST body (`(response)` for a posted reply, `(batch)` for an array). */
  rpcMethod?: string;
  sessionId?: string;
}

/** A plain round-robin load balancer in front of several instances: no stickiness, no knowledge of MCP. */
export interface RoundRobinProxy {
  url: string;
  /** Every request forwarded so far, in arrival order. */
  readonly log: ProxiedRequest[];
  close(): Promise<void>;
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function rpcMethodOf(body: Buffer): string | undefined {
  try {
    const message = JSON.parse(body.toString('utf8')) as unknown;
    if (Array.isArray(message)) return '(batch)';
    const method = (message as { method?: unknown } | null)?.method;
    return typeof method === 'string' ? method : '(response)';
  } catch {
    return undefined;
  }
}

/**
 * Start a proxy on a free loopback port that sends request n to `targets[n % targets.length]` (each target an
 * `http://host:port/mcp` URL; the path of the incoming request is kept), streaming both ways so SSE answers and the
 * GET stream pass through as they are written. Closing the client side aborts the upstream request.
 */
export async function startRoundRobinProxy(targets: readonly string[]): Promise<RoundRobinProxy> {
  const log: ProxiedRequest[] = [];
  let next = 0;
  const server: Server = createServer((incoming, outgoing) => {
    const backend = next++ % targets.length;
    const target = new URL(targets[backend] as string);
    void readBody(incoming).then((body) => {
      const sessionId = incoming.headers['mcp-session-id'];
      log.push({
        backend,
        httpMethod: incoming.method ?? 'GET',
        ...(incoming.method === 'POST' ? { rpcMethod: rpcMethodOf(body) } : {}),
        ...(typeof sessionId === 'string' ? { sessionId } : {}),
      });
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: { ...incoming.headers, host: target.host } },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
        },
      );
      upstream.on('error', () => {
        if (!outgoing.headersSent) outgoing.writeHead(502).end();
        else outgoing.destroy();
      });
      outgoing.on('close', () => upstream.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    log,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
