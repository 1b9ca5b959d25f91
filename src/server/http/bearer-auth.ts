import type { IncomingMessage, ServerResponse } from 'node:http';

import {
  type AuthInfo,
  type AuthMetadataOptions,
  bearerAuthChallengeResponse,
  getOAuthProtectedResourceMetadataUrl,
  OAuthError,
  OAuthErrorCode,
  type OAuthTokenVerifier,
  requireScopes,
  verifyBearerToken,
} from '@modelcontextprotocol/server';

import type { Logger } from '../../core/logger.js';
import { ANONYMOUS_OWNER_KEY, AuthenticationError, type Authenticator, ownerKeyOf, type Principal } from '../../core/owner.js';
import type { ScopePolicy } from '../../core/scopes.js';

/**
 * How long the `AuthInfo` of a static (token-file) token says it is valid, in seconds: the SDK refuses credentials
 * without an expiry, and a static token is valid for as long as it stays in the file, re-checked on every request.
 */
const STATIC_TOKEN_VALIDITY_S = 60;

/** This server as an OAuth protected resource (RFC 9728), with an authorization server that issues its tokens. */
export interface ProtectedResource {
  /** The resource identifier tokens must be issued for (RFC 8707, the `aud`): the public URL of the MCP endpoint. */
  url: URL;
  /** Options of the SDK's metadata document (`resourceServerUrl` = {@link url}, the issuer, `scopes_supported`). */
  metadata: AuthMetadataOptions;
}

/** Options of {@link BearerAuth}. */
export interface BearerAuthSettings {
  authenticator: Authenticator;
  scopes: ScopePolicy;
  /** Absent with static tokens: no audience check, no `resource_metadata` in the challenges. */
  resource?: ProtectedResource;
  logger: Logger;
}

/** What the front knows about the caller of one request. */
export interface AuthenticatedCaller {
  ownerKey: string;
  authInfo: AuthInfo;
}

/** The `AuthInfo` handed to SDK handlers (`ctx.http.authInfo`): the raw token is never kept. */
export function authInfoOf(principal: Principal, ownerKey: string, nowMs: number): AuthInfo {
  return {
    token: '',
    clientId: principal.clientId ?? principal.subject,
    scopes: [...principal.scopes],
    expiresAt: principal.expiresAt ?? Math.floor(nowMs / 1000) + STATIC_TOKEN_VALIDITY_S,
    ...(principal.resource === undefined ? {} : { resource: new URL(principal.resource) }),
    extra: {
      ownerKey,
      issuer: principal.issuer,
      subject: principal.subject,
      tenant: principal.tenant,
      ...(principal.clientId === undefined ? {} : { clientId: principal.clientId }),
    },
  };
}

/** The caller when authentication is off: the one anonymous owner, holding every scope. */
export function anonymousCaller(scopes: ScopePolicy): AuthenticatedCaller {
  return {
    ownerKey: ANONYMOUS_OWNER_KEY,
    authInfo: { token: '', clientId: ANONYMOUS_OWNER_KEY, scopes: scopes.supported(), extra: { ownerKey: ANONYMOUS_OWNER_KEY } },
  };
}

/** Marks a verifier that could not decide (key set unreachable): answered 503, not 401. */
class VerifierUnavailable extends Error {}

async function writeWebResponse(response: ServerResponse, answer: Response, extraHeaders: Record<string, string> = {}): Promise<void> {
  const body = Buffer.from(await answer.arrayBuffer());
  const headers: Record<string, string | number> = { ...Object.fromEntries(answer.headers), ...extraHeaders, 'content-length': body.length };
  response.writeHead(answer.status, headers).end(body);
}

/**
 * The OAuth 2.1 resource-server gate of the HTTP front, built from the SDK's kit: `verifyBearerToken` (header
 * parsing, RFC 8707 audience via `expectedResource`, expiry), `bearerAuthChallengeResponse` (401 `invalid_token`,
 * 403 `insufficient_scope`, both with `WWW-Authenticate: Bearer … resource_metadata="…"`) and `requireScopes`
 * for the method-level scopes of {@link ScopePolicy}. A missing header gets the same 401 as a bad token.
 */
export class BearerAuth {
  private readonly verifier: OAuthTokenVerifier;
  private readonly metadataUrl: string | undefined;

  constructor(private readonly settings: BearerAuthSettings) {
    this.metadataUrl = settings.resource ? getOAuthProtectedResourceMetadataUrl(settings.resource.url) : undefined;
    this.verifier = {
      verifyAccessToken: async (token) => {
        let principal: Principal;
        try {
          principal = await settings.authenticator.verify(token);
        } catch (error) {
          if (error instanceof AuthenticationError && error.reason === 'unavailable') throw new VerifierUnavailable(error.message, { cause: error });
          throw new OAuthError(OAuthErrorCode.InvalidToken, error instanceof AuthenticationError ? error.message : 'Invalid token');
        }
        return authInfoOf(principal, ownerKeyOf(principal), Date.now());
      },
    };
  }

  /** The RFC 9728 metadata URL advertised in challenges, if any. */
  get resourceMetadataUrl(): string | undefined {
    return this.metadataUrl;
  }

  /**
   * Verify the request's bearer token.
   * @returns the caller, or `undefined` after answering 401 (missing/invalid/expired/foreign token) or 503 (the
   *   key set cannot be fetched; `Retry-After: 5`). Nothing of the token is logged.
   */
  async authenticate(request: IncomingMessage, response: ServerResponse): Promise<AuthenticatedCaller | undefined> {
    try {
      const authInfo = await verifyBearerToken(request.headers.authorization, {
        verifier: this.verifier,
        ...(this.settings.resource ? { expectedResource: this.settings.resource.url } : {}),
        ...(this.metadataUrl ? { resourceMetadataUrl: this.metadataUrl } : {}),
      });
      return { ownerKey: authInfo.extra?.ownerKey as string, authInfo };
    } catch (error) {
      if (error instanceof VerifierUnavailable) {
        this.settings.logger.error({ err: error.cause }, 'bearer token not verified: the authorization server keys cannot be fetched');
        const body = JSON.stringify({ error: 'temporarily_unavailable', error_description: error.message });
        response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '5', 'content-length': Buffer.byteLength(body) }).end(body);
        return undefined;
      }
      this.settings.logger.info(
        { reason: error instanceof Error ? error.message : String(error), remote: request.socket.remoteAddress },
        'bearer token refused',
      );
      await writeWebResponse(response, bearerAuthChallengeResponse(error, this.metadataUrl ? { resourceMetadataUrl: this.metadataUrl } : {}));
      return undefined;
    }
  }

  /**
   * Refuse a message whose method needs scopes the caller lacks (see `ScopePolicy.requiredForMessage`), with HTTP 403
   * `insufficient_scope` naming the scopes required.
   * @returns `true` when the body may proceed.
   */
  async authorize(caller: AuthenticatedCaller, body: unknown, response: ServerResponse): Promise<boolean> {
    const required = this.settings.scopes.requiredForMessage(body);
    if (required.length === 0) return true;
    const challenge = await requireScopes(...(required as [string, ...string[]]))({ request: body as never, authInfo: caller.authInfo });
    if (challenge === undefined) return true;
    this.settings.logger.info(
      { required: challenge.scopes, granted: caller.authInfo.scopes, owner: caller.authInfo.extra?.subject },
      'request refused: insufficient scope',
    );
    await writeWebResponse(
      response,
      bearerAuthChallengeResponse(new OAuthError(OAuthErrorCode.InsufficientScope, 'Insufficient scope'), {
        requiredScopes: [...challenge.scopes],
        ...(this.metadataUrl ? { resourceMetadataUrl: this.metadataUrl } : {}),
      }),
    );
    return false;
  }
}
