/**
 * `--auth jwt` end to end against a real authorization server (oidc-provider 9.13 on loopback, issue 10 §1): the
 * RFC 9728 metadata, 401 challenges with `resource_metadata` for every kind of bad token (a missing one no more
 * leniently than a bad one, C-SEC-10), expiry, key rotation with the provider's own JWKS, 403
 * `insufficient_scope` for method- and tool-level scopes, the scopes and identity in `authInfo`, and listen
 * isolation between two subjects of one tenant (E45, C-SEC-07). The only hand-signed token is the negative case
 * "signed by an unknown key".
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { discoverAuthorizationServer } from '../../src/auth/discovery.js';
import { JwtAuthenticator } from '../../src/auth/jwt.js';
import { silentLogger } from '../../src/core/logger.js';
import { ownerKeyOf } from '../../src/core/owner.js';
import { ScopePolicy } from '../../src/core/scopes.js';
import { BearerAuth } from '../../src/server/http/bearer-auth.js';
import { conformanceFixtureTools } from '../../src/tools/fixtures/conformance.js';
import { TestAuthorizationServer, type TestClient } from '../helpers/authorization-server.js';
import { connectV1Http, connectV2Http, gatedTools, Gates } from '../helpers/official-clients.js';
import { openListen, type OpenStream } from '../helpers/sse.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { pollModernTask, postModern, postRaw } from '../helpers/wire.js';

const ALL = 'tasks:read tasks:cancel tasks:answer logs:read';
const alice: TestClient = { clientId: 'alice', secret: 'alice-secret-0123456789abcdef0123456789', tenant: 'acme', scope: ALL };
const bob: TestClient = { clientId: 'bob', secret: 'bob-secret-0123456789abcdef0123456789ab', tenant: 'acme', scope: ALL };
/** No tenant claim at all: its tenant is "". */
const loner: TestClient = { clientId: 'loner', secret: 'loner-secret-0123456789abcdef0123456789', scope: ALL };
/** `gated` needs logs:read at tools/call (a tool scope); slow_compute needs none. */
const SCOPES = new ScopePolicy(new Map([['gated', ['logs:read']]]));
/** Short JWKS timings so that rotation is observable within a test: refetch for unknown kids after 100 ms, re-read every 1.5 s. */
const JWKS_COOLDOWN_MS = 100;
const JWKS_MAX_AGE_MS = 1500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** RFC 6750 challenge parameters of a `WWW-Authenticate: Bearer …` header. */
function challenge(header: string | null): Record<string, string> {
  expect(header).toMatch(/^Bearer /);
  return Object.fromEntries([...String(header).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((match) => [match[1], match[2]]));
}

describe('OAuth 2.1 resource server (--auth jwt) against oidc-provider', () => {
  const gates = new Gates();
  let issuer: TestAuthorizationServer;
  let running: RunningTasksServer;
  let metadataUrl: string;
  const streams: OpenStream[] = [];
  const token = (client: TestClient, scope = ALL) => issuer.token(client, { resource: running.url, scope });

  beforeAll(async () => {
    issuer = await TestAuthorizationServer.start({ clients: [alice, bob, loner] });
    // Real discovery: the key set URL comes from the provider's metadata.
    const discovered = await discoverAuthorizationServer(issuer.issuer);
    running = await startTasksServer({
      tools: [...conformanceFixtureTools(), ...gatedTools(gates)],
      auth: (url) =>
        new JwtAuthenticator({
          issuer: issuer.issuer,
          audience: url.href,
          jwksUrl: new URL(discovered.jwks_uri),
          jwksCooldownMs: JWKS_COOLDOWN_MS,
          jwksCacheMaxAgeMs: JWKS_MAX_AGE_MS,
        }),
      oauthIssuer: issuer.issuer,
      scopes: SCOPES,
      limits: { pollIntervalMs: 50 },
    });
    metadataUrl = `${new URL(running.url).origin}/.well-known/oauth-protected-resource/mcp`;
  });
  afterAll(async () => {
    for (const stream of streams) stream.close();
    await running?.close();
    await issuer?.close();
  });

  it('RFC 9728: the protected-resource metadata is served at the bare and the path-suffixed well-known URL', async () => {
    const expected = {
      resource: running.url,
      authorization_servers: [issuer.issuer],
      scopes_supported: expect.arrayContaining(['tasks:read', 'tasks:cancel', 'tasks:answer', 'logs:read', 'admin:read', 'admin:write']),
    };
    for (const url of [metadataUrl, `${new URL(running.url).origin}/.well-known/oauth-protected-resource`]) {
      const response = await fetch(url);
      expect(response.status, url).toBe(200);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect(await response.json()).toMatchObject(expected);
    }
    expect((await fetch(metadataUrl, { method: 'POST' })).status).toBe(405);
    // No token is needed for discovery, and the authorization server it names is the real one.
    const doc = (await (await fetch(metadataUrl)).json()) as { authorization_servers: string[] };
    expect((await discoverAuthorizationServer(doc.authorization_servers[0] as string)).issuer).toBe(issuer.issuer);
  });

  it('a valid access token works for the official clients of both generations and for tasks', async () => {
    const accessToken = await token(alice);
    const v2 = await connectV2Http(running.url, { token: accessToken });
    expect((await v2.client.listTools()).tools.map((tool) => tool.name)).toContain('slow_compute');
    await v2.close();
    const v1 = await connectV1Http(running.url, { token: accessToken });
    expect((await v1.client.listTools()).tools.map((tool) => tool.name)).toContain('slow_compute');
    await v1.close();
    const created = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, { token: accessToken });
    expect(created.body.result?.resultType).toBe('task');
    expect((await pollModernTask(running.url, String(created.body.result?.taskId), { token: accessToken })).status).toBe('completed');
  });

  it('C-SEC-10: missing, non-bearer, malformed, tampered, expired, foreign-audience, foreign-issuer and unknown-key tokens all get 401 with resource_metadata, before any task lookup', async () => {
    const good = await token(alice);
    // A task that keeps working: a terminal one would be answered from the service's terminal-task cache, and the
    // probe below (on the store) could not see the good token's lookup of the negative control.
    const created = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 30 } }, { token: good });
    const taskId = String(created.body.result?.taskId);

    issuer.accessTokenTtlS = 1;
    const shortLived = await token(alice);
    issuer.accessTokenTtlS = 300;
    // It works while valid (so its later refusal is the expiry, nothing else).
    expect((await postModern(running.url, 'tasks/get', { taskId }, { token: shortLived })).status).toBe(200);

    const foreignAudience = await issuer.token(alice, { resource: 'http://127.0.0.1:1/other-mcp', scope: ALL });
    // Another provider with the very same signing keys: the signature verifies, only `iss` differs.
    const impostor = await TestAuthorizationServer.start({ clients: [alice], keys: issuer.signingKeys });
    const foreignIssuer = await impostor.token(alice, { resource: running.url, scope: ALL });
    await impostor.close();
    // The one hand-signed token: right claims, a key the issuer never published.
    const { privateKey } = await generateKeyPair('ES256');
    const unknownKey = await new SignJWT({ scope: ALL, tenant: 'acme' })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'not-published' })
      .setIssuer(issuer.issuer)
      .setAudience(running.url)
      .setSubject('alice')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    const [header, payload, signature] = good.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: 'bob' })).toString('base64url')}.${signature}`;

    const deadline = (JSON.parse(Buffer.from(shortLived.split('.')[1] as string, 'base64url').toString()) as { exp: number }).exp * 1000;
    await sleep(Math.max(0, deadline - Date.now()) + 50);

    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ['missing', {}, /Missing Authorization header/],
      ['non-bearer', { authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}` }, /expected 'Bearer TOKEN'/],
      ['malformed', { authorization: 'Bearer not.a.jwt' }, /Malformed token/],
      ['tampered', { authorization: `Bearer ${tampered}` }, /signature is invalid/],
      ['expired', { authorization: `Bearer ${shortLived}` }, /expired/],
      ['foreign audience', { authorization: `Bearer ${foreignAudience}` }, /not issued for this resource/],
      ['foreign issuer', { authorization: `Bearer ${foreignIssuer}` }, /not issued by the trusted issuer/],
      ['unknown key', { authorization: `Bearer ${unknownKey}` }, /unknown key/],
    ];
    const lookups: string[] = [];
    const realGet = running.store.get;
    const aliceKey = ownerKeyOf({ issuer: issuer.issuer, subject: 'alice', tenant: 'acme' });
    // Both scoped reads of the store: `get`, and `getWithOutcome` (what the service's task reads use).
    const realGetWithOutcome = running.store.getWithOutcome;
    running.store.get = (id, scope) => {
      lookups.push(`${scope.ownerKey}:${id}`);
      return realGet.call(running.store, id, scope);
    };
    running.store.getWithOutcome = (id, scope, maxOutcomeChars) => {
      lookups.push(`${scope.ownerKey}:${id}`);
      return realGetWithOutcome.call(running.store, id, scope, maxOutcomeChars);
    };
    try {
      for (const [what, headers, description] of cases) {
        for (const method of ['tasks/get', 'tasks/cancel']) {
          const response = await postModern(running.url, method, { taskId }, { headers });
          expect(response.status, `${what} ${method}`).toBe(401);
          expect(response.body, what).not.toHaveProperty('result');
          const params = challenge(response.headers.get('www-authenticate'));
          expect(params, what).toMatchObject({ error: 'invalid_token', resource_metadata: metadataUrl });
          expect(params.error_description, what).toMatch(description);
        }
        const legacy = await postRaw(
          running.url,
          JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
          }),
          headers,
        );
        expect(legacy.status, `${what} initialize`).toBe(401);
      }
      expect(lookups).toEqual([]);
      // Negative control of the probe: the good token does reach the lookup.
      expect((await postModern(running.url, 'tasks/get', { taskId }, { token: good })).status).toBe(200);
      expect(lookups).toEqual([`${aliceKey}:${taskId}`]);
    } finally {
      running.store.get = realGet;
      running.store.getWithOutcome = realGetWithOutcome;
    }
  });

  it('key rotation: tokens of the old key keep working while it is published, new-key tokens verify after a JWKS refetch, retired-key tokens stop after the cache age', async () => {
    const oldToken = await token(alice);
    expect((await postModern(running.url, 'tools/list', {}, { token: oldToken })).status).toBe(200);
    const [oldKid] = issuer.keyIds;
    await issuer.rotate();
    const newToken = await token(alice);
    expect(JSON.parse(Buffer.from(newToken.split('.')[0] as string, 'base64url').toString()).kid).not.toBe(oldKid);
    const fetchesBefore = issuer.jwksRequests;
    await sleep(JWKS_COOLDOWN_MS + 50);
    // The verifier has never seen the new kid: it fetches the key set again and verifies.
    expect((await postModern(running.url, 'tools/list', {}, { token: newToken })).status).toBe(200);
    expect(issuer.jwksRequests).toBeGreaterThan(fetchesBefore);
    expect((await postModern(running.url, 'tools/list', {}, { token: oldToken })).status).toBe(200);

    issuer.retireOldKeys();
    await sleep(JWKS_MAX_AGE_MS + 200);
    const refused = await postModern(running.url, 'tools/list', {}, { token: oldToken });
    expect(refused.status).toBe(401);
    expect(challenge(refused.headers.get('www-authenticate')).error_description).toMatch(/unknown key/);
    expect((await postModern(running.url, 'tools/list', {}, { token: newToken })).status).toBe(200);
  });

  it('403 insufficient_scope with the missing scope named, for task methods and for a tool scope; the same token succeeds where it has the scope', async () => {
    const readOnly = await token(alice, 'tasks:read');
    const full = await token(alice);
    const created = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, { token: readOnly });
    expect(created.body.result?.resultType).toBe('task');
    const taskId = String(created.body.result?.taskId);
    expect((await pollModernTask(running.url, taskId, { token: readOnly })).status).toBe('completed');
    for (const [method, params, scope] of [
      ['tasks/cancel', { taskId }, 'tasks:cancel'],
      ['tasks/update', { taskId, inputResponses: {} }, 'tasks:answer'],
      ['tools/call', { name: 'gated', arguments: { gate: randomUUID() } }, 'logs:read'],
    ] as const) {
      const response = await postModern(running.url, method, params, { token: readOnly });
      expect(response.status, method).toBe(403);
      expect(challenge(response.headers.get('www-authenticate')), method).toMatchObject({ error: 'insufficient_scope', scope, resource_metadata: metadataUrl });
    }
    const noRead = await token(alice, 'tasks:cancel');
    expect((await postModern(running.url, 'tasks/get', { taskId }, { token: noRead })).status).toBe(403);
    // Negative control: the full token passes every one of those gates.
    expect((await postModern(running.url, 'tasks/cancel', { taskId }, { token: full })).status).toBe(200);
    const gate = randomUUID();
    const gated = await postModern(running.url, 'tools/call', { name: 'gated', arguments: { gate } }, { token: full });
    expect(gated.body.result?.resultType).toBe('task');
    gates.open(gate);
  });

  it('the verified identity and scopes reach authInfo (owner key issuer|subject|tenant; a token without the tenant claim has the tenant "")', async () => {
    const gate = new BearerAuth({
      authenticator: new JwtAuthenticator({ issuer: issuer.issuer, audience: running.url, jwksUrl: new URL(`${issuer.issuer}/jwks`) }),
      scopes: SCOPES,
      logger: silentLogger,
    });
    const request = (accessToken: string) => ({ headers: { authorization: `Bearer ${accessToken}` }, socket: {} }) as unknown as IncomingMessage;
    const unused = {} as ServerResponse;
    const caller = await gate.authenticate(request(await token(alice, 'tasks:read logs:read')), unused);
    expect(caller?.ownerKey).toBe(`${issuer.issuer}|alice|acme`);
    expect(caller?.authInfo).toMatchObject({
      token: '',
      clientId: 'alice',
      scopes: ['tasks:read', 'logs:read'],
      resource: new URL(running.url),
      extra: { ownerKey: caller?.ownerKey, issuer: issuer.issuer, subject: 'alice', tenant: 'acme' },
    });
    expect(caller?.authInfo.expiresAt).toBeGreaterThan(Date.now() / 1000);
    const lonely = await gate.authenticate(request(await token(loner)), unused);
    expect(lonely?.ownerKey).toBe(`${issuer.issuer}|loner|`);
  });

  it('a key set that cannot be fetched answers 503 with Retry-After, not 401 (the token is not known to be bad)', async () => {
    const dead = new BearerAuth({
      authenticator: new JwtAuthenticator({ issuer: issuer.issuer, audience: running.url, jwksUrl: new URL('http://127.0.0.1:1/jwks') }),
      scopes: SCOPES,
      logger: silentLogger,
    });
    const written: { status?: number; headers?: Record<string, unknown>; body?: string } = {};
    const response = {
      writeHead(status: number, headers: Record<string, unknown>) {
        Object.assign(written, { status, headers });
        return this;
      },
      end(body: string) {
        written.body = body;
      },
    } as unknown as ServerResponse;
    const request = { headers: { authorization: `Bearer ${await token(alice)}` }, socket: {} } as unknown as IncomingMessage;
    expect(await dead.authenticate(request, response)).toBeUndefined();
    expect(written).toMatchObject({ status: 503, headers: { 'retry-after': '5' } });
    expect(JSON.parse(String(written.body))).toEqual({
      error: 'temporarily_unavailable',
      error_description: 'The authorization server keys cannot be fetched',
    });
  });

  it("E45/C-SEC-07 two subjects of one tenant: bob listening with alice's task id gets an ack without it and nothing about it", async () => {
    const [aliceToken, bobToken] = [await token(alice), await token(bob)];
    const gate = randomUUID();
    const created = await postModern(running.url, 'tools/call', { name: 'gated', arguments: { gate } }, { token: aliceToken });
    const aliceTask = String(created.body.result?.taskId);
    const own = await postModern(running.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, { token: bobToken });
    const bobTask = String(own.body.result?.taskId);
    const intruder = await openListen(running.url, { taskIds: [aliceTask, bobTask] }, { id: 'listen-bob', token: bobToken });
    streams.push(intruder);
    const owner = await openListen(running.url, { taskIds: [aliceTask] }, { id: 'listen-alice', token: aliceToken });
    streams.push(owner);
    const ack = await intruder.sse!.waitFor(() => true, { what: 'ack' });
    expect((ack.params as { notifications: unknown }).notifications).toEqual({ taskIds: [bobTask] });
    gates.open(gate);
    await owner.sse!.waitFor((message) => message.method === 'notifications/tasks' && (message.params as { status?: string }).status === 'completed', {
      what: 'alice sees completed',
    });
    expect(intruder.sse!.messages.filter((message) => JSON.stringify(message).includes(aliceTask))).toEqual([]);
    // And bob's direct reads of alice's task answer like an unknown id.
    const foreign = await postModern(running.url, 'tasks/get', { taskId: aliceTask }, { token: bobToken });
    expect(foreign.body.error).toEqual({ code: -32602, message: 'Failed to retrieve task: Task not found' });
  });
});
