import type { IncomingMessage, ServerResponse } from 'node:http';

import { isJsonContentType } from '@modelcontextprotocol/server';

import { KillSwitchInputError } from '../core/kill-switch.js';
import { type Logger, silentLogger } from '../core/logger.js';
import { AuthenticationError, type Authenticator, ownerKeyOf } from '../core/owner.js';
import { discardBody, readRequestBody } from '../core/request-body.js';
import type { TaskStore } from '../core/store.js';
import { Scope } from '../protocol/scopes.js';
import { AdminInputError, readAudit, readInFlight, readOperations } from './admin.js';
import type { KillSwitchCache } from './rollout/kill-switch.js';
import { createKillSwitchControl } from './rollout/kill-switch-control.js';

/**
 * The operator's JSON API on the server (issue 15 item 6): `/admin/…`, plain HTTP + JSON, never JSON-RPC (the
 * `tasks/` methods belong to the protocol). Same authentication as MCP (the server's own {@link Authenticator}:
 * token file or JWT); `GET` needs `admin:read`, changes need `admin:write`. Without authentication the API answers
 * loopback peers only (the local operator; `serve` refuses a remote bind without `--auth` anyway).
 *
 * | method | path | scope | body / query | answer |
 * |---|---|---|---|---|
 * | GET | /admin/kill-switch | admin:read | – | {@link KillSwitchView} (state + `defaultFallback`, `tools`) |
 * | PUT | /admin/kill-switch | admin:write | `{tool?, fallback?, reason?}` | the new state |
 * | DELETE | /admin/kill-switch | admin:write | `?tool=NAME` (absent: global) | the new state, `cleared` |
 * | GET | /admin/in-flight | admin:read | `?limit=` (default 100) | {@link InFlight} |
 * | GET | /admin/operations | admin:read | `?status=a,b|all&task=&owner=&limit=` | `{operations}` |
 * | GET | /admin/audit | admin:read | `?since=<epoch ms>&tool=&owner=&afterSeq=&limit=` | `{entries}` |
 *
 * Errors: 401 `invalid_token` (missing or refused token, `WWW-Authenticate: Bearer`), 403 `insufficient_scope`
 * (`scope` names the one needed) or `local_only`, 415 `unsupported_media_type` (a body whose Content-Type is not
 * `application/json`; checked after the token), 400 `invalid_request` (bad JSON, unknown tool, bad fallback),
 * 404 `not_found`, 405 `method_not_allowed`, 503 `temporarily_unavailable` (key set or store unreachable); each
 * with a JSON body `{error, error_description}`.
 */

/** What the admin API reads and changes. */
export interface AdminApiOptions {
  store: TaskStore;
  killSwitch: KillSwitchCache;
  /** Names of the served tools (a switch for another name is refused). */
  tools: readonly string[];
  /** Fallback a switch set without one gets. */
  defaultFallback: 'sync' | 'reject';
  /** Absent: no authentication, loopback peers only. */
  authenticator?: Authenticator | undefined;
  /** Host header allow-list (host names, DNS-rebinding protection, as the MCP endpoint's); `null`: no check. */
  allowedHosts: readonly string[] | null;
  /** Told when a kill-switch change's audit entry cannot be written. @defaultValue silent */
  logger?: Logger;
}

/** Largest admin request body (bytes). */
const MAX_BODY_BYTES = 16 * 1024;
const ADMIN_PREFIX = '/admin/';
const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

function send(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response
    .writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text), ...headers })
    .end(text);
}

/**
 * The JSON body of a change: HTTP 415 unless the Content-Type is `application/json` (the SDK's media-type rule:
 * parameters and case ignored; the body is drained unparsed); 413 above {@link MAX_BODY_BYTES}; 400 for bad JSON,
 * an empty body or a body cut short.
 */
async function readBody(request: IncomingMessage): Promise<unknown> {
  if (!isJsonContentType(request.headers['content-type'])) {
    await discardBody(request);
    throw new HttpProblem(415, 'unsupported_media_type', 'Content-Type must be application/json');
  }
  const read = await readRequestBody(request, MAX_BODY_BYTES);
  if (read.kind === 'too_large')
    throw new HttpProblem(413, 'invalid_request', `body larger than ${MAX_BODY_BYTES} bytes`, read.drained ? {} : { connection: 'close' });
  // The connection ended before the body did: a client error (it was answered 503 "store" before the HTTP-layer fuzzer).
  if (read.kind === 'aborted') throw new HttpProblem(400, 'invalid_request', 'the request body was cut short');
  const text = read.bytes.toString('utf8');
  // Not `{}`: a change whose body was lost (a request cut short, a body-less PUT) must not switch every tool off.
  if (text.trim() === '') throw new HttpProblem(400, 'invalid_request', 'the body is empty: send a JSON object ({} for every tool)');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpProblem(400, 'invalid_request', 'the body is not valid JSON');
  }
}

function integerParam(url: URL, name: string): number | undefined {
  const value = url.searchParams.get(name);
  if (value === null) return undefined;
  if (!/^\d{1,15}$/.test(value)) throw new HttpProblem(400, 'invalid_request', `${name}: a non-negative integer`);
  return Number(value);
}

/** The host name of a Host header (`[::1]:3100` → `[::1]`, `localhost:3100` → `localhost`). */
function hostName(host: string | undefined): string {
  if (!host) return '';
  return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : (host.split(':')[0] as string);
}

/** The admin API: `owns` says whether a request is its; `handle` answers it (never throws). */
export interface AdminApi {
  owns(request: IncomingMessage): boolean;
  handle(request: IncomingMessage, response: ServerResponse): Promise<void>;
}

/** Build the admin API (see the module comment). */
export function createAdminApi(options: AdminApiOptions): AdminApi {
  async function caller(request: IncomingMessage, scope: typeof Scope.AdminRead | typeof Scope.AdminWrite): Promise<string> {
    if (!options.authenticator) {
      if (!LOOPBACK.has(request.socket.remoteAddress ?? ''))
        throw new HttpProblem(403, 'local_only', 'the admin API without --auth answers loopback clients only');
      return 'local';
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    const challenge = { 'www-authenticate': 'Bearer error="invalid_token"' };
    if (!match) throw new HttpProblem(401, 'invalid_token', 'a bearer token is required', challenge);
    let principal;
    try {
      principal = await options.authenticator.verify(match[1] as string);
    } catch (error) {
      if (error instanceof AuthenticationError && error.reason === 'unavailable')
        throw new HttpProblem(503, 'temporarily_unavailable', 'the token cannot be verified now', { 'retry-after': '5' });
      throw new HttpProblem(401, 'invalid_token', 'the token was refused', challenge);
    }
    // admin:write includes reading: an operator who may change the switch may see it.
    const granted = principal.scopes.includes(scope) || (scope === Scope.AdminRead && principal.scopes.includes(Scope.AdminWrite));
    if (!granted)
      throw new HttpProblem(
        403,
        'insufficient_scope',
        `this needs the scope ${scope}`,
        { 'www-authenticate': `Bearer error="insufficient_scope", scope="${scope}"` },
        { scope },
      );
    return ownerKeyOf(principal);
  }

  // The same control the dashboard's panel uses: one set of checks, one write path.
  const control = createKillSwitchControl({
    store: options.store,
    cache: options.killSwitch,
    tools: options.tools,
    defaultFallback: options.defaultFallback,
    logger: options.logger ?? silentLogger,
  });

  async function route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (options.allowedHosts && !options.allowedHosts.includes(hostName(request.headers.host)))
      throw new HttpProblem(403, 'invalid_host', 'the Host header is not one this server answers to');
    const method = request.method ?? 'GET';
    const allow = (methods: string): never => {
      throw new HttpProblem(405, 'method_not_allowed', `${method} is not allowed here`, { allow: methods });
    };
    switch (url.pathname) {
      case '/admin/kill-switch': {
        if (method === 'GET') {
          await caller(request, Scope.AdminRead);
          return send(response, 200, await control.read());
        }
        if (method === 'PUT') {
          const setBy = await caller(request, Scope.AdminWrite);
          const body = await readBody(request);
          if (typeof body !== 'object' || body === null || Array.isArray(body))
            throw new HttpProblem(400, 'invalid_request', 'the body must be a JSON object {tool?, fallback?, reason?}');
          return send(response, 200, await control.turnOn(body, setBy));
        }
        if (method === 'DELETE') {
          const setBy = await caller(request, Scope.AdminWrite);
          return send(response, 200, await control.turnOff(url.searchParams.get('tool') ?? undefined, setBy));
        }
        return allow('GET, PUT, DELETE');
      }
      case '/admin/in-flight':
        if (method !== 'GET') return allow('GET');
        await caller(request, Scope.AdminRead);
        return send(response, 200, await readInFlight(options.store, integerParam(url, 'limit') ?? 100));
      case '/admin/operations': {
        if (method !== 'GET') return allow('GET');
        await caller(request, Scope.AdminRead);
        const status = url.searchParams.get('status');
        const operations = await readOperations(options.store, {
          ownerKey: url.searchParams.get('owner') ?? undefined,
          taskId: url.searchParams.get('task') ?? undefined,
          statuses: status === null ? undefined : status === 'all' ? 'all' : status.split(','),
          limit: integerParam(url, 'limit'),
        });
        return send(response, 200, { operations });
      }
      case '/admin/audit': {
        if (method !== 'GET') return allow('GET');
        await caller(request, Scope.AdminRead);
        const entries = await readAudit(options.store, {
          since: integerParam(url, 'since'),
          tool: url.searchParams.get('tool') ?? undefined,
          ownerKey: url.searchParams.get('owner') ?? undefined,
          afterSeq: integerParam(url, 'afterSeq'),
          limit: integerParam(url, 'limit'),
        });
        return send(response, 200, { entries });
      }
      default:
        throw new HttpProblem(404, 'not_found', `no admin resource ${url.pathname} (kill-switch, in-flight, operations, audit)`);
    }
  }

  return {
    owns: (request) => new URL(request.url ?? '/', 'http://localhost').pathname.startsWith(ADMIN_PREFIX),
    async handle(request, response) {
      try {
        await route(request, response);
      } catch (error) {
        if (response.headersSent) return void response.end();
        if (error instanceof HttpProblem)
          return send(response, error.status, { error: error.code, error_description: error.message, ...error.extra }, error.headers);
        if (error instanceof AdminInputError || error instanceof KillSwitchInputError)
          return send(response, 400, { error: 'invalid_request', error_description: error.message });
        // A store error: the operator learns the store is the problem, not its internals.
        send(response, 503, {
          error: 'temporarily_unavailable',
          error_description: `the task store did not answer: ${error instanceof Error ? error.message : String(error)}`,
        });
      }
    },
  };
}
