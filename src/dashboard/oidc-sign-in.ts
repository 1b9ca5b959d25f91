import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

import { createRemoteJWKSet, jwtVerify } from 'jose';

/** What the sign-in reads of the issuer's metadata (RFC 8414 / OpenID Connect Discovery). */
export interface IssuerMetadata {
  issuer: string;
  jwks_uri: string;
  authorization_endpoint?: unknown;
  token_endpoint?: unknown;
  code_challenge_methods_supported?: unknown;
  [field: string]: unknown;
}

/** How the dashboard signs people in against the server's JWT issuer (authorization-code flow with PKCE). */
export interface OidcSignInOptions {
  /** The issuer identifier (`--jwt-issuer`): discovery finds its endpoints, its id tokens must name it. */
  issuer: string;
  /** The dashboard's client id at that issuer (a public client: no secret; PKCE S256 protects the code). */
  clientId: string;
  /** The resource the access token is for (RFC 8707): this server's MCP URL, the JWT audience (`--jwt-audience`). */
  resource: string;
  /** Scopes asked for, space separated; `openid` is added. @defaultValue `tasks:read tasks:cancel tasks:answer` */
  scopes?: string;
  /** Where the issuer sends the browser back; must be registered for the client. @defaultValue `<origin of the request>/dashboard/callback` */
  redirectUri?: string;
  /**
   * Fetch and check the issuer's metadata (the CLI passes `auth/discovery.ts`, the server's one discovery).
   * @throws Error when the issuer cannot be reached or its metadata is unusable.
   */
  discover: (issuer: string) => Promise<IssuerMetadata>;
  /** Longest a sign-in may take from the redirect to the callback (ms). @defaultValue 10 min */
  pendingTtlMs?: number;
}

/** One sign-in on its way: what the callback must match. Kept in this process's memory, keyed by `state`. */
interface PendingSignIn {
  verifier: string;
  nonce: string;
  redirectUri: string;
  /** Epoch ms. */
  expiresAt: number;
}

/** A sign-in the callback could not complete (shown on the sign-in page; never contains a token). */
export class SignInError extends Error {
  override readonly name = 'SignInError';
}

/** The issuer could not be reached (discovery or the token endpoint): try again later (HTTP 503). */
export class SignInUnavailableError extends Error {
  override readonly name = 'SignInUnavailableError';
}

/** Name of the short-lived cookie binding a sign-in's `state` to the browser that started it. */
export const SIGN_IN_COOKIE = 'mcp_tasks_sign_in';

const MAX_PENDING = 10_000;

function random(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The authorization-code flow with PKCE (RFC 7636, S256 only), `state` (bound to the browser by an HttpOnly cookie)
 * and an OpenID Connect `nonce`, for the dashboard's JWT mode (issue 16):
 * {@link start} builds the authorization URL; {@link finish} checks `state` against the cookie and the pending
 * sign-in, redeems the code at the token endpoint with the verifier and the resource, and verifies the id token
 * (signature by the issuer's keys, `iss`, `aud` = client id, `nonce`). The access token it returns is then verified
 * by the server's own authenticator like any bearer token, so the dashboard has no identity rules of its own.
 */
export class OidcSignIn {
  private readonly pending = new Map<string, PendingSignIn>();
  private metadata: Promise<IssuerMetadata> | undefined;
  private keys: ReturnType<typeof createRemoteJWKSet> | undefined;
  private readonly scope: string;

  constructor(private readonly options: OidcSignInOptions) {
    const scopes = new Set(['openid', ...(options.scopes ?? 'tasks:read tasks:cancel tasks:answer').split(/\s+/).filter(Boolean)]);
    this.scope = [...scopes].join(' ');
  }

  /** The issuer's endpoints (discovered once; a failed discovery is tried again next time). */
  private async discovered(): Promise<IssuerMetadata> {
    this.metadata ??= this.options.discover(this.options.issuer).catch((error: unknown) => {
      this.metadata = undefined;
      throw new SignInUnavailableError(error instanceof Error ? error.message : String(error));
    });
    return this.metadata;
  }

  /**
   * Begin a sign-in: where to send the browser, and the `state` to set in {@link SIGN_IN_COOKIE}.
   * @param origin the dashboard's origin as the browser reached it (used when no redirect URI is configured).
   * @throws SignInUnavailableError when discovery fails, SignInError when the issuer has no authorization endpoint.
   */
  async start(origin: string, now: number): Promise<{ location: string; state: string }> {
    const metadata = await this.discovered();
    if (typeof metadata.authorization_endpoint !== 'string' || typeof metadata.token_endpoint !== 'string')
      throw new SignInError(`the issuer ${this.options.issuer} has no authorization or token endpoint`);
    const methods = metadata.code_challenge_methods_supported;
    if (Array.isArray(methods) && !methods.includes('S256')) throw new SignInError(`the issuer ${this.options.issuer} does not support PKCE with S256`);
    for (const [state, entry] of this.pending) if (entry.expiresAt <= now) this.pending.delete(state);
    while (this.pending.size >= MAX_PENDING) this.pending.delete(this.pending.keys().next().value as string);
    const state = random(16);
    const verifier = random(32);
    const nonce = random(16);
    const redirectUri = this.options.redirectUri ?? `${origin}/dashboard/callback`;
    this.pending.set(state, { verifier, nonce, redirectUri, expiresAt: now + (this.options.pendingTtlMs ?? 10 * 60_000) });
    const url = new URL(metadata.authorization_endpoint);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: this.options.clientId,
      redirect_uri: redirectUri,
      scope: this.scope,
      state,
      nonce,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      resource: this.options.resource,
    }).toString();
    return { location: url.href, state };
  }

  /**
   * Complete a sign-in from the callback's query. The pending entry is used up whatever happens (a code or state
   * is good once).
   * @param cookieState the value of {@link SIGN_IN_COOKIE} (the browser that started this sign-in).
   * @returns the access token for the server's authenticator to verify.
   * @throws SignInError for an error answer of the issuer, a state that does not match, an expired sign-in, a
   *   refused code or an id token that does not verify; SignInUnavailableError when the token endpoint is unreachable.
   */
  async finish(query: URLSearchParams, cookieState: string | undefined, now: number): Promise<string> {
    const state = query.get('state') ?? '';
    const entry = this.pending.get(state);
    this.pending.delete(state);
    if (query.has('error'))
      throw new SignInError(
        `the issuer refused the sign-in: ${query.get('error')}${query.get('error_description') ? ` (${query.get('error_description')})` : ''}`,
      );
    // The state must be one this process handed out, to this very browser (no sign-in planted by another site).
    if (!entry || cookieState === undefined || !same(cookieState, state))
      throw new SignInError('this sign-in was not started in this browser (or the server restarted); sign in again');
    if (entry.expiresAt <= now) throw new SignInError('the sign-in took too long; sign in again');
    const code = query.get('code');
    if (!code) throw new SignInError('the issuer sent no authorization code');
    const metadata = await this.discovered();
    let response: Response;
    try {
      response = await fetch(metadata.token_endpoint as string, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: entry.redirectUri,
          client_id: this.options.clientId,
          code_verifier: entry.verifier,
          resource: this.options.resource,
        }),
        signal: AbortSignal.timeout(10_000),
        redirect: 'error',
      });
    } catch (error) {
      throw new SignInUnavailableError(`the token endpoint cannot be reached: ${error instanceof Error ? error.message : String(error)}`);
    }
    const body = (await response.json().catch(() => ({}))) as {
      access_token?: unknown;
      id_token?: unknown;
      token_type?: unknown;
      error?: unknown;
      error_description?: unknown;
    };
    if (!response.ok || typeof body.access_token !== 'string')
      throw new SignInError(
        `the issuer did not redeem the code: ${String(body.error ?? `HTTP ${response.status}`)}${body.error_description ? ` (${String(body.error_description)})` : ''}`,
      );
    if (typeof body.token_type === 'string' && body.token_type.toLowerCase() !== 'bearer') throw new SignInError(`unexpected token type ${body.token_type}`);
    if (typeof body.id_token !== 'string') throw new SignInError('the issuer sent no id token');
    this.keys ??= createRemoteJWKSet(new URL(metadata.jwks_uri));
    try {
      const { payload } = await jwtVerify(body.id_token, this.keys, { issuer: this.options.issuer, audience: this.options.clientId });
      if (typeof payload.nonce !== 'string' || !same(payload.nonce, entry.nonce)) throw new SignInError('the id token does not carry this sign-in’s nonce');
    } catch (error) {
      if (error instanceof SignInError) throw error;
      throw new SignInError(`the id token does not verify: ${error instanceof Error ? error.message : String(error)}`);
    }
    return body.access_token;
  }
}
