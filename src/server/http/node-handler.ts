import type { IncomingMessage, ServerResponse } from 'node:http';

import { hostHeaderValidation, originValidation, toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';
import { type AuthInfo, createMcpHandler, isJsonContentType, isLegacyRequest, type McpServerFactory } from '@modelcontextprotocol/server';

import type { Logger } from '../../core/logger.js';
import { discardBody } from '../../core/request-body.js';
import type { ScopePolicy } from '../../core/scopes.js';
import type { SessionStore } from '../../core/session-store.js';
import { ErrorCode } from '../../protocol/constants.js';
import type { CallerIdentity } from '../../service/caller.js';
import { identityOf } from '../request-caller.js';
import { anonymousCaller, type AuthenticatedCaller, BearerAuth, type BearerAuthSettings } from './bearer-auth.js';
import { readJsonBody } from './body.js';
import { withSpecErrorStatus } from './error-status.js';
import type { FastPath } from './fast-path.js';
import { ResourceMetadataRoute } from './resource-metadata.js';
import { writeJsonRpcError } from './respond.js';
import { isTaskListenRequest, type TaskListenRoute } from './task-listen.js';
import { LegacySessions, type SessionStreamHook } from './v1-sessions.js';

/** Options of the HTTP front door. */
export interface HttpFrontOptions {
  factory: McpServerFactory;
  /** Path of the MCP endpoint. @defaultValue "/mcp" */
  path?: string;
  /** Largest request body in bytes (HTTP 413 with `-32600` above it). */
  maxRequestBodyBytes: number;
  /** Idle time after which a legacy session is closed (ms). */
  sessionIdleMs: number;
  /** Most legacy sessions kept at once. */
  maxSessions: number;
  /** Where legacy sessions are recorded, so every instance on the store serves them (issue 11 item 5). */
  sessions: SessionStore;
  /** Told of every legacy GET stream opened here (it then carries the session's tasks from every instance). */
  onSessionStream?: SessionStreamHook;
  /**
   * Bearer-token authentication (with the method-level scopes, and the protected-resource metadata when an
   * authorization server issues the tokens); without it every request is the `anonymous` owner with every scope.
   */
  auth?: Omit<BearerAuthSettings, 'logger'>;
  /** Scope names; used for the anonymous caller's scopes when `auth` is absent. */
  scopes: ScopePolicy;
  /** Host header allow-list (DNS-rebinding protection); `null` disables the check. */
  allowedHosts: string[] | null;
  /** Origin allow-list (host names) for requests that carry an `Origin` header; `null` disables the check. */
  allowedOrigins: string[] | null;
  /**
   * Takes a posted JSON-RPC response that answers one of our own server→client requests (v1 elicitation replies)
   * before any session lookup, so a reply still lands after a restart; returns `false` for anything else.
   */
  routeResponse?: (identity: CallerIdentity, message: unknown) => Promise<boolean>;
  /** Serves `subscriptions/listen` requests that ask for task notifications (the SDK's filter has no `taskIds`). */
  taskListen?: TaskListenRoute;
  /** Builds the fast path for hot task requests (given the legacy sessions); absent = every request takes the SDK path. */
  fastPath?: (sessions: LegacySessions) => FastPath;
  logger: Logger;
}

/** A Node `(req, res)` handler serving both protocol eras on one endpoint. */
export interface HttpFront {
  handle(request: IncomingMessage, response: ServerResponse): Promise<void>;
  readonly legacySessions: LegacySessions;
  /** End every open listen stream with the listen request's own result (base §5), first thing of a shutdown. */
  endStreams(): void;
  /**
   * Resolve once no POST is in flight here, or after `waitMs` (a drain's remaining time; 0 = at once). A blocked v1
   * `tasks/result` is a POST held open until its task ends. GET streams and `subscriptions/listen` POSTs are not
   * counted: they never end by themselves (`endStreams` and `close` end them).
   */
  settle(waitMs: number): Promise<void>;
  /** End the streams, close every session and the SDK handler. */
  close(): Promise<void>;
}

/**
 * The one Streamable HTTP endpoint: Host/Origin checks, bearer authentication (HTTP 401 before any task lookup),
 * Content-Type (415 + `-32000` unless `application/json`), body limit (413 + `-32600`), JSON parsing (`-32700`)
 * and one message per POST (a batch: 400 + `-32600`), then routing with the SDK's own `isLegacyRequest`:
 * v1-generation (2025-11-25) traffic to the sessionful legacy leg, everything else to the stateless 2026-07-28 handler.
 */
export function createHttpFront(options: HttpFrontOptions): HttpFront {
  const path = options.path ?? '/mcp';
  const modern = createMcpHandler(options.factory, {
    legacy: 'reject',
    maxRequestBodySize: options.maxRequestBodyBytes,
    onerror: (error) => options.logger.debug({ err: error }, 'modern request rejected'),
  });
  const modernNode = toNodeHandler({ fetch: async (request, requestOptions) => withSpecErrorStatus(await modern.fetch(request, requestOptions)) });
  const legacySessions = new LegacySessions(
    options.factory,
    options.logger,
    options.sessionIdleMs,
    options.maxSessions,
    options.sessions,
    options.onSessionStream,
  );
  const fastPath = options.fastPath?.(legacySessions);
  const checkHost = options.allowedHosts ? hostHeaderValidation(options.allowedHosts) : undefined;
  const checkOrigin = options.allowedOrigins ? originValidation(options.allowedOrigins) : undefined;
  const bearer = options.auth ? new BearerAuth({ ...options.auth, logger: options.logger }) : undefined;
  const metadata = options.auth?.resource ? new ResourceMetadataRoute(options.auth.resource) : undefined;
  const anonymous = anonymousCaller(options.scopes);
  // POSTs being answered (their response not yet closed: ended, or the connection gone), for a drain to wait for.
  const inFlight = new Set<ServerResponse>();
  const onSettled = new Set<() => void>();
  const release = (response: ServerResponse): void => {
    if (!inFlight.delete(response) || inFlight.size > 0) return;
    for (const settled of [...onSettled]) settled();
  };

  async function handle(request: IncomingMessage & { auth?: AuthInfo }, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    // Public discovery document: no Host/Origin or token check (it holds nothing but public configuration).
    if (metadata?.matches(url.pathname)) {
      await metadata.serve(request, response);
      return;
    }
    if (url.pathname !== path) {
      writeJsonRpcError(response, 404, null, ErrorCode.MethodNotFound, `Not found: ${url.pathname} (the MCP endpoint is ${path})`);
      return;
    }
    if (request.method !== 'POST' && request.method !== 'GET' && request.method !== 'DELETE') {
      writeJsonRpcError(response, 405, null, ErrorCode.InvalidRequest, `Method not allowed: ${request.method}`, { allow: 'GET, POST, DELETE' });
      return;
    }
    if (checkHost && !checkHost(request, response)) return;
    if (checkOrigin && request.headers.origin !== undefined && !checkOrigin(request, response)) return;

    // HTTP 401 before the body is even read, so an unauthenticated request never reaches a task lookup (C-SEC-10).
    const caller: AuthenticatedCaller | undefined = bearer ? await bearer.authenticate(request, response) : anonymous;
    if (!caller) return;
    const identity = identityOf(caller.authInfo);
    request.auth = caller.authInfo;

    let parsedBody: unknown;
    if (request.method === 'POST') {
      // HTTP 415 before the body is parsed, on every POST (both generations, both paths, the elicitation replies):
      // a CORS-safelisted type (`text/plain`, a form) is what a cross-site page can send without a preflight.
      // The SDK's own media-type rule (parameters and case ignored, `text/plain; a=application/json` refused) and
      // its code, so the fast path and the SDK path answer alike; the SDK also checks it before the body size.
      // The body is drained unparsed first (bounded, as for a 413), so a client still sending reads the 415
      // instead of a connection reset (found by the HTTP-layer fuzzer).
      if (!isJsonContentType(request.headers['content-type'])) {
        const whole = await discardBody(request);
        writeJsonRpcError(
          response,
          415,
          null,
          ErrorCode.TransportRefused,
          'Unsupported Media Type: Content-Type must be application/json',
          whole ? {} : { connection: 'close' },
        );
        return;
      }
      const body = await readJsonBody(request, options.maxRequestBodyBytes);
      if (!body.ok) {
        if (body.failure.kind === 'aborted') {
          // The connection ended before the body did (Node's parser answers 400 where it still can): nothing ran.
          options.logger.debug({ remote: request.socket.remoteAddress }, 'request body cut short; connection closed');
          response.destroy();
        } else if (body.failure.kind === 'too_large') {
          writeJsonRpcError(response, 413, null, ErrorCode.InvalidRequest, `Request body exceeds ${options.maxRequestBodyBytes} bytes`, {
            connection: 'close',
          });
        } else if (body.failure.kind === 'too_deep') {
          writeJsonRpcError(
            response,
            400,
            null,
            ErrorCode.InvalidRequest,
            `Invalid request: the body nests arrays and objects deeper than ${body.failure.limit} levels`,
          );
        } else {
          writeJsonRpcError(response, 400, null, ErrorCode.ParseError, 'Parse error: the request body is not valid JSON');
        }
        return;
      }
      parsedBody = body.value;
      // A listen stream lasts until it is told to end: a drain must not wait for it.
      if ((parsedBody as { method?: unknown } | null)?.method === 'subscriptions/listen') release(response);
      if (parsedBody === undefined) {
        writeJsonRpcError(response, 400, null, ErrorCode.ParseError, 'Parse error: the request body is empty');
        return;
      }
      // One JSON-RPC message per POST, on both generations (base B23; neither schema has had a batch type since
      // 2025-06-18): a batch — of requests, notifications or replies to our elicitations — is refused as a whole
      // before any of it is looked at, so nothing in it runs and no element gets an answer of its own.
      if (Array.isArray(parsedBody)) {
        writeJsonRpcError(response, 400, null, ErrorCode.InvalidRequest, 'Invalid request: JSON-RPC batches are not accepted; send one message per POST');
        return;
      }
      // Method-level scopes (HTTP 403 insufficient_scope), judged from the message alone; task-level re-checks
      // (a task that continues) belong to the service door.
      if (bearer && !(await bearer.authorize(caller, parsedBody, response))) return;
      if (options.routeResponse && (await options.routeResponse(identity, parsedBody))) {
        response.writeHead(202).end();
        return;
      }
      if (fastPath && (await fastPath.handle(request, response, parsedBody, identity))) return;
    }
    const webRequest = await toWebRequest(request, parsedBody);
    if (await isLegacyRequest(webRequest, parsedBody, { maxRequestBodySize: options.maxRequestBodyBytes })) {
      await legacySessions.handle(request, response, parsedBody, identity.ownerKey);
    } else if (options.taskListen && isTaskListenRequest(parsedBody)) {
      await options.taskListen.serve(request, response, parsedBody, identity);
    } else {
      await modernNode(request, response, parsedBody);
    }
  }

  return {
    handle: (request, response) => {
      if (request.method === 'POST') {
        inFlight.add(response);
        response.once('close', () => release(response));
      }
      return handle(request, response).catch((error) => {
        options.logger.error({ err: error }, 'HTTP request failed');
        if (!response.headersSent) writeJsonRpcError(response, 500, null, ErrorCode.InternalError, 'Internal error');
        else response.end();
      });
    },
    legacySessions,
    endStreams: () => options.taskListen?.close(),
    settle: (waitMs) =>
      inFlight.size === 0 || waitMs <= 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            const settled = (): void => {
              clearTimeout(timer);
              onSettled.delete(settled);
              resolve();
            };
            const timer = setTimeout(settled, waitMs);
            onSettled.add(settled);
          }),
    async close() {
      options.taskListen?.close();
      await legacySessions.close();
      await modern.close();
    },
  };
}
