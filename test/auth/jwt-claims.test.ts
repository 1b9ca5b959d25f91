/**
 * Claim handling of `JwtAuthenticator` (scope/scp, the tenant claim, algorithms, required claims) against a key
 * set served over loopback. These unit tests sign their own tokens to reach claim shapes a provider would not
 * issue; the end-to-end tests (test/e2e/oauth-resource-server.test.ts) use only tokens of oidc-provider.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { type CryptoKey, exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { JwtAuthenticator } from '../../src/auth/jwt.js';
import { AuthenticationError } from '../../src/core/owner.js';

const ISSUER = 'https://as.unit.test';
const AUDIENCE = 'https://mcp.unit.test/mcp';

describe('JwtAuthenticator claims', () => {
  let http: Server;
  let privateKey: CryptoKey;
  let jwksUrl: URL;
  let jwksUp = true;

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    privateKey = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'unit', alg: 'ES256', use: 'sig' };
    http = createServer((_request, response) => {
      if (!jwksUp) return void response.writeHead(500).end();
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    jwksUrl = new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/jwks`);
  });
  afterAll(() => new Promise<void>((resolve) => http.close(() => resolve())));

  const sign = (claims: JWTPayload, options: { sub?: string | null; aud?: string | string[]; exp?: string } = {}) => {
    let jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'unit' })
      .setIssuer(ISSUER)
      .setAudience(options.aud ?? AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(options.exp ?? '5m');
    if (options.sub !== null) jwt = jwt.setSubject(options.sub ?? 'svc');
    return jwt.sign(privateKey);
  };
  const verifier = (options: { tenantClaim?: string; scopeClaim?: string } = {}) =>
    new JwtAuthenticator({ issuer: ISSUER, audience: AUDIENCE, jwksUrl, jwksCooldownMs: 0, ...options });
  const refusal = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(AuthenticationError);
    return error as AuthenticationError;
  };

  it('scopes from "scope" (space separated) or "scp" (array), or a configured claim', async () => {
    expect((await verifier().verify(await sign({ scope: 'tasks:read  logs:read' }))).scopes).toEqual(['tasks:read', 'logs:read']);
    expect((await verifier().verify(await sign({ scp: ['tasks:read', 'tasks:cancel'] }))).scopes).toEqual(['tasks:read', 'tasks:cancel']);
    expect((await verifier().verify(await sign({}))).scopes).toEqual([]);
    expect((await verifier({ scopeClaim: 'permissions' }).verify(await sign({ permissions: ['a:b'], scope: 'ignored' }))).scopes).toEqual(['a:b']);
    expect((await refusal(verifier().verify(await sign({ scp: [1, 2] })))).message).toMatch(/not a scope list/);
    expect((await refusal(verifier().verify(await sign({ scope: 'ok bad"quote' })))).message).toMatch(/invalid scope/);
  });

  it('tenant from the configured claim (string or number), "" when absent, refused when of another type', async () => {
    expect((await verifier().verify(await sign({ tenant: 'acme' }))).tenant).toBe('acme');
    expect((await verifier({ tenantClaim: 'tid' }).verify(await sign({ tid: 42, tenant: 'no' }))).tenant).toBe('42');
    expect((await verifier().verify(await sign({}))).tenant).toBe('');
    expect((await refusal(verifier().verify(await sign({ tenant: { id: 'x' } })))).reason).toBe('invalid_token');
  });

  it('a trailing slash of the audience does not matter; sub and exp are required; the resource and client id are reported', async () => {
    const principal = await verifier().verify(await sign({ client_id: 'cli' }, { aud: [`${AUDIENCE}/`, 'other'] }));
    expect(principal).toMatchObject({ issuer: ISSUER, subject: 'svc', resource: `${AUDIENCE}/`, clientId: 'cli' });
    expect((await refusal(verifier().verify(await sign({}, { sub: null })))).message).toMatch(/lacks the "sub" claim/);
    const noExp = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'unit' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject('svc')
      .sign(privateKey);
    expect((await refusal(verifier().verify(noExp))).message).toMatch(/lacks the "exp" claim/);
  });

  it('an HMAC or unsigned token is refused whatever its claims', async () => {
    const hmac = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject('svc')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode('0123456789abcdef0123456789abcdef'));
    expect((await refusal(verifier().verify(hmac))).message).toMatch(/algorithm is not allowed/);
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ iss: ISSUER, aud: AUDIENCE, sub: 'svc', exp: 9999999999 })).toString('base64url')}.`;
    expect((await refusal(verifier().verify(none))).reason).toBe('invalid_token');
  });

  it('a key set that cannot be fetched is "unavailable" (HTTP 503), not a bad token', async () => {
    const token = await sign({});
    jwksUp = false;
    try {
      expect((await refusal(verifier().verify(token))).reason).toBe('unavailable');
    } finally {
      jwksUp = true;
    }
    expect((await verifier().verify(token)).subject).toBe('svc');
  });
});
