import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from 'jose';

import { AuthenticationError, type Authenticator, type Principal } from '../core/owner.js';
import { isScopeToken } from '../protocol/scopes.js';

/** Asymmetric JWS algorithms accepted by default (never `none`, never an HMAC: the key set is public). */
export const DEFAULT_JWT_ALGORITHMS: readonly string[] = Object.freeze([
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]);

/** Options of {@link JwtAuthenticator}. */
export interface JwtAuthenticatorOptions {
  /** The authorization server's issuer identifier; the token's `iss` must equal it. */
  issuer: string;
  /** The resource URL of this server (RFC 8707); the token's `aud` must contain it (a trailing slash aside). */
  audience: string;
  /** Where the issuer publishes its signing keys (`jwks_uri` of its metadata). */
  jwksUrl: URL;
  /** Claim holding the tenant; a token without it has the tenant `""` (string or number values only). @defaultValue "tenant" */
  tenantClaim?: string;
  /**
   * Claim holding the granted scopes: a space-separated string (RFC 9068 `scope`) or an array of strings (`scp`,
   * as Entra ID and Okta send). @defaultValue `scope`, else `scp`
   */
  scopeClaim?: string;
  /** @defaultValue {@link DEFAULT_JWT_ALGORITHMS} */
  algorithms?: readonly string[];
  /** Longest a fetched key set is trusted before it is fetched again (ms); a removed key stops working after it. @defaultValue 600000 */
  jwksCacheMaxAgeMs?: number;
  /** Shortest time between two fetches caused by unknown key ids (ms); bounds the fetches a flood of forged tokens can cause. @defaultValue 30000 */
  jwksCooldownMs?: number;
  /** Timeout of one key-set fetch (ms). @defaultValue 5000 */
  jwksTimeoutMs?: number;
}

/** The resolved settings, as the start-up banner shows them. */
export interface JwtSettings {
  issuer: string;
  audience: string;
  jwksUrl: string;
  tenantClaim: string;
  scopeClaim: string;
}

function withoutTrailingSlash(value: string): string {
  return value.endsWith('/') ? value.slice(0, -1) : value;
}

/** jose's verdict as an {@link AuthenticationError} whose message names the problem, never the token. */
function refusal(error: unknown): AuthenticationError {
  const invalid = (message: string) => new AuthenticationError('invalid_token', message, { cause: error });
  if (error instanceof AuthenticationError) return error;
  if (error instanceof errors.JWTExpired) return invalid('Token has expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'iss') return invalid('Token was not issued by the trusted issuer');
    if (error.claim === 'aud') return invalid('Token was not issued for this resource');
    if (error.claim === 'nbf') return invalid('Token is not valid yet');
    if (error.reason === 'missing') return invalid(`Token lacks the "${error.claim}" claim`);
    return invalid(`Token claim "${error.claim}" is invalid`);
  }
  if (error instanceof errors.JWKSNoMatchingKey) return invalid('Token is signed by an unknown key');
  if (error instanceof errors.JWKSMultipleMatchingKeys) return invalid('Token names no usable key id');
  if (error instanceof errors.JWSSignatureVerificationFailed) return invalid('Token signature is invalid');
  if (error instanceof errors.JOSEAlgNotAllowed) return invalid('Token signing algorithm is not allowed');
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid || error instanceof errors.JOSENotSupported) return invalid('Malformed token');
  // Fetching or reading the key set failed (timeout, network, non-200, not JSON): nothing is known about the token.
  return new AuthenticationError('unavailable', 'The authorization server keys cannot be fetched', { cause: error });
}

/**
 * OAuth 2.1 resource-server verification of JWT access tokens (RFC 9068) with `jose`: signature against the
 * issuer's remote key set (fetched on first use, cached for `jwksCacheMaxAgeMs`, fetched again at once for an
 * unknown key id but at most every `jwksCooldownMs`), then `iss`, `aud` (this resource, RFC 8707), `exp` (required)
 * and `nbf`, without clock tolerance. The principal is `iss` / `sub` / the tenant claim; the scopes come from the
 * scope claim.
 */
export class JwtAuthenticator implements Authenticator {
  readonly settings: JwtSettings;
  private readonly keys: ReturnType<typeof createRemoteJWKSet>;
  private readonly audiences: string[];
  private readonly algorithms: string[];

  constructor(options: JwtAuthenticatorOptions) {
    this.settings = {
      issuer: options.issuer,
      audience: options.audience,
      jwksUrl: options.jwksUrl.href,
      tenantClaim: options.tenantClaim ?? 'tenant',
      scopeClaim: options.scopeClaim ?? 'scope|scp',
    };
    this.keys = createRemoteJWKSet(options.jwksUrl, {
      cacheMaxAge: options.jwksCacheMaxAgeMs ?? 600_000,
      cooldownDuration: options.jwksCooldownMs ?? 30_000,
      timeoutDuration: options.jwksTimeoutMs ?? 5000,
    });
    const bare = withoutTrailingSlash(options.audience);
    this.audiences = [bare, `${bare}/`];
    this.algorithms = [...(options.algorithms ?? DEFAULT_JWT_ALGORITHMS)];
  }

  async verify(token: string): Promise<Principal> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keys, {
        issuer: this.settings.issuer,
        audience: this.audiences,
        algorithms: this.algorithms,
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (error) {
      throw refusal(error);
    }
    const subject = payload.sub as string;
    if (subject.length === 0) throw new AuthenticationError('invalid_token', 'Token has an empty "sub" claim');
    const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    const resource = audiences.find((aud): aud is string => typeof aud === 'string' && this.audiences.includes(aud));
    const clientId = typeof payload.client_id === 'string' ? payload.client_id : typeof payload.azp === 'string' ? payload.azp : undefined;
    return {
      issuer: payload.iss as string,
      subject,
      tenant: this.tenantOf(payload),
      scopes: this.scopesOf(payload),
      expiresAt: payload.exp as number,
      ...(resource === undefined ? {} : { resource }),
      ...(clientId === undefined ? {} : { clientId }),
    };
  }

  private tenantOf(payload: JWTPayload): string {
    const value = payload[this.settings.tenantClaim];
    if (value === undefined) return '';
    if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) return String(value);
    throw new AuthenticationError('invalid_token', `Token claim "${this.settings.tenantClaim}" is not a string`);
  }

  private scopesOf(payload: JWTPayload): string[] {
    const names = this.settings.scopeClaim === 'scope|scp' ? ['scope', 'scp'] : [this.settings.scopeClaim];
    const name = names.find((claim) => payload[claim] !== undefined);
    if (name === undefined) return [];
    const value = payload[name];
    const scopes = typeof value === 'string' ? value.split(' ') : Array.isArray(value) ? value : undefined;
    if (!scopes || !scopes.every((scope): scope is string => typeof scope === 'string'))
      throw new AuthenticationError('invalid_token', `Token claim "${name}" is not a scope list`);
    // Empty entries (double spaces) are dropped; anything that is not a scope token is refused rather than guessed at.
    const tokens = scopes.filter((scope) => scope.length > 0);
    if (!tokens.every(isScopeToken)) throw new AuthenticationError('invalid_token', `Token claim "${name}" holds an invalid scope`);
    return [...new Set(tokens)];
  }
}
