import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { isJsonContentType } from '@modelcontextprotocol/server';

import { isTaskNotFound, TasksError } from '../core/errors.js';
import type { UpstreamStatus } from '../core/executor.js';
import { type KillSwitchControl, KillSwitchInputError, type KillSwitchView } from '../core/kill-switch.js';
import type { Logger } from '../core/logger.js';
import { discardBody, readRequestBody } from '../core/request-body.js';
import { ErrorCode } from '../protocol/constants.js';
import { killSwitchAccess } from '../service/access.js';
import type { Viewer } from '../service/viewer/viewer.js';
import type { ViewerService } from '../service/viewer/viewer-service.js';
import { type OidcSignIn, SIGN_IN_COOKIE, SignInError, SignInUnavailableError } from './oidc-sign-in.js';
import { appShell, CONTENT_SECURITY_POLICY, loginPage, signedInPage } from './pages.js';
import { operationListQuery, taskListQuery } from './queries.js';
import { cookieValue, DashboardSessions, processCsrfToken, sameToken, SESSION_COOKIE } from './sessions.js';
import { DashboardUnavailableError, type ViewerVerifier } from './verifier.js';
import { operationOf, pageOf, reconcileViewOf, summaryOf } from './views.js';
import type { InitialView, KillSwitchPanelView, SessionView, TaskListView, UpstreamsView } from './wire.js';

/** Options of {@link createDashboard}. */
export interface DashboardOptions {
  service: ViewerService;
  /** Token verification of the server's authentication; absent = authentication off (one anonymous viewer). */
  verify?: ViewerVerifier;
  /**
   * JWT mode: sign in at the issuer (authorization-code flow with PKCE). Absent: the page takes a pasted token only
   * (token-file mode, or JWT mode without a client id).
   */
  oidc?: OidcSignIn;
  /** The issuer's name as the sign-in button shows it. */
  issuerName?: string;
  /**
   * How this process's upstream connections stand (`serve --upstream`, issue 28; what `/readyz` shows); absent: no
   * upstreams. Other processes' connections are their own (their `/readyz`).
   */
  upstreams?: () => UpstreamStatus[];
  /**
   * The kill switch's control (the admin API's own); absent: no kill-switch panel. Viewers with `admin:read` see it,
   * `admin:write` changes it.
   */
  killSwitch?: KillSwitchControl;
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

/** The whole body as text: 413 above {@link MAX_BODY_BYTES} (drained first), 400 when the connection ends before the body does. */
async function readBody(request: IncomingMessage): Promise<string> {
  const read = await readRequestBody(request, MAX_BODY_BYTES);
  if (read.kind === 'too_large') throw new HttpError(413, `request body exceeds ${MAX_BODY_BYTES} bytes`);
  if (read.kind === 'aborted') throw new HttpError(400, 'The request body was cut short');
  return read.bytes.toString('utf8');
}

/** The body of an API action, parsed: 400 unless it is JSON (the page sends `{}` for actions without input). */
async function readJson(request: IncomingMessage): Promise<unknown> {
  const text = await readBody(request);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, 'The body is not JSON');
  }
}

/**
 * HTTP 415 unless the request's Content-Type has the media type the route takes: `application/json` for the API's
 * actions (the SDK's rule: parameters and case ignored), an HTML form for the sign-in page; the body is drained
 * unparsed first. A cross-site page can POST `text/plain` or a form without a CORS preflight; a route that takes
 * only its own type never sees one.
 */
async function requireContentType(request: IncomingMessage, type: 'json' | 'form'): Promise<void> {
  const header = request.headers['content-type'];
  const ok = type === 'json' ? isJsonContentType(header) : (header ?? '').split(';', 1)[0]?.trim().toLowerCase() === 'application/x-www-form-urlencoded';
  if (!ok) {
    await discardBody(request);
    throw new HttpError(415, `Content-Type must be ${type === 'json' ? 'application/json' : 'application/x-www-form-urlencoded'}`);
  }
}

function hostName(host: string): string {
  return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : (host.split(':')[0] as string);
}

/**
 * The dashboard (issue 16): a login page for bearer tokens (token-file mode) that opens an HttpOnly, SameSite=Strict
 * session; the page shell and its bundled script; a JSON API over the {@link ViewerService} (the
 * one door, which decides what each viewer sees and may do); and one Server-Sent Events stream per page driven by
 * the event feed. Every response carries a strict CSP; every POST needs same-origin (`Origin`/`Sec-Fetch-Site`) and,
 * for the API, the session's CSRF token in `x-csrf-token` and a JSON Content-Type (415 otherwise).
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

  const cookieTtlS = Math.floor((options.sessionTtlMs ?? 8 * 3_600_000) / 1000);
  const secure = options.secureCookie ? '; Secure' : '';
  const loginOptions = options.oidc && options.issuerName !== undefined ? { issuer: options.issuerName } : {};
  const loginHtml = (response: ServerResponse, status: number, error?: string, extra: Record<string, string> = {}): void =>
    send(response, status, 'text/html; charset=utf-8', loginPage(error, loginOptions), extra);

  /** Open a session for a verified token: the session cookie, then `done` (a redirect or a page). */
  function openSession(viewer: Viewer, token: string, via: string): string {
    const { id } = sessions.open(token, now());
    options.logger.info({ owner: viewer.ownerKey, via }, 'dashboard sign-in');
    return `${SESSION_COOKIE}=${id}; HttpOnly; SameSite=Strict; Path=/dashboard; Max-Age=${cookieTtlS}${secure}`;
  }

  /** A token's viewer; `undefined` when refused; `'unavailable'` when the verifier cannot decide now. */
  async function verifyToken(token: string): Promise<Viewer | undefined | 'unavailable'> {
    try {
      return token.length > 0 ? await (options.verify as ViewerVerifier)(token) : undefined;
    } catch (error) {
      if (!(error instanceof DashboardUnavailableError)) throw error;
      return 'unavailable';
    }
  }

  const UNREACHABLE = 'The token cannot be checked right now (the authorization server is unreachable); try again shortly.';

  async function login(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (!options.verify) return void response.writeHead(303, { location: '/dashboard' }).end();
    if (request.method === 'GET') return loginHtml(response, 200);
    if (request.method !== 'POST') throw new HttpError(405, 'Method not allowed');
    checkSameOrigin(request);
    await requireContentType(request, 'form');
    const token = new URLSearchParams(await readBody(request)).get('token')?.trim() ?? '';
    const viewer = await verifyToken(token);
    if (viewer === 'unavailable') return loginHtml(response, 503, UNREACHABLE, { 'retry-after': '5' });
    if (!viewer) return loginHtml(response, 401, 'That token was not accepted.');
    response
      .writeHead(303, { ...SECURITY_HEADERS, location: '/dashboard', 'set-cookie': openSession(viewer, token, 'token'), 'cache-control': 'no-store' })
      .end();
  }

  /** `GET /dashboard/login/start`: to the issuer's authorization endpoint, `state` bound to this browser by a cookie. */
  async function signInStart(request: IncomingMessage, response: ServerResponse, oidc: OidcSignIn): Promise<void> {
    if (request.method !== 'GET') throw new HttpError(405, 'Method not allowed');
    const origin = `${options.secureCookie ? 'https' : 'http'}://${request.headers.host ?? 'localhost'}`;
    const { location, state } = await oidc.start(origin, now());
    // SameSite=Lax: the issuer's redirect back is a top-level GET from its site, which Strict would strip.
    const cookie = `${SIGN_IN_COOKIE}=${state}; HttpOnly; SameSite=Lax; Path=/dashboard; Max-Age=600${secure}`;
    response.writeHead(303, { ...SECURITY_HEADERS, location, 'set-cookie': cookie, 'cache-control': 'no-store' }).end();
  }

  /** `GET /dashboard/callback?code&state`: redeem the code, verify the access token like any other, open a session. */
  async function signInCallback(request: IncomingMessage, response: ServerResponse, url: URL, oidc: OidcSignIn): Promise<void> {
    if (request.method !== 'GET') throw new HttpError(405, 'Method not allowed');
    const clear = `${SIGN_IN_COOKIE}=; HttpOnly; SameSite=Lax; Path=/dashboard; Max-Age=0${secure}`;
    let token: string;
    try {
      token = await oidc.finish(url.searchParams, cookieValue(request.headers.cookie, SIGN_IN_COOKIE), now());
    } catch (error) {
      if (error instanceof SignInUnavailableError)
        return loginHtml(response, 503, `The issuer cannot be reached right now; try again shortly.`, { 'retry-after': '5', 'set-cookie': clear });
      if (!(error instanceof SignInError)) throw error;
      options.logger.warn({ reason: error.message }, 'dashboard sign-in refused');
      return loginHtml(response, 400, `Sign-in failed: ${error.message}`, { 'set-cookie': clear });
    }
    const viewer = await verifyToken(token);
    if (viewer === 'unavailable') return loginHtml(response, 503, UNREACHABLE, { 'retry-after': '5', 'set-cookie': clear });
    if (!viewer)
      return loginHtml(response, 401, 'The issuer signed you in, but its access token is not accepted by this server (audience, scopes or expiry).', {
        'set-cookie': clear,
      });
    response.setHeader('set-cookie', [openSession(viewer, token, 'oidc'), clear]);
    send(response, 200, 'text/html; charset=utf-8', signedInPage());
  }

  async function api(request: IncomingMessage, response: ServerResponse, url: URL, who: { viewer: Viewer; csrf: string; sessionId?: string }): Promise<void> {
    const { viewer } = who;
    const path = url.pathname.slice('/dashboard/api'.length);
    let body: unknown;
    if (request.method === 'POST') {
      checkSameOrigin(request);
      if (!sameToken(who.csrf, request.headers['x-csrf-token'] as string | undefined)) throw new HttpError(403, 'Missing or wrong CSRF token');
      // Every action, also those without input (cancel, reconcile, logout, for which the page sends `{}`), runs only
      // once its whole body has arrived and is JSON: a request cut short, oversized or of another type runs nothing
      // (found by the HTTP-layer fuzzer: a cancel ran before, and regardless of, its body).
      await requireContentType(request, 'json');
      body = await readJson(request);
    } else if (request.method !== 'GET') throw new HttpError(405, 'Method not allowed');

    if (path === '/session' && request.method === 'GET') return sendJson(response, 200, sessionView(who));
    if (path === '/kill-switch') return await killSwitch(request, response, viewer, body);
    if (path === '/logout' && request.method === 'POST') {
      sessions.close(who.sessionId);
      return send(response, 204, 'text/plain', '', { 'set-cookie': `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/dashboard; Max-Age=0` });
    }
    if (path === '/tasks' && request.method === 'GET') return sendJson(response, 200, await list(viewer, url.searchParams));
    if (path === '/events' && request.method === 'GET') return events(viewer, response);
    if (path === '/overview' && request.method === 'GET') return sendJson(response, 200, await options.service.overview(viewer));
    if (path === '/upstreams' && request.method === 'GET') return sendJson(response, 200, { upstreams: options.upstreams?.() ?? [] } satisfies UpstreamsView);
    if (path === '/operations' && request.method === 'GET') return sendJson(response, 200, await operations(viewer, url.searchParams));
    const reconcile = /^\/operations\/([A-Za-z0-9_-]{1,64})\/reconcile$/.exec(path);
    if (reconcile && request.method === 'POST') {
      const report = await options.service.reconcile(viewer, reconcile[1] as string);
      if (!report) throw new HttpError(404, 'Operation not found');
      options.logger.info(
        { owner: viewer.ownerKey, operationId: report.operation.operationId, verdict: report.verdict.status, changed: report.changed },
        'dashboard reconcile',
      );
      return sendJson(response, 200, reconcileViewOf(report, viewer));
    }
    const match = /^\/tasks\/([A-Za-z0-9_-]{1,64})(\/cancel|\/answer|\/result)?$/.exec(path);
    if (!match) throw new HttpError(404, 'Not found');
    const taskId = match[1] as string;
    const action = match[2];
    if (action === undefined && request.method === 'GET') return sendJson(response, 200, pageOf(await options.service.inspect(viewer, taskId), viewer));
    if (action === '/result' && request.method === 'GET') return await fullResult(response, viewer, taskId);
    if (action === '/cancel' && request.method === 'POST') {
      const { cancelled, task } = await options.service.cancel(viewer, taskId);
      return sendJson(response, 200, { cancelled, task: summaryOf(task) });
    }
    if (action === '/answer' && request.method === 'POST') {
      const responses = (body as { responses?: unknown } | null)?.responses;
      if (!responses || typeof responses !== 'object' || Array.isArray(responses)) throw new HttpError(400, 'Expected {"responses": {key: ElicitResult}}');
      const accepted = await options.service.answer(viewer, taskId, responses as Record<string, unknown>);
      return sendJson(response, 200, { accepted });
    }
    throw new HttpError(405, 'Method not allowed');
  }

  async function list(viewer: Viewer, params: URLSearchParams): Promise<TaskListView> {
    const page = await options.service.browse(viewer, taskListQuery(params));
    return { tasks: page.tasks.map(summaryOf), nextBefore: page.nextBeforeSeq ?? null };
  }

  /**
   * `GET /dashboard/api/tasks/<id>/result`: the whole result (the task page shows its first 64 KiB) as JSON,
   * written part by part with its length announced, so a body cut short (the task deleted meanwhile) is seen as such.
   */
  async function fullResult(response: ServerResponse, viewer: Viewer, taskId: string): Promise<void> {
    const whole = await options.service.fullResult(viewer, taskId);
    if (!whole) throw new HttpError(404, 'This task has no result');
    response.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(whole.bytes),
      'content-disposition': `inline; filename="result-${taskId}.json"`,
      'cache-control': 'no-store',
    });
    let written = 0;
    for await (const part of whole.parts()) {
      written += part.byteLength;
      if (!response.write(part)) await new Promise((resolve) => response.once('drain', resolve));
    }
    if (written < whole.bytes) response.destroy();
    else response.end();
  }

  async function operations(viewer: Viewer, params: URLSearchParams): Promise<unknown> {
    const rows = await options.service.operations(viewer, operationListQuery(params));
    return { operations: rows.map((row) => operationOf(row.operation, row.mayReconcile)) };
  }

  function sessionView(who: { viewer: Viewer; csrf: string }): SessionView {
    const { viewer, csrf } = who;
    return { owner: viewer.ownerKey, scopes: [...viewer.scopes], csrf, signedIn: options.verify !== undefined, killSwitch: killSwitchRights(viewer) };
  }

  /**
   * The data of the page's first view, written into the page (issue 26 item 15): a headless screenshot, or a
   * browser whose event stream is slow, shows the rows at once. The task list's page as `/dashboard/api/tasks`
   * answers it for the same query; a task page as `/dashboard/api/tasks/<id>` (none for an unseen task: the page
   * asks and says "not found"). Other views fetch theirs at once.
   */
  async function initialView(url: URL, who: { viewer: Viewer; csrf: string }): Promise<InitialView> {
    const initial: InitialView = { url: url.pathname + url.search, session: sessionView(who) };
    if (url.pathname === '/dashboard' || url.pathname === '/dashboard/') initial.tasks = await list(who.viewer, url.searchParams);
    const taskId = /^\/dashboard\/tasks\/([A-Za-z0-9_-]{1,64})$/.exec(url.pathname)?.[1];
    if (taskId !== undefined) {
      const page = await options.service.inspect(who.viewer, taskId).catch((error: unknown) => (isTaskNotFound(error) ? undefined : Promise.reject(error)));
      if (page) initial.task = pageOf(page, who.viewer);
    }
    return initial;
  }

  function killSwitchRights(viewer: Viewer): { see: boolean; change: boolean } {
    return options.killSwitch ? killSwitchAccess(viewer) : { see: false, change: false };
  }

  const panelOf = (view: KillSwitchView, viewer: Viewer): KillSwitchPanelView => ({ ...view, mayChange: killSwitchRights(viewer).change });

  /**
   * `GET /dashboard/api/kill-switch`: the state; `POST` `{action: "on"|"off", tool?, fallback?, reason?}`: change it
   * through the admin API's control (its checks, `setBy` = the viewer's owner key). Without `admin:read` the panel
   * does not exist (404); with it but without `admin:write` a change is refused (403).
   */
  async function killSwitch(request: IncomingMessage, response: ServerResponse, viewer: Viewer, posted: unknown): Promise<void> {
    const control = options.killSwitch;
    const rights = killSwitchRights(viewer);
    if (!control || !rights.see) throw new HttpError(404, 'Not found');
    if (request.method === 'GET') return sendJson(response, 200, panelOf(await control.read(), viewer));
    if (!rights.change) throw new HttpError(403, 'Changing the kill switch needs the admin:write scope');
    const body = posted as { action?: unknown; tool?: unknown; fallback?: unknown; reason?: unknown } | null;
    if (!body || typeof body !== 'object' || (body.action !== 'on' && body.action !== 'off'))
      throw new HttpError(400, 'Expected {"action": "on"|"off", "tool"?, "fallback"?, "reason"?}');
    // An empty form field means "not given": every tool, the default fallback, no reason.
    const given = (value: unknown): unknown => (value === '' || value === null ? undefined : value);
    const tool = given(body.tool);
    if (tool !== undefined && typeof tool !== 'string') throw new HttpError(400, 'tool: a tool name');
    const view =
      body.action === 'on'
        ? await control.turnOn({ tool, fallback: given(body.fallback), reason: given(body.reason) }, viewer.ownerKey)
        : await control.turnOff(tool, viewer.ownerKey);
    // Who and what, never the reason text (operator prose stays in the store).
    options.logger.info(
      { owner: viewer.ownerKey, action: body.action, scope: tool ?? '*', fallback: body.action === 'on' ? (given(body.fallback) ?? null) : undefined },
      'dashboard kill switch',
    );
    return sendJson(response, 200, panelOf(view, viewer));
  }

  async function events(viewer: Viewer, response: ServerResponse): Promise<void> {
    response.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    response.write('retry: 2000\n\n');
    streams.add(response);
    const stop = await options.service.watchVisible(viewer, (event, task) => {
      const data = {
        event: { seq: event.seq, kind: event.kind, status: event.status, at: event.at, taskId: event.taskId },
        task: task ? summaryOf(task) : null,
      };
      response.write(`event: task\ndata: ${JSON.stringify(data)}\n\n`);
    });
    // The kill switch rides the same stream for viewers who may see it: a change anywhere reaches this process's
    // cache within its refresh (500 ms by default), which tells the stream; the page never polls for it.
    const unwatch =
      options.killSwitch && killSwitchRights(viewer).see
        ? options.killSwitch.watch((view) => response.write(`event: kill-switch\ndata: ${JSON.stringify(panelOf(view, viewer))}\n\n`))
        : undefined;
    // A comment now and then keeps proxies from closing an idle stream.
    const heartbeat = setInterval(() => response.write(': keep-alive\n\n'), 15_000);
    heartbeat.unref();
    const end = (): void => {
      clearInterval(heartbeat);
      stop();
      unwatch?.();
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
      if (options.oidc && options.verify && url.pathname === '/dashboard/login/start') return await signInStart(request, response, options.oidc);
      if (options.oidc && options.verify && url.pathname === '/dashboard/callback') return await signInCallback(request, response, url, options.oidc);
      if (url.pathname.startsWith('/dashboard/assets/')) {
        const name = url.pathname.slice('/dashboard/assets/'.length);
        if (name !== 'app.js' && name !== 'app.css') throw new HttpError(404, 'Not found');
        return send(response, 200, name.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8', asset(name), {
          'cache-control': 'no-cache',
        });
      }
      const who = await viewerOf(request);
      if (url.pathname.startsWith('/dashboard/api/')) {
        if (!who) throw new HttpError(401, 'Signed out');
        return await api(request, response, url, who);
      }
      if (request.method !== 'GET') throw new HttpError(405, 'Method not allowed');
      if (!who) return void response.writeHead(303, { location: '/dashboard/login', 'cache-control': 'no-store' }).end();
      if (
        url.pathname === '/dashboard' ||
        url.pathname === '/dashboard/' ||
        url.pathname === '/dashboard/operations' ||
        url.pathname === '/dashboard/overview' ||
        url.pathname === '/dashboard/kill-switch' ||
        /^\/dashboard\/tasks\/[^/]+$/.test(url.pathname)
      ) {
        return send(response, 200, 'text/html; charset=utf-8', appShell(await initialView(url, who)));
      }
      throw new HttpError(404, 'Not found');
    } catch (error) {
      if (response.headersSent) return void response.end();
      if (error instanceof HttpError) return sendJson(response, error.status, { error: error.message });
      if (error instanceof SignInUnavailableError)
        return loginHtml(response, 503, 'The issuer cannot be reached right now; try again shortly.', { 'retry-after': '5' });
      if (error instanceof SignInError) return loginHtml(response, 502, `Sign-in cannot start: ${error.message}`);
      // The authorization server cannot be asked now: neither signed in nor out; the session stays.
      if (error instanceof DashboardUnavailableError)
        return sendJson(response, 503, { error: 'Sign-in cannot be checked right now; try again shortly' }, { 'retry-after': '5' });
      if (error instanceof KillSwitchInputError) return sendJson(response, 400, { error: error.message });
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
