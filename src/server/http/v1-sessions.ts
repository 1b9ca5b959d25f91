import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

import { type NodeMcpRequestHandler, toNodeHandler } from '@modelcontextprotocol/node';
import { type AuthInfo, isInitializeRequest, type McpServerFactory, type Server, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';

import type { Logger } from '../../core/logger.js';
import type { SessionRecord, SessionStore } from '../../core/session-store.js';
import type { JsonObject } from '../../core/task.js';
import { ErrorCode } from '../../protocol/constants.js';
import { isJsonRpcResponse } from '../v1-elicitation.js';
import { writeJsonRpcError } from './respond.js';

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  serve: NodeMcpRequestHandler;
  server: Server;
  ownerKey: string;
  lastSeenAt: number;
  /** When this instance last wrote `lastSeenAt` to the store. */
  touchedAt: number;
}

/**
 * Called when a session's GET stream opened on this instance (HTTP 200, SSE); returns the function to call when it
 * ends (see `SessionStreams`).
 */
export type SessionStreamHook = (sessionId: string, server: Server, ownerKey: string, authInfo: AuthInfo | undefined) => () => void;

/** The first bytes of a GET stream: an SSE comment, which clients ignore. */
const STREAM_OPENED = new TextEncoder().encode(': stream open\n\n');

/** Id of the replayed `initialize` that rebuilds a session on another instance (its answer goes nowhere). */
const RESTORE_ID = 'mcp-tasks-restore';
/** How often the local copies are checked against the store, so a DELETE on another instance ends their streams (ms). */
const RECHECK_MS = 2_000;
/** Most sessions one statement of the recheck asks about. */
const RECHECK_BATCH = 500;

/**
 * The sessionful v1-generation (2025-11-25) leg: one SDK server and one streamable HTTP transport (POST, GET stream,
 * DELETE) per `Mcp-Session-Id`, rebuilt on demand on any instance (issue 11 item 5). The session record (owner,
 * negotiated version, the client's `initialize` params) is kept in the store when the session starts, so a request
 * of the session that reaches an instance which never saw it rebuilds the session there by replaying that
 * `initialize` into a fresh server and transport with the same id; every request checks the record — read first,
 * or, on the fast path's {@link held} sessions, in the request's first statement — so a DELETE on any instance
 * (which removes it) ends the session everywhere — other instances close their local copy at the next request or
 * within {@link RECHECK_MS}. Sessions carry no task state — tasks live in the store, bound
 * to the owner — so an id unknown to the store gets HTTP 404 and the client initialises again and reads its tasks.
 * A session is bound to the owner that created it; another owner presenting its id gets the same 404.
 */
export class LegacySessions {
  private readonly sessions = new Map<string, Session>();
  /** Sessions being rebuilt here, so concurrent requests of one session rebuild it once. */
  private readonly restoring = new Map<string, Promise<Session | undefined>>();
  /** Sessions the fast path resolved for a request it then left to {@link handle} (see {@link lookup}). */
  private readonly resolvedFor = new WeakMap<IncomingMessage, { sessionId: string; ownerKey: string; session: Session }>();
  private readonly timers: NodeJS.Timeout[] = [];
  private checking = false;

  constructor(
    private readonly factory: McpServerFactory,
    private readonly logger: Logger,
    private readonly idleMs: number,
    /** Most sessions kept at once; a new one closes the least recently used (sessions hold no task state). */
    private readonly maxSessions: number,
    private readonly store: SessionStore,
    /** Told of every GET stream opened here, so it can carry the session's tasks created on other instances. */
    private readonly onStream?: SessionStreamHook,
  ) {
    const sweeper = setInterval(() => void this.closeIdle(), Math.min(idleMs, 60_000));
    const recheck = setInterval(() => void this.recheck(), RECHECK_MS);
    sweeper.unref();
    recheck.unref();
    this.timers.push(sweeper, recheck);
  }

  /**
   * The SDK server of a live session of `ownerKey` (the fast path answers hot requests of it directly), rebuilt
   * here from the store if this instance does not hold it; `undefined` for an unknown session or another owner's.
   */
  async lookup(sessionId: string, ownerKey: string, authInfo?: AuthInfo, request?: IncomingMessage): Promise<Server | undefined> {
    const session = await this.resolve(sessionId, ownerKey, authInfo);
    // The same request, handed to `handle` when the fast path leaves it (a pending `tasks/result`), needs no second
    // read of the store (issue 25: one of three session reads of a PostgreSQL round trip).
    if (session && request) this.resolvedFor.set(request, { sessionId, ownerKey, session });
    return session?.server;
  }

  /**
   * The SDK server of a session of `ownerKey` held on this instance, marked as used, WITHOUT reading its record: the
   * caller must make the request's first statement check that the record still exists (`TaskScope.requireSession`,
   * `NewTask.requireSession`) — so a DELETE on any instance is honoured as by {@link lookup} — or fall back to
   * {@link handle}, which reads it. `undefined` when not held here (then use {@link lookup}).
   */
  held(sessionId: string, ownerKey: string): Server | undefined {
    return this.touch(sessionId, ownerKey)?.server;
  }

  /**
   * Whether the session's record still exists (a request served on {@link held} that did not reach a checking
   * statement reads it before it answers); when it does not, the local copy is closed.
   */
  async stillExists(sessionId: string): Promise<boolean> {
    if (await this.store.getSession(sessionId)) return true;
    this.ended(sessionId);
    return false;
  }

  /** Close the local copy of a session whose record a statement found gone. */
  ended(sessionId: string): void {
    this.drop(sessionId, 'legacy session ended elsewhere; closing the local copy');
  }

  /** Number of sessions open on this instance. */
  get size(): number {
    return this.sessions.size;
  }

  /** Serve one legacy HTTP request (`parsedBody` already read by the front door). */
  async handle(request: IncomingMessage & { auth?: AuthInfo }, response: ServerResponse, parsedBody: unknown, ownerKey: string): Promise<void> {
    const sessionId = request.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const resolved = this.resolvedFor.get(request);
      this.resolvedFor.delete(request);
      const session =
        resolved?.sessionId === sessionId && resolved.ownerKey === ownerKey && this.sessions.get(sessionId) === resolved.session
          ? resolved.session
          : await this.resolve(sessionId, ownerKey, request.auth);
      if (!session) {
        writeJsonRpcError(response, 404, null, ErrorCode.SessionNotFound, 'Session not found');
        return;
      }
      await session.serve(request, response, parsedBody);
      return;
    }
    if (request.method === 'POST' && isJsonRpcResponse(parsedBody)) {
      writeJsonRpcError(response, 400, null, ErrorCode.InvalidRequest, 'Invalid request: a JSON-RPC response that answers no request of this server');
      return;
    }
    if (request.method !== 'POST' || !isInitializeRequest(parsedBody)) {
      writeJsonRpcError(response, 400, null, ErrorCode.TransportRefused, 'Bad Request: Mcp-Session-Id header is required');
      return;
    }
    const initialize = (parsedBody as { params: JsonObject }).params;
    const session = await this.open(undefined, ownerKey, request.auth, async (id, server) => {
      // Written before the initialize answer leaves, so the client's next request finds it on any instance.
      const now = Date.now();
      const protocolVersion = server.getNegotiatedProtocolVersion() ?? String(initialize.protocolVersion);
      await this.store.putSession({ sessionId: id, ownerKey, protocolVersion, initialize, createdAt: now, lastSeenAt: now });
    });
    await session.serve(request, response, parsedBody);
  }

  /** Close every session held here (their records stay: other instances, or this one restarted, go on serving them). */
  async close(): Promise<void> {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.allSettled(sessions.map((session) => session.transport.close()));
  }

  /**
   * The session `sessionId` of `ownerKey`: the store decides whether it exists (a local copy of a session deleted
   * elsewhere is closed); held here, or rebuilt from its record.
   */
  private async resolve(sessionId: string, ownerKey: string, authInfo: AuthInfo | undefined): Promise<Session | undefined> {
    const record = await this.store.getSession(sessionId);
    if (!record) {
      this.drop(sessionId, 'legacy session ended elsewhere; closing the local copy');
      return undefined;
    }
    if (record.ownerKey !== ownerKey) return undefined;
    const local = this.touch(sessionId, ownerKey);
    if (local) return local;
    let restoring = this.restoring.get(sessionId);
    if (!restoring) {
      restoring = this.restore(record, authInfo).finally(() => this.restoring.delete(sessionId));
      this.restoring.set(sessionId, restoring);
    }
    return restoring;
  }

  /** Rebuild a session of another instance (or of this one before a restart) from its record. */
  private async restore(record: SessionRecord, authInfo: AuthInfo | undefined): Promise<Session | undefined> {
    const session = await this.open(record.sessionId, record.ownerKey, authInfo);
    const post = async (message: Record<string, unknown>): Promise<number> => {
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      if (message.method !== 'initialize') {
        headers['mcp-session-id'] = record.sessionId;
        headers['mcp-protocol-version'] = record.protocolVersion;
      }
      const body = JSON.stringify(message);
      const answer = await session.transport.handleRequest(new Request('http://localhost/mcp', { method: 'POST', headers, body }), {
        parsedBody: message,
        ...(authInfo ? { authInfo } : {}),
      });
      await answer.text();
      return answer.status;
    };
    const initialized = await post({ jsonrpc: '2.0', id: RESTORE_ID, method: 'initialize', params: record.initialize });
    const notified = initialized === 200 ? await post({ jsonrpc: '2.0', method: 'notifications/initialized' }) : initialized;
    if (initialized !== 200 || notified >= 300) {
      this.logger.warn({ status: initialized }, 'rebuilding a legacy session from its record failed');
      this.drop(record.sessionId, 'legacy session could not be rebuilt');
      return undefined;
    }
    this.logger.debug({}, 'legacy session rebuilt from the store');
    return session;
  }

  /**
   * A fresh server and transport for the session `sessionId` (minted when `undefined`), held here once initialised.
   * `recorded` runs inside the SDK's `onsessioninitialized`, before the initialize answer is sent.
   */
  private async open(
    sessionId: string | undefined,
    ownerKey: string,
    authInfo: AuthInfo | undefined,
    recorded?: (id: string, server: Server) => Promise<void>,
  ): Promise<Session> {
    const server = (await this.factory({ era: 'legacy', ...(authInfo ? { authInfo } : {}) })) as Server;
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => sessionId ?? randomUUID(),
      onsessioninitialized: async (id) => {
        await recorded?.(id, server);
        this.evictBeyond(this.maxSessions - 1);
        const now = Date.now();
        this.sessions.set(id, session);
        session.lastSeenAt = now;
        session.touchedAt = now;
      },
      // HTTP DELETE: the session ends on every instance.
      onsessionclosed: async (id) => {
        this.sessions.delete(id);
        await this.store.deleteSession(id);
      },
    });
    const fetch = async (request: Request, options?: { authInfo?: AuthInfo; parsedBody?: unknown }): Promise<Response> => {
      if (request.method === 'POST') cancelWhenClosed(transport, request.signal, options);
      const answer = await transport.handleRequest(request, options);
      if (request.method !== 'GET' || answer.status !== 200 || !answer.body || !transport.sessionId) return answer;
      // Hooked once the SDK holds the stream, so nothing pushed from here on is dropped for want of it.
      const ended = this.onStream?.(transport.sessionId, server, ownerKey, options?.authInfo);
      if (ended && request.signal.aborted) ended();
      else if (ended) request.signal.addEventListener('abort', ended, { once: true });
      // An SSE comment first (and the end of the SDK's stream, e.g. the session closed, also ends the hook): Node sends the headers with the first byte, so the client has its 200 at once
      // rather than at the first notification or keep-alive (up to 15 s later).
      const opened = answer.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({ start: (controller) => controller.enqueue(STREAM_OPENED), flush: () => ended?.() }),
      );
      return new Response(opened, { status: answer.status, statusText: answer.statusText, headers: answer.headers });
    };
    const session: Session = { transport, serve: toNodeHandler({ fetch }), server, ownerKey, lastSeenAt: 0, touchedAt: 0 };
    transport.onclose = () => {
      if (transport.sessionId && this.sessions.get(transport.sessionId) === session) this.sessions.delete(transport.sessionId);
      void server.close().catch(() => {});
    };
    await server.connect(transport);
    return session;
  }

  /** The live session of `ownerKey`, marked as just used (Map order is recency order, so eviction takes the oldest). */
  private touch(sessionId: string, ownerKey: string): Session | undefined {
    const session = this.sessions.get(sessionId);
    if (!session || session.ownerKey !== ownerKey) return undefined;
    const now = Date.now();
    session.lastSeenAt = now;
    this.sessions.delete(sessionId);
    this.sessions.set(sessionId, session);
    // The store's lastSeenAt decides idle pruning for every instance; written at most every idleMs / 4.
    if (now - session.touchedAt >= this.idleMs / 4) {
      session.touchedAt = now;
      void this.store.touchSession(sessionId, now).catch((error: unknown) => this.logger.debug({ err: error }, 'touching a legacy session failed'));
    }
    return session;
  }

  /** Close the local copy of `sessionId`, if any (its record is not touched). */
  private drop(sessionId: string, why: string): void {
    const session = this.sessions.get(sessionId);
    if (!session) return;
    this.sessions.delete(sessionId);
    this.logger.info({}, why);
    void session.transport.close().catch(() => {});
  }

  /** Close the least recently used sessions until at most `limit` remain. */
  private evictBeyond(limit: number): void {
    for (const id of this.sessions.keys()) {
      if (this.sessions.size <= limit) break;
      this.drop(id, 'closing the least recently used legacy session (session limit reached)');
    }
  }

  /** Close local copies idle here for `idleMs`, and delete records no instance has used for that long. */
  private async closeIdle(): Promise<void> {
    const cutoff = Date.now() - this.idleMs;
    for (const [id, session] of this.sessions) {
      if (session.lastSeenAt < cutoff) this.drop(id, 'closing idle legacy session');
    }
    await this.store.deleteIdleSessions(cutoff, 1_000).catch((error: unknown) => this.logger.debug({ err: error }, 'pruning idle legacy sessions failed'));
  }

  /** Close local copies whose record is gone (a DELETE on another instance, or pruned). */
  private async recheck(): Promise<void> {
    if (this.checking || this.sessions.size === 0) return;
    this.checking = true;
    try {
      // One statement for every copy held here (one read per session every 2 s grew with idle sessions; issue 25).
      const held = [...this.sessions.keys()];
      for (let i = 0; i < held.length; i += RECHECK_BATCH) {
        const ids = held.slice(i, i + RECHECK_BATCH);
        const existing = await this.store.existingSessions(ids);
        for (const id of ids) if (!existing.has(id)) this.drop(id, 'legacy session ended elsewhere; closing the local copy');
      }
    } catch (error) {
      this.logger.debug({ err: error }, 'checking legacy sessions against the store failed');
    } finally {
      this.checking = false;
    }
  }
}

/**
 * A 2025-11-25 client whose POST stream closes before its answer (it went away, or dropped the connection instead of
 * sending `notifications/cancelled`) cancels the requests of that POST: the SDK's transport keeps their handlers
 * running otherwise, so an inline call — a forwarded upstream call among them — would stay open until it ended by
 * itself. The cancel goes through the session's own `notifications/cancelled` handling, the path a client's cancel
 * takes; `request.signal` aborts only when the response did not finish, and a cancel of an answered id is a no-op.
 * `initialize` is never cancelled (the spec forbids it).
 */
function cancelWhenClosed(
  transport: WebStandardStreamableHTTPServerTransport,
  closed: AbortSignal,
  options?: { authInfo?: AuthInfo; parsedBody?: unknown },
): void {
  const messages = Array.isArray(options?.parsedBody) ? options.parsedBody : [options?.parsedBody];
  const ids = messages.flatMap((message) => {
    const { id, method } = (message ?? {}) as { id?: unknown; method?: unknown };
    return (typeof id === 'string' || typeof id === 'number') && typeof method === 'string' && method !== 'initialize' ? [id] : [];
  });
  if (ids.length === 0) return;
  closed.addEventListener(
    'abort',
    () => {
      for (const requestId of ids)
        transport.onmessage?.(
          { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'the client closed the connection' } },
          options?.authInfo ? { authInfo: options.authInfo } : undefined,
        );
    },
    { once: true },
  );
}
