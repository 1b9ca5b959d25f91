/**
 * The dashboard's HTTP side without a browser (issue 16): sign-in and the session cookie's attributes, the
 * strict CSP, CSRF and same-origin refusals, and per-viewer visibility (own tasks; `admin:read` sees all owners,
 * read-only unless it also holds `tasks:cancel`) — each with the request that must succeed beside it.
 */
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { silentLogger } from '../../src/core/logger.js';
import { ownerKeyOf } from '../../src/core/owner.js';
import { viewerVerifier } from '../../src/dashboard/verifier.js';
import { Scope, TASK_SCOPES } from '../../src/protocol/scopes.js';
import type { Viewer } from '../../src/service/viewer/viewer.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { serveDashboard, type ServedDashboard } from '../helpers/dashboard-server.js';
import { sendHttp, sendRawHttp } from '../helpers/raw-http.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { postModern } from '../helpers/wire.js';

const V2 = { capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
const principal = (subject: string) => ({ issuer: 'https://issuer.test', subject, tenant: 'acme' });
/** Requestors (no `scopes`: the task scopes), an auditor (admin:read only) and an operator (admin:read + tasks:cancel). */
const TOKENS = [
  { token: 'alice-token-0123456789', ...principal('alice') },
  { token: 'bob-token-0123456789ab', ...principal('bob') },
  { token: 'auditor-token-0123456', ...principal('auditor'), scopes: [Scope.AdminRead] },
  { token: 'operator-token-012345', ...principal('operator'), scopes: [Scope.AdminRead, Scope.TasksCancel] },
];
const ALICE: Viewer = { ownerKey: ownerKeyOf(principal('alice')), scopes: TASK_SCOPES };

describe('dashboard HTTP: sessions, CSP, CSRF and visibility (issue 16)', () => {
  let running: RunningTasksServer;
  let dashboard: ServedDashboard;
  let base: string;
  let host: string;
  let aliceTask: string;

  const temp = makeTempDir('mcp-tasks-dashboard-http-');

  beforeAll(async () => {
    // One token file, read by main's authenticator, verifies both the MCP endpoint and the dashboard's sign-in.
    const tokenFile = join(temp.dir, 'tokens.json');
    writeFileSync(tokenFile, JSON.stringify({ tokens: TOKENS }));
    const auth = TokenFileAuthenticator.fromFile(tokenFile);
    running = await startTasksServer({ tools: conformanceFixtureTools(), auth });
    dashboard = await serveDashboard({
      service: running.server.service.viewer,
      verify: viewerVerifier(auth),
      anonymous: { ownerKey: 'anonymous', scopes: [] },
      allowedHosts: ['127.0.0.1'],
      logger: silentLogger,
    });
    ({ host, base } = dashboard);
    const created = await postModern(
      running.url,
      'tools/call',
      { name: 'slow_compute', arguments: { seconds: 30, label: 'alice' } },
      { ...V2, token: TOKENS[0]!.token },
    );
    aliceTask = created.body.result?.taskId as string;
    expect(aliceTask).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  afterAll(async () => {
    await dashboard.close();
    await running.close();
    temp.remove();
  });

  async function signIn(token: string): Promise<{ cookie: string; csrf: string }> {
    const response = await fetch(`${base}/dashboard/login`, {
      method: 'POST',
      body: new URLSearchParams({ token }),
      redirect: 'manual',
      headers: { origin: base },
    });
    expect(response.status).toBe(303);
    const cookie = (response.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const session: any = await (await fetch(`${base}/dashboard/api/session`, { headers: { cookie } })).json();
    return { cookie, csrf: session.csrf };
  }

  it('sign-in sets an HttpOnly, SameSite=Strict session cookie scoped to /dashboard; a wrong token gets 401 and no cookie', async () => {
    const response = await fetch(`${base}/dashboard/login`, {
      method: 'POST',
      body: new URLSearchParams({ token: TOKENS[0]!.token }),
      redirect: 'manual',
      headers: { origin: base },
    });
    expect(response.status).toBe(303);
    const cookie = response.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^mcp_tasks_session=[A-Za-z0-9_-]{22}; HttpOnly; SameSite=Strict; Path=\/dashboard; Max-Age=\d+$/);
    expect(cookie).not.toContain(TOKENS[0]!.token);
    const wrong = await fetch(`${base}/dashboard/login`, {
      method: 'POST',
      body: new URLSearchParams({ token: 'not-a-token-0123456789' }),
      redirect: 'manual',
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    expect(await wrong.text()).toContain('That token was not accepted.');
    // A cross-site sign-in form is refused (login CSRF).
    const foreign = await fetch(`${base}/dashboard/login`, {
      method: 'POST',
      body: new URLSearchParams({ token: TOKENS[0]!.token }),
      redirect: 'manual',
      headers: { origin: 'https://evil.example' },
    });
    expect(foreign.status).toBe(403);
  });

  it('every page carries the strict CSP (no inline script) and the shell loads only /dashboard/assets/app.js', async () => {
    const { cookie } = await signIn(TOKENS[0]!.token);
    for (const path of ['/dashboard', '/dashboard/login', '/dashboard/api/tasks', `/dashboard/tasks/${aliceTask}`]) {
      const response = await fetch(`${base}${path}`, { headers: { cookie }, redirect: 'manual' });
      const csp = response.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("script-src 'self'");
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).not.toContain('unsafe-inline');
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
    const shell = await (await fetch(`${base}/dashboard`, { headers: { cookie } })).text();
    // The one script is the bundle; the other element is the first view's data (issue 26 item 15), a JSON block a
    // browser never runs, with no `<` in it that could end it.
    expect([...shell.matchAll(/<script[^>]*>/g)].map((match) => match[0])).toEqual([
      '<script type="module" src="/dashboard/assets/app.js">',
      '<script type="application/json" id="initial-data">',
    ]);
    const data = /<script type="application\/json" id="initial-data">([^<]*)<\/script>/.exec(shell)?.[1];
    expect(JSON.parse(data ?? 'null')).toMatchObject({ url: '/dashboard', session: { owner: expect.any(String) }, tasks: { tasks: expect.any(Array) } });
  });

  it('signed out: pages redirect to the sign-in page, the API answers 401, a forged cookie is nobody', async () => {
    expect((await fetch(`${base}/dashboard`, { redirect: 'manual' })).headers.get('location')).toBe('/dashboard/login');
    expect((await fetch(`${base}/dashboard/api/tasks`)).status).toBe(401);
    expect((await fetch(`${base}/dashboard/api/tasks`, { headers: { cookie: 'mcp_tasks_session=AAAAAAAAAAAAAAAAAAAAAA' } })).status).toBe(401);
  });

  it("issue 28: /dashboard/api/upstreams answers this process's upstream statuses to a signed-in viewer ([] without upstreams), nothing without a session", async () => {
    const statuses = [
      {
        name: 'everything',
        transport: 'stdio' as const,
        state: 'restarting' as const,
        tools: 12,
        restarts: 1,
        failedRestarts: 2,
        inFlight: 0,
        retryInMs: 500,
        error: 'the process exited',
      },
    ];
    const withUpstreams = await serveDashboard({
      service: running.server.service.viewer,
      verify: viewerVerifier(TokenFileAuthenticator.fromFile(join(temp.dir, 'tokens.json'))),
      anonymous: { ownerKey: 'anonymous', scopes: [] },
      allowedHosts: ['127.0.0.1'],
      logger: silentLogger,
      upstreams: () => statuses,
    });
    try {
      const response = await fetch(`${withUpstreams.base}/dashboard/login`, {
        method: 'POST',
        body: new URLSearchParams({ token: TOKENS[0]!.token }),
        redirect: 'manual',
        headers: { origin: withUpstreams.base },
      });
      const cookie = (response.headers.get('set-cookie') ?? '').split(';')[0] as string;
      expect(await (await fetch(`${withUpstreams.base}/dashboard/api/upstreams`, { headers: { cookie } })).json()).toEqual({ upstreams: statuses });
      expect((await fetch(`${withUpstreams.base}/dashboard/api/upstreams`)).status).toBe(401);
    } finally {
      await withUpstreams.close();
    }
    const { cookie } = await signIn(TOKENS[0]!.token);
    expect(await (await fetch(`${base}/dashboard/api/upstreams`, { headers: { cookie } })).json()).toEqual({ upstreams: [] });
  });

  it('a POST without the CSRF token, or from another origin, changes nothing; the same request with both cancels', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 30 } }, { ...V2, token: TOKENS[0]!.token });
    const taskId = created.body.result?.taskId as string;
    const { cookie, csrf } = await signIn(TOKENS[0]!.token);
    const cancel = (headers: Record<string, string>) =>
      fetch(`${base}/dashboard/api/tasks/${taskId}/cancel`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json', ...headers },
        body: '{}',
      });
    expect((await cancel({})).status).toBe(403);
    expect((await cancel({ 'x-csrf-token': 'wrong' })).status).toBe(403);
    expect((await cancel({ 'x-csrf-token': csrf, origin: 'https://evil.example' })).status).toBe(403);
    expect((await cancel({ 'x-csrf-token': csrf, 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await running.server.service.viewer.inspect(ALICE, taskId)).task.status).toBe('working');
    const ok = await cancel({ 'x-csrf-token': csrf, origin: base });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as any).cancelled).toBe(true);
  });

  it('issue 23: an action whose Content-Type is not JSON (text/plain, a form, multipart, none) gets 415 and cancels or answers nothing; the sign-in takes only its form', async () => {
    const created = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 30 } }, { ...V2, token: TOKENS[0]!.token });
    const taskId = created.body.result?.taskId as string;
    const { cookie, csrf } = await signIn(TOKENS[0]!.token);
    const port = Number(host.split(':')[1]);
    const post = (path: string, body: string, type: string | undefined, extra: Record<string, string> = { cookie, 'x-csrf-token': csrf, origin: base }) =>
      sendHttp(port, { method: 'POST', path, headers: { ...extra, ...(type === undefined ? {} : { 'content-type': type }) }, body }, 15_000);
    for (const type of ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', undefined]) {
      for (const [path, body] of [
        [`/dashboard/api/tasks/${taskId}/cancel`, '{}'],
        [`/dashboard/api/tasks/${taskId}/answer`, '{"responses":{"input-1":{"action":"decline"}}}'],
        ['/dashboard/api/logout', '{}'],
      ]) {
        const answer = await post(path as string, body as string, type);
        expect([answer.status, JSON.parse(answer.text)], `${path} ${String(type)}`).toEqual([415, { error: 'Content-Type must be application/json' }]);
      }
    }
    // An action runs only once its whole body is in and is JSON: not JSON, oversized, or cut short by the connection.
    const cancelPath = `/dashboard/api/tasks/${taskId}/cancel`;
    expect((await post(cancelPath, 'not json', 'application/json')).status).toBe(400);
    const raw = (length: number, connection: string) =>
      `POST ${cancelPath} HTTP/1.1\r\nHost: ${host}\r\nCookie: ${cookie}\r\nX-CSRF-Token: ${csrf}\r\nOrigin: ${base}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nConnection: ${connection}\r\n\r\n`;
    // Oversized, from a client still sending on a closing connection: it reads its 413 (the body is drained), not a reset.
    const big = Buffer.alloc(3 * 1024 * 1024, 0x20);
    expect(
      (
        await sendRawHttp(
          port,
          { pieces: [Buffer.from(raw(big.length, 'close')), big.subarray(0, 1024 * 1024), big.subarray(1024 * 1024)], pauseMs: 5, readAfterSending: true },
          15_000,
        )
      ).status,
    ).toBe(413);
    expect((await sendRawHttp(port, { pieces: [Buffer.from(`${raw(50, 'keep-alive')}{`)], halfClose: true }, 15_000)).status).toBeLessThan(500);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await running.server.service.viewer.inspect(ALICE, taskId)).task.status).toBe('working');
    // Still signed in (the refused logout closed nothing); the same cancel as JSON works.
    expect((await fetch(`${base}/dashboard/api/session`, { headers: { cookie } })).status).toBe(200);
    expect((await post(`/dashboard/api/tasks/${taskId}/cancel`, '{}', 'application/json; charset=utf-8')).status).toBe(200);
    expect((await running.server.service.viewer.inspect(ALICE, taskId)).task.status).toBe('cancelled');
    // The sign-in page posts a form; anything else opens no session.
    for (const [type, body] of [
      ['application/json', JSON.stringify({ token: TOKENS[0]!.token })],
      ['text/plain', `token=${TOKENS[0]!.token}`],
      [undefined, `token=${TOKENS[0]!.token}`],
    ]) {
      const answer = await post('/dashboard/login', body as string, type, { origin: base });
      expect([answer.status, answer.headers['set-cookie']], String(type)).toEqual([415, undefined]);
    }
    expect((await post('/dashboard/login', `token=${TOKENS[0]!.token}`, 'application/x-www-form-urlencoded;charset=UTF-8', { origin: base })).status).toBe(303);
  });

  it('a Host outside the allow-list is refused (DNS rebinding)', async () => {
    // fetch() may not set Host, so plain node:http.
    const status = (hostHeader: string) =>
      new Promise<number | undefined>((resolve, reject) => {
        const port = Number(host.split(':')[1]);
        request({ host: '127.0.0.1', port, path: '/dashboard/login', headers: { host: hostHeader } }, (response) => {
          response.resume();
          resolve(response.statusCode);
        })
          .on('error', reject)
          .end();
      });
    expect(await status('rebind.evil.example')).toBe(403);
    expect(await status(host)).toBe(200);
  });

  it('owners see only their own tasks; admin:read sees every owner read-only; admin:read + tasks:cancel may cancel', async () => {
    const ids = async (token: string) => {
      const { cookie } = await signIn(token);
      const body: any = await (await fetch(`${base}/dashboard/api/tasks?limit=200`, { headers: { cookie } })).json();
      return body.tasks.map((task: { taskId: string }) => task.taskId) as string[];
    };
    expect(await ids(TOKENS[0]!.token)).toContain(aliceTask);
    expect(await ids(TOKENS[1]!.token)).not.toContain(aliceTask);
    expect(await ids('auditor-token-0123456')).toContain(aliceTask);

    const bob = await signIn(TOKENS[1]!.token);
    const foreign = await fetch(`${base}/dashboard/api/tasks/${aliceTask}`, { headers: { cookie: bob.cookie } });
    const unknown = await fetch(`${base}/dashboard/api/tasks/AAAAAAAAAAAAAAAAAAAAAA`, { headers: { cookie: bob.cookie } });
    expect([foreign.status, unknown.status]).toEqual([404, 404]);
    expect(await foreign.text()).toBe(await unknown.text());
    // The full result (issue 26 item 15) follows the same rule: another owner's task reads as an unknown id.
    const foreignResult = await fetch(`${base}/dashboard/api/tasks/${aliceTask}/result`, { headers: { cookie: bob.cookie } });
    const unknownResult = await fetch(`${base}/dashboard/api/tasks/AAAAAAAAAAAAAAAAAAAAAA/result`, { headers: { cookie: bob.cookie } });
    expect([foreignResult.status, unknownResult.status]).toEqual([404, 404]);
    expect(await foreignResult.text()).toBe(await unknownResult.text());
    const bobCancel = await fetch(`${base}/dashboard/api/tasks/${aliceTask}/cancel`, {
      method: 'POST',
      headers: { cookie: bob.cookie, 'x-csrf-token': bob.csrf, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(bobCancel.status).toBe(404);

    const auditor = await signIn('auditor-token-0123456');
    const page: any = await (await fetch(`${base}/dashboard/api/tasks/${aliceTask}`, { headers: { cookie: auditor.cookie } })).json();
    expect(page.permissions).toEqual({ cancel: false, answer: false });
    const refused = await fetch(`${base}/dashboard/api/tasks/${aliceTask}/cancel`, {
      method: 'POST',
      headers: { cookie: auditor.cookie, 'x-csrf-token': auditor.csrf, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(refused.status).toBe(403);
    expect((await running.server.service.viewer.inspect(ALICE, aliceTask)).task.status).toBe('working');

    const operator = await signIn('operator-token-012345');
    const cancelled = await fetch(`${base}/dashboard/api/tasks/${aliceTask}/cancel`, {
      method: 'POST',
      headers: { cookie: operator.cookie, 'x-csrf-token': operator.csrf, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(cancelled.status).toBe(200);
    expect((await running.server.service.viewer.inspect(ALICE, aliceTask)).task.status).toBe('cancelled');
  });

  it('filters and keyset paging: a page boundary stays put while new tasks are created', async () => {
    const { cookie } = await signIn(TOKENS[1]!.token);
    const mine: string[] = [];
    for (let i = 0; i < 5; i += 1)
      mine.push(
        (await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: `b${i}` } }, { ...V2, token: TOKENS[1]!.token }))
          .body.result?.taskId as string,
      );
    const get = async (query: string): Promise<any> => (await fetch(`${base}/dashboard/api/tasks?${query}`, { headers: { cookie } })).json();
    const first = await get('limit=2&tool=slow_compute');
    expect(first.tasks.map((task: { taskId: string }) => task.taskId)).toEqual([mine[4], mine[3]]);
    await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'late' } }, { ...V2, token: TOKENS[1]!.token });
    const second = await get(`limit=2&tool=slow_compute&before=${first.nextBefore}`);
    expect(second.tasks.map((task: { taskId: string }) => task.taskId)).toEqual([mine[2], mine[1]]);
    expect((await get('tool=greet')).tasks).toEqual([]);
    expect((await get('status=completed&tool=slow_compute&limit=50')).tasks.length).toBeGreaterThanOrEqual(0);
    expect((await fetch(`${base}/dashboard/api/tasks?before=-1`, { headers: { cookie } })).status).toBe(400);
  });
});
