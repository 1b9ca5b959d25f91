/**
 * The dashboard's sign-in in JWT mode (issue 16 with issue 10's `--auth jwt`): a pasted access token of a real
 * authorization server (oidc-provider on loopback) is verified by the server's own JwtAuthenticator — issuer,
 * audience, signature, expiry — and the viewer takes the token's scopes (`admin:read` sees every owner read-only).
 * A token for another resource is not accepted; a verifier that cannot reach the key set answers 503 and signs
 * nobody out. (No authorization-code flow with PKCE: the page takes an access token, as in token-file mode.)
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { discoverAuthorizationServer } from '../../src/auth/discovery.js';
import { JwtAuthenticator } from '../../src/auth/jwt.js';
import { silentLogger } from '../../src/core/logger.js';
import { createDashboard, type Dashboard } from '../../src/dashboard/http.js';
import { viewerVerifier } from '../../src/dashboard/verifier.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { TestAuthorizationServer, type TestClient } from '../helpers/authorization-server.js';
import { freePort } from '../helpers/server-process.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { postModern } from '../helpers/wire.js';

const TASKS = 'tasks:read tasks:cancel tasks:answer';
const alice: TestClient = { clientId: 'alice', secret: 'alice-secret-0123456789abcdef0123456789', tenant: 'acme', scope: TASKS };
const bob: TestClient = { clientId: 'bob', secret: 'bob-secret-0123456789abcdef0123456789ab', tenant: 'acme', scope: TASKS };
const auditor: TestClient = { clientId: 'auditor', secret: 'auditor-secret-0123456789abcdef01234567', tenant: 'acme', scope: 'admin:read' };
const V2 = { capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } };

/** A dashboard on its own loopback port. */
async function serveDashboard(dashboard: Dashboard): Promise<{ base: string; http: Server }> {
  const http = createServer((request, response) => void dashboard.handle(request, response));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(http.address() as AddressInfo).port}`, http };
}

describe('dashboard sign-in with JWT access tokens (issue 16, --auth jwt)', () => {
  let issuer: TestAuthorizationServer;
  let running: RunningTasksServer;
  let jwksUrl: URL;
  const servers: Server[] = [];
  let base: string;
  let aliceTask: string;

  beforeAll(async () => {
    issuer = await TestAuthorizationServer.start({ clients: [alice, bob, auditor] });
    jwksUrl = new URL((await discoverAuthorizationServer(issuer.issuer)).jwks_uri);
    let authenticator: JwtAuthenticator | undefined;
    running = await startTasksServer({
      tools: conformanceFixtureTools(),
      auth: (url) => (authenticator = new JwtAuthenticator({ issuer: issuer.issuer, audience: url.href, jwksUrl })),
      oauthIssuer: issuer.issuer,
    });
    const dashboard = createDashboard({
      service: running.server.service.viewer,
      verify: viewerVerifier(authenticator!),
      anonymous: { ownerKey: 'anonymous', scopes: [] },
      allowedHosts: null,
      logger: silentLogger,
    });
    const served = await serveDashboard(dashboard);
    servers.push(served.http);
    base = served.base;
    const created = await postModern(
      running.url,
      'tools/call',
      { name: 'slow_compute', arguments: { seconds: 30, label: 'alice' } },
      { ...V2, token: await accessToken(alice) },
    );
    aliceTask = created.body.result?.taskId as string;
    expect(aliceTask).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  afterAll(async () => {
    for (const http of servers) {
      http.closeAllConnections();
      http.close();
    }
    await running?.close();
    await issuer?.close();
  });

  /** A client-credentials access token for this server with every scope the client may have. */
  const accessToken = (client: TestClient) => issuer.token(client, { resource: running.url, scope: client.scope });
  const signIn = (at: string, token: string) =>
    fetch(`${at}/dashboard/login`, { method: 'POST', body: new URLSearchParams({ token }), redirect: 'manual', headers: { origin: at } });
  async function session(at: string, token: string): Promise<{ cookie: string; body: any }> {
    const response = await signIn(at, token);
    expect(response.status).toBe(303);
    const cookie = (response.headers.get('set-cookie') ?? '').split(';')[0] as string;
    return { cookie, body: await (await fetch(`${at}/dashboard/api/session`, { headers: { cookie } })).json() };
  }

  it('an access token for this server signs in as its owner key with its scopes; the owner sees its task, another subject does not', async () => {
    const mine = await session(base, await accessToken(alice));
    expect(mine.body).toMatchObject({
      owner: `${issuer.issuer}|alice|acme`,
      scopes: expect.arrayContaining(['tasks:read', 'tasks:cancel', 'tasks:answer']),
      signedIn: true,
    });
    const list = async (cookie: string) =>
      ((await (await fetch(`${base}/dashboard/api/tasks`, { headers: { cookie } })).json()) as any).tasks.map((task: { taskId: string }) => task.taskId);
    expect(await list(mine.cookie)).toContain(aliceTask);
    const other = await session(base, await accessToken(bob));
    expect(await list(other.cookie)).not.toContain(aliceTask);
    expect((await fetch(`${base}/dashboard/api/tasks/${aliceTask}`, { headers: { cookie: other.cookie } })).status).toBe(404);
  });

  it('admin:read from the token sees every owner, read-only: cancel is refused and the task runs on', async () => {
    const admin = await session(base, await accessToken(auditor));
    expect(admin.body.scopes).toEqual(['admin:read']);
    const page: any = await (await fetch(`${base}/dashboard/api/tasks/${aliceTask}`, { headers: { cookie: admin.cookie } })).json();
    expect(page.permissions).toEqual({ cancel: false, answer: false });
    const refused = await fetch(`${base}/dashboard/api/tasks/${aliceTask}/cancel`, {
      method: 'POST',
      headers: { cookie: admin.cookie, 'x-csrf-token': admin.body.csrf, origin: base, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(refused.status).toBe(403);
    const owner = await session(base, await accessToken(alice));
    expect(((await (await fetch(`${base}/dashboard/api/tasks/${aliceTask}`, { headers: { cookie: owner.cookie } })).json()) as any).task.status).toBe(
      'working',
    );
  });

  it('a token issued for another resource, or no JWT at all, is not accepted (401, no cookie)', async () => {
    for (const token of [await issuer.token(alice, { resource: 'https://elsewhere.example/mcp', scope: alice.scope }), 'not-a-jwt']) {
      const response = await signIn(base, token);
      expect(response.status).toBe(401);
      expect(response.headers.get('set-cookie')).toBeNull();
    }
  });

  it('a verifier that cannot reach the key set answers 503 at sign-in (not "wrong token"), and nobody is signed in', async () => {
    // A fresh verifier with no cached keys and a key-set URL where nothing listens.
    const unreachable = new JwtAuthenticator({ issuer: issuer.issuer, audience: running.url, jwksUrl: new URL(`http://127.0.0.1:${await freePort()}/jwks`) });
    const served = await serveDashboard(
      createDashboard({
        service: running.server.service.viewer,
        verify: viewerVerifier(unreachable),
        anonymous: { ownerKey: 'anonymous', scopes: [] },
        allowedHosts: null,
        logger: silentLogger,
      }),
    );
    servers.push(served.http);
    const response = await signIn(served.base, await accessToken(alice));
    expect(response.status).toBe(503);
    expect(response.headers.get('set-cookie')).toBeNull();
    expect(await response.text()).toContain('cannot be checked right now');
    // Negative control: the same token at the reachable verifier signs in.
    expect((await signIn(base, await accessToken(alice))).status).toBe(303);
  });
});
