import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isInitializeRequest, type AuthInfo, type McpServerFactory, type Server } from '@modelcontextprotocol/server';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import type { Logger } from '../../core/logger.js';
import { ErrorCode } from '../../protocol/constants.js';
import { isJsonRpcResponse } from '../v1-input.js';
import { writeJsonRpcError } from './respond.js';

interface Session {
  transport: NodeStreamableHTTPServerTransport;
  server: Server;
  ownerKey: string;
  lastSeenAt: number;
}

/**
 * The sessionful v1-generation (2025-11-25) leg: one SDK server and one streamable HTTP transport (POST, GET stream, DELETE) per
 * `Mcp-Session-Id`. Sessions carry no task state — tasks live in the store and are bound to the owner, so after a
 * restart an unknown session gets 404, the client initialises again and the same owner reads its old tasks.
 * A session is bound to the owner that created it; another owner presenting its id gets the same 404.
 */
export class LegacySessions {
  private readonly sessions = new Map<string, Session>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly factory: McpServerFactory,
    private readonly logger: Logger,
    private readonly idleMs: number,
    /** Most sessions kept at once; a new one closes the least recently used (sessions hold no task state). */
    private readonly maxSessions: number,
  ) {
    this.sweeper = setInterval(() => this.closeIdle(), Math.min(idleMs, 60_000));
    this.sweeper.unref();
  }

  /**
   * The SDK server of a live session of `ownerKey` (the fast path answers hot requests of it directly), marking
   * the session as used; `undefined` for an unknown session or another owner's.
   */
  lookup(sessionId: string, ownerKey: string): Server | undefined {
    return this.touch(sessionId, ownerKey)?.server;
  }

  /** The live session of `ownerKey`, marked as just used (Map order is recency order, so eviction takes the oldest). */
  private touch(sessionId: string, ownerKey: string): Session | undefined {
    const session = this.sessions.get(sessionId);
    if (!session || session.ownerKey !== ownerKey) return undefined;
    session.lastSeenAt = Date.now();
    this.sessions.delete(sessionId);
    this.sessions.set(sessionId, session);
    return session;
  }

  /** Number of open sessions. */
  get size(): number {
    return this.sessions.size;
  }

  /** Serve one legacy HTTP request (`parsedBody` already read by the front door). */
  async handle(request: IncomingMessage & { auth?: AuthInfo }, response: ServerResponse, parsedBody: unknown, ownerKey: string): Promise<void> {
    const sessionId = request.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = this.touch(sessionId, ownerKey);
      if (!session) {
        writeJsonRpcError(response, 404, null, -32001, 'Session not found');
        return;
      }
      await session.transport.handleRequest(request, response, parsedBody);
      return;
    }
    if (request.method === 'POST' && isJsonRpcResponse(parsedBody)) {
      writeJsonRpcError(response, 400, null, ErrorCode.InvalidRequest, 'Invalid request: a JSON-RPC response that answers no request of this server');
      return;
    }
    if (request.method !== 'POST' || !isInitializeRequest(parsedBody)) {
      writeJsonRpcError(response, 400, null, -32000, 'Bad Request: Mcp-Session-Id header is required');
      return;
    }
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        this.evictBeyond(this.maxSessions - 1);
        this.sessions.set(id, { transport, server, ownerKey, lastSeenAt: Date.now() });
      },
      onsessionclosed: (id) => {
        this.sessions.delete(id);
      },
    });
    const server = (await this.factory({ era: 'legacy', ...(request.auth ? { authInfo: request.auth } : {}) })) as Server;
    transport.onclose = () => {
      if (transport.sessionId) this.sessions.delete(transport.sessionId);
      void server.close().catch(() => {});
    };
    await server.connect(transport);
    await transport.handleRequest(request, response, parsedBody);
  }

  /** Close every session. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.allSettled(sessions.map((session) => session.transport.close()));
  }

  /** Close the least recently used sessions until at most `limit` remain. */
  private evictBeyond(limit: number): void {
    for (const [id, session] of this.sessions) {
      if (this.sessions.size <= limit) break;
      this.sessions.delete(id);
      this.logger.info({}, 'closing the least recently used legacy session (session limit reached)');
      void session.transport.close().catch(() => {});
    }
  }

  private closeIdle(): void {
    const cutoff = Date.now() - this.idleMs;
    for (const [id, session] of this.sessions) {
      if (session.lastSeenAt < cutoff) {
        this.sessions.delete(id);
        this.logger.info({}, 'closing idle legacy session');
        void session.transport.close().catch(() => {});
      }
    }
  }
}
