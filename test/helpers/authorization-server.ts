/**
 * A real OAuth 2.1 / OpenID Connect authorization server for tests: `oidc-provider` (the certified provider for
 * Node) on a loopback port, issuing client-credentials JWT access tokens (RFC 9068) for a resource indicator
 * (RFC 8707). Discovery, the JWKS endpoint, signing keys, rotation and expiry are the provider's own; nothing here
 * signs a token.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider from 'oidc-provider';

/** A confidential client allowed the client-credentials grant. */
export interface TestClient {
  clientId: string;
  /** At least 32 characters. */
  secret: string;
  /** Put into every token as the `tenant` claim (omitted when absent). */
  tenant?: string;
  /** Scopes this client may ask for, space separated. */
  scope: string;
}

/**
 * A public client of the authorization-code flow with PKCE (a browser app such as the dashboard): no secret; the
 * person signs in through the provider's own login and consent forms (its dev interactions: any login name becomes
 * the subject).
 */
export interface TestPublicClient {
  clientId: string;
  redirectUris: string[];
  /** Put into every access token as the `tenant` claim (omitted when absent). */
  tenant?: string;
  /** Scopes this client may ask for, space separated (`openid` is allowed besides). */
  scope: string;
}

/** Every scope the provider knows (the server's fixed ones and the tool scopes the tests use). */
const PROVIDER_SCOPES = ['tasks:read', 'tasks:cancel', 'tasks:answer', 'admin:read', 'admin:write', 'logs:read', 'repo:read'];

let keyCounter = 0;

/**
 * A plain in-memory storage adapter (the provider's own prints a production warning per instance). Client-credentials
 * JWT access tokens are self-contained; this only holds what the provider chooses to record.
 */
class MapAdapter {
  private static readonly rows = new Map<string, Record<string, unknown>>();
  constructor(private readonly model: string) {}
  private key(id: string): string {
    return `${this.model}:${id}`;
  }
  async upsert(id: string, payload: Record<string, unknown>): Promise<void> {
    MapAdapter.rows.set(this.key(id), payload);
  }
  async find(id: string): Promise<Record<string, unknown> | undefined> {
    return MapAdapter.rows.get(this.key(id));
  }
  /** Sessions are found by uid in the code flow (the interaction names its session's uid). */
  async findByUid(uid: string): Promise<Record<string, unknown> | undefined> {
    for (const [key, row] of MapAdapter.rows) if (key.startsWith(`${this.model}:`) && row.uid === uid) return row;
    return undefined;
  }
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }
  async consume(id: string): Promise<void> {
    const row = MapAdapter.rows.get(this.key(id));
    if (row) row.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id: string): Promise<void> {
    MapAdapter.rows.delete(this.key(id));
  }
  async revokeByGrantId(): Promise<void> {}
}

/** A new ES256 private signing key as a JWK with a fresh `kid`. */
export async function newSigningKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  keyCounter += 1;
  return { ...(await exportJWK(privateKey)), kid: `key-${process.pid}-${keyCounter}-${Date.now()}`, alg: 'ES256', use: 'sig' };
}

/** Options of {@link TestAuthorizationServer.start}. */
export interface AuthorizationServerOptions {
  clients: TestClient[];
  /** Code-flow clients; with any, the provider's login and consent pages are on. */
  publicClients?: TestPublicClient[];
  /** Signing keys, the first signs (default: one new key). Share them with another instance to test the issuer check. */
  keys?: JWK[];
}

/** A running `oidc-provider`. */
export class TestAuthorizationServer {
  /** Requests served at the JWKS endpoint (proves that a verifier fetched the key set again). */
  jwksRequests = 0;
  /** Lifetime of the next tokens, seconds. */
  accessTokenTtlS = 300;
  private provider!: Provider;
  private keys: JWK[];

  private constructor(
    private readonly http: Server,
    readonly issuer: string,
    private readonly clients: TestClient[],
    keys: JWK[],
    private readonly publicClients: TestPublicClient[] = [],
  ) {
    this.keys = keys;
    this.provider = this.build();
  }

  /** Start on 127.0.0.1 (random port). */
  static async start(options: AuthorizationServerOptions): Promise<TestAuthorizationServer> {
    const keys = options.keys ?? [await newSigningKey()];
    const route: { handle?: (request: IncomingMessage, response: ServerResponse) => void } = {};
    const http = createServer((request, response) => route.handle?.(request, response));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const { port } = http.address() as AddressInfo;
    const server = new TestAuthorizationServer(http, `http://127.0.0.1:${port}`, options.clients, keys, options.publicClients);
    route.handle = (request, response) => {
      if ((request.url ?? '').startsWith('/jwks')) server.jwksRequests += 1;
      void server.provider.callback()(request, response);
    };
    return server;
  }

  /** The key ids of the published key set, signing key first. */
  get keyIds(): string[] {
    return this.keys.map((key) => key.kid as string);
  }

  /** The current signing keys (to start a second provider with the same keys). */
  get signingKeys(): JWK[] {
    return [...this.keys];
  }

  /** Rotate: a new key signs from now on; the old ones stay published, so tokens they signed keep verifying. */
  async rotate(): Promise<void> {
    this.keys = [await newSigningKey(), ...this.keys];
    this.provider = this.build();
  }

  /** Stop publishing every key but the current signing key (tokens signed by the others stop verifying once verifiers refresh). */
  retireOldKeys(): void {
    this.keys = this.keys.slice(0, 1);
    this.provider = this.build();
  }

  /**
   * A client-credentials access token (JWT) for `resource`, from the token endpoint found by discovery.
   * @throws Error with the provider's error when it refuses.
   */
  async token(client: TestClient, options: { resource: string; scope?: string }): Promise<string> {
    const discovery = (await (await fetch(`${this.issuer}/.well-known/openid-configuration`)).json()) as { token_endpoint: string };
    const response = await fetch(discovery.token_endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.clientId}:${client.secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        resource: options.resource,
        ...(options.scope === undefined ? {} : { scope: options.scope }),
      }),
    });
    const body = (await response.json()) as { access_token?: string; token_type?: string; error?: string; error_description?: string };
    if (!response.ok || body.access_token === undefined) throw new Error(`token request refused: ${body.error}: ${body.error_description}`);
    return body.access_token;
  }

  async close(): Promise<void> {
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  private build(): Provider {
    const provider = new Provider(this.issuer, {
      clients: [
        ...this.clients.map((client) => ({
          client_id: client.clientId,
          client_secret: client.secret,
          grant_types: ['client_credentials'],
          redirect_uris: [],
          response_types: [],
          scope: client.scope,
          id_token_signed_response_alg: 'ES256',
          ...(client.tenant === undefined ? {} : { tenant: client.tenant }),
        })),
        ...this.publicClients.map((client) => ({
          client_id: client.clientId,
          token_endpoint_auth_method: 'none' as const,
          grant_types: ['authorization_code'],
          redirect_uris: client.redirectUris,
          response_types: ['code'],
          scope: `openid ${client.scope}`,
          id_token_signed_response_alg: 'ES256',
          ...(client.tenant === undefined ? {} : { tenant: client.tenant }),
        })),
      ],
      adapter: MapAdapter,
      extraClientMetadata: { properties: ['tenant'] },
      jwks: { keys: this.keys },
      scopes: ['openid', ...PROVIDER_SCOPES],
      ttl: { ClientCredentials: () => this.accessTokenTtlS, AccessToken: () => this.accessTokenTtlS },
      features: {
        devInteractions: { enabled: this.publicClients.length > 0 },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, resourceIndicator) => ({
            scope: PROVIDER_SCOPES.join(' '),
            audience: resourceIndicator,
            accessTokenFormat: 'jwt',
            accessTokenTTL: this.accessTokenTtlS,
            jwt: { sign: { alg: 'ES256' } },
          }),
        },
      },
      // The provider's error page, as plain text a test can show when a browser flow goes wrong.
      renderError: (ctx, out) => {
        ctx.type = 'text/plain';
        ctx.body = `authorization server error: ${String(out.error)}: ${String(out.error_description ?? '')}`;
      },
      extraTokenClaims: (ctx) => {
        const tenant = (ctx.oidc.client as unknown as { tenant?: string } | undefined)?.tenant;
        return tenant === undefined ? undefined : { tenant };
      },
    });
    return provider;
  }
}
