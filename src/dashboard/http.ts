import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isTaskNotFound, TasksError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { TaskStatus } from '../core/task.js';
import { ErrorCode } from '../protocol/constants.js';
import type { TaskService } from '../service/task-service.js';
import type { Viewer } from '../service/viewer.js';
import { appShell, CONTENT_SECURITY_POLICY, loginPage } from './pages.js';
import { cookieValue, DashboardSessions, processCsrfToken, sameToken, SESSION_COOKIE } from './sessions.js';
import { DashboardUnavailableError, type ViewerVerifier } from './verifier.js';
import { pageOf, summaryOf } from './views.js';

/** Options of {@link createDashboard}. */
export interface DashboardOptions {
  service: TaskService;
  /** Token verification of the server's authentication; absent = authentication off (one anonymous viewer). */
  verify?: ViewerVerifier;
  /** The viewer when authentication is off. */
  anonymous: Viewer;
  /** Host names (no port) the page may be reached by; `null` = no check (as the MCP endpoint's `--allowed-hosts '*'`). */
  allowedHosts: readonly string[] | null;
  /** Set the `Secure` attribute on the session cookie (behind a TLS-terminating proxy). @defaultValue false */
  secureCookie?: boolean;
  /** Session lifetime (ms). @defaultValue 8 h */
  sessionTtlMs?: number;
  /** Where the bundled page (app.js, app.css) is. @defaultValue `dist/dashboard/assets` of this package */
  assetsDir?: string;
  logger: Logger;
  now?: () => number;
}

/** The dashboard's HTTP side, mounted under `/dashboard` of the server's own port. */
export interface Dashboard {
  /** Whether `request` is the dashboard's (its path is `/dashboard` or under it). */
  owns(request: IncomingMessage): boolean;
  handle(request: IncomingMessage, response: ServerResponse): Promise<void>;
  /** End every open event stream. */
  close(): void;
}

const PAGE_SIZE_MAX = 200;
const STATUSES: readonly TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
/** Largest body of a dashboard POST (a token, an answer form). */
const MAX_BODY_BYTES = 64 * 1024;
const DEFAULT_ASSETS = resolve(dirname(fileURLToPath(import.meta.url)), '../../dist/dashboard/assets');

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const SECURITY_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  // same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on form posts, which the origin check refuses.
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

function send(response: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}): void {
  response.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, 'cache-control': 'no-store', ...extra }).end(body);
}

function sendJson(response: ServerResponse, status: number, value: unknown, extra: Record<string, string> = {}): void {
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(value), extra);
}

async function readBody(request: IncomingMessage): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `request body exceeds ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function hostName(host: string): string {
  return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : (host.split(':')[0] as string);
}

/**
 * The dashboard (issue 16): a login page for bearer tokens (token-file mode) that opens an HttpOnly, SameSite=Strict
 * session; the page shell and its bundled script; a JSON API over the {@link TaskService}'s viewer operations (the
 * one door, which decides what each viewer sees and may do); and one Server-Sent Events stream per page driven by
 * the event feed. Every response carries a strict CSP; every POST needs same-origin (`Origin`/`Sec-Fetch-Site`) and,
 * for the API, the session's CSRF token in `x-csrf-token`.
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  const now = options.now ?? Date.now;
  const sessions = new DashboardSessions(options.sessionTtlMs ?? 8 * 60 * 60 * 1000);
  const anonymousCsrf = processCsrfToken();
  const assetsDir = options.assetsDir ?? DEFAULT_ASSETS;
  const streams = new Set<ServerResponse>();
  const assets = new Map<string, Buffer>();

  function asset(name: string): Buffer {
    let body = assets.get(name);
    if (!body) {
      body = readFileSync(resolve(assetsDir, name));
      assets.set(name, body);
    }
    return body;
  }

  /** The verified viewer of a request and its CSRF token, or `undefined` (signed out / token refused since). */
  async function viewerOf(request: IncomingMessage): Promise<{ viewer: Viewer; csrf: string; sessionId?: string } | undefined> {
    if (!options.verify) return { viewer: options.anonymous, csrf: anonymousCsrf };
    const sessionId = cookieValue(request.headers.cookie, SESSION_COOKIE);
    const session = sessions.find(sessionId, now());
    if (!session) return undefined;
    const viewer = await options.verify(session.token);
    if (!viewer) {
      sessions.close(sessionId);
      return undefined;
    }
    return { viewer, csrf: session.csrf, ...(sessionId === undefined ? {} : { sessionId }) };
  }

  function checkHost(request: IncomingMessage): void {
    if (options.allowedHosts === null) return;
    const host = request.headers.host;
    if (host === undefined || !options.allowedHosts.includes(hostName(host))) throw new HttpError(403, 'Host not allowed');
  }

  /** A state-changing request must come from a page of this origin. */
  function checkSameOrigin(request: IncomingMessage): void {
    const site = request.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') throw new HttpError(403, 'Cross-site request refused');
    const origin = request.headers.origin;
    if (origin !== undefined && (origin === 'null' || new URL(origin).host !== request.headers.host)) throw new HttpError(403, 'Cross-origin request refused');
  }

  async function login(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (!options.verify) return void response.writeHead(303, { location: '/dashboard' }).end();
    if (request.method === 'GET') return send(response, 200, 'text/html; charset=utf-8', loginPage());
    if (request.method !== 'POST') throw new HttpError(405, 'Method not allowed');
    checkSameOrigin(request);
    const token = new URLSearchParams(await readBody(request)).get('token')?.trim() ?? '';
    let viewer: Viewer | undefined;
    try {
      viewer = token.length > 0 ? await options.verify(token) : undefined;
    } catch (error) {
      if (!(error instanceof DashboardUnavailableError)) throw error;
      return send(response, 503, 'text/html; charset=utf-8', loginPage('The token cannot be checked right now (the authorization server is unreachable); try again shortly.'), { 'retry-after': '5' });
    }
    if (!viewer) return send(response, 401, 'text/html; charset=utf-8', loginPage('That token was not accepted.'));
    const { id } = sessions.open(token, now());
    const cookie = `${SESSION_COOKIE}=${id}; HttpOnly; SameSite=Strict; Path=/dashboard; Max-Age=${Math.floor((options.sessionTtlMs ?? 8 * 3_600_000) / 1000)}${options.secureCookie ? '; Secure' : ''}`;
    options.logger.info({ owner: viewer.ownerKey }, 'dashboard sign-in');
    response.writeHead(303, { ...SECURITY_HEADERS, location: '/dashboard', 'set-cookie': cookie, 'cache-control': 'no-store' }).end();
  }

  async function api(request: IncomingMessage, response: ServerResponse, url: URL, who: { viewer: Viewer; csrf: string; sessionId?: string }): Promise<void> {
    const { viewer } = who;
    const path = url.pathname.slice('/dashboard/api'.length);
    if (request.method === 'POST') {
      checkSameOrigin(request);
      if (!sameToken(who.csrf, request.headers['x-csrf-token'] as string | undefined)) throw new HttpError(403, 'Missing or wrong CSRF token');
    } else if (request.method !== 'GET') throw new HttpError(405, 'Method not allowed');

    if (path === '/session' && request.method === 'GET') {
      return sendJson(response, 200, { owner: viewer.ownerKey, scopes: viewer.scopes, csrf: who.csrf, signedIn: options.verify !== undefined });
    }
    if (path === '/logout' && request.method === 'POST') {
      sessions.close(who.sessionId);
      return send(response, 204, 'text/plain', '', { 'set-cookie': `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/dashboard; Max-Age=0` });
    }
    if (path === '/tasks' && request.method === 'GET') return sendJson(response, 200, await list(viewer, url.searchParams));
    if (path === '/events' && request.method === 'GET') return events(viewer, response);
    const match = /^\/tasks\/([A-Za-z0-9_-]{1,64})(\/cancel|\/answer)?$/.exec(path);
    if (!match) throw new HttpError(404, 'Not found');
    const taskId = match[1] as string;
    const action = match[2];
    if (action === undefined && request.method === 'GET') return sendJson(response, 200, pageOf(await options.service.inspect(viewer, taskId)));
    if (action === '/cancel' && request.method === 'POST') {
      const { cancelled, task } = await options.service.cancelFor(viewer, taskId);
      return sendJson(response, 200, { cancelled, task: summaryOf(task) });
    }
    if (action === '/answer' && request.method === 'POST') {
      let body: unknown;
      try {
        body = JSON.parse(await readBody(request));
      } catch {
        throw new HttpError(400, 'The body is not JSON');
      }
      const responses = (body as { responses?: unknown } | null)?.responses;
      if (!responses || typeof responses !== 'object' || Array.isArray(responses)) throw new HttpError(400, 'Expected {"responses": {key: ElicitResult}}');
      const accepted = await options.service.answerFor(viewer, taskId, responses as Record<string, unknown>);
      return sendJson(response, 200, { accepted });
    }
    throw new HttpError(405, 'Method not allowed');
  }

  async function list(viewer: Viewer, params: URLSearchParams): Promise<unknown> {
    const statuses = (params.get('status') ?? '').split(',').filter((value): value is TaskStatus => (STATUSES as readonly string[]).includes(value));
    const number = (name: string): number | undefined => {
      const raw = params.get(name);
      if (raw === null || raw === '') return undefined;
      const value = Number(raw);
      if (!Number.isSafeInteger(value) || value < 0) throw new HttpError(400, `${name} must be a non-negative integer`);
      return value;
    };
    const limit = Math.min(number('limit') ?? 50, PAGE_SIZE_MAX);
    const tool = params.get('tool') ?? '';
    const text = (params.get('q') ?? '').slice(0, 200);
    const from = number('from');
    const to = number('to');
    const before = number('before');
    const page = await options.service.browse(viewer, {
      limit: Math.max(limit, 1),
      ...(statuses.length > 0 ? { statuses } : {}),
      ...(tool ? { toolName: tool } : {}),
      ...(text ? { text } : {}),
      ...(from === undefined ? {} : { createdFrom: from }),
      ...(to === undefined ? {} : { createdTo: to }),
      ...(before === undefined ? {} : { beforeSeq: before }),
    });
    return { tasks: page.tasks.map(summaryOf), nextBefore: page.nextBeforeSeq ?? null };
  }

  async function events(viewer: Viewer, response: ServerResponse): Promise<void> {
    response.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    response.write('retry: 2000\n\n');
    streams.add(response);
    const stop = await options.service.watchVisible(viewer, (event, task) => {
      const data = { event: { seq: event.seq, kind: event.kind, status: event.status, at: event.at, taskId: event.taskId }, task: task ? summaryOf(task) : null };
      response.write(`event: task\ndata: ${JSON.stringify(data)}\n\n`);
    });
    // A comment now and then keeps proxies from closing an idle stream.
    const heartbeat = setInterval(() => response.write(': keep-alive\n\n'), 15_000);
    heartbeat.unref();
    const end = (): void => {
      clearInterval(heartbeat);
      stop();
      streams.delete(response);
    };
    // The page may have gone while the subscription was being set up.
    if (response.destroyed) end();
    else response.once('close', end);
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    try {
      checkHost(request);
      if (url.pathname === '/dashboard/login') return await login(request, response);
      if (url.pathname.startsWith('/dashboard/assets/')) {
        const name = url.pathname.slice('/dashboard/assets/'.length);
        if (name !== 'app.js' && name !== 'app.css') throw new HttpError(404, 'Not found');
        return send(response, 200, name.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8', asset(name), { 'cache-control': 'no-cache' });
      }
      const who = await viewerOf(request);
      if (url.pathname.startsWith('/dashboard/api/')) {
        if (!who) throw new HttpError(401, 'Signed out');
        return await api(request, response, url, who);
      }
      if (request.method !== 'GET') throw new HttpError(405, 'Method not allowed');
      if (!who) return void response.writeHead(303, { location: '/dashboard/login', 'cache-control': 'no-store' }).end();
      if (url.pathname === '/dashboard' || url.pathname === '/dashboard/' || /^\/dashboard\/tasks\/[^/]+$/.test(url.pathname)) {
        return send(response, 200, 'text/html; charset=utf-8', appShell());
      }
      throw new HttpError(404, 'Not found');
    } catch (error) {
      if (response.headersSent) return void response.end();
      if (error instanceof HttpError) return sendJson(response, error.status, { error: error.message });
      // The authorization server cannot be asked now: neither signed in nor out; the session stays.
      if (error instanceof DashboardUnavailableError) return sendJson(response, 503, { error: 'Sign-in cannot be checked right now; try again shortly' }, { 'retry-after': '5' });
      if (isTaskNotFound(error)) return sendJson(response, 404, { error: 'Task not found' });
      // The service's refusals: an action the viewer's scopes do not allow (-32600) or bad parameters.
      if (error instanceof TasksError) return sendJson(response, error.code === ErrorCode.InvalidRequest ? 403 : 400, { error: error.message });
      options.logger.error({ err: error }, 'dashboard request failed');
      return sendJson(response, 500, { error: 'Internal error' });
    }
  }

  return {
    owns: (request) => {
      const path = (request.url ?? '/').split('?')[0] as string;
      return path === '/dashboard' || path.startsWith('/dashboard/');
    },
    handle,
    close() {
      for (const stream of streams) stream.end();
      streams.clear();
    },
  };
}
