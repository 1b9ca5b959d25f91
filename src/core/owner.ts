/**
 * Who owns a task, and who is calling. Tasks are bound to the authorization context of their creator (2025-11-25
 * R48, SEP-2663 E45): the owner key is `issuer|subject|tenant`, never a client id or the token itself.
 */
export interface Principal {
  issuer: string;
  subject: string;
  /** The tenant the subject acts for; `""` when the credential names none (see the JWT authenticator). */
  tenant: string;
  /**
   * OAuth scopes granted to this credential (RFC 6749 §3.3 scope tokens, see `core/scopes.ts`). The HTTP front
   * checks the method-level ones; task-level re-checks belong to the service door.
   */
  scopes: readonly string[];
  /** End of the credential's validity, epoch **seconds** (JWT `exp`); absent for static tokens. */
  expiresAt?: number;
  /** The resource (RFC 8707 audience) the credential was issued for; absent for static tokens. */
  resource?: string;
  /** The OAuth client the credential was issued to (`client_id`/`azp`), for logs and audit; never part of the owner key. */
  clientId?: string;
}

/** The single owner that exists when authentication is off. */
export const ANONYMOUS_OWNER_KEY = 'anonymous';

/** `%` and `|` percent-encoded, so that the three parts can never run into each other (`a|b`+`c` ≠ `a`+`b|c`). */
function ownerKeyPart(part: string): string {
  return part.replace(/[%|]/g, (char) => (char === '%' ? '%25' : '%7C'));
}

/**
 * `issuer|subject|tenant`, each part with `%` and `|` percent-encoded (an injective encoding: JWT subjects such as
 * `auth0|123` are common). Parts without those characters appear verbatim, so keys of token-file principals are
 * the same as before the encoding existed.
 */
export function ownerKeyOf(principal: Pick<Principal, 'issuer' | 'subject' | 'tenant'>): string {
  return `${ownerKeyPart(principal.issuer)}|${ownerKeyPart(principal.subject)}|${ownerKeyPart(principal.tenant)}`;
}

/**
 * The parts of an owner key made by {@link ownerKeyOf}, each decoded again (in one pass, so a literal `%7C` in a
 * part stays itself); `undefined` for a key of another shape (`anonymous`).
 */
export function ownerKeyParts(ownerKey: string): Pick<Principal, 'issuer' | 'subject' | 'tenant'> | undefined {
  const parts = ownerKey.split('|');
  if (parts.length !== 3) return undefined;
  const [issuer, subject, tenant] = parts.map((part) => part.replace(/%(25|7C)/g, (code) => (code === '%25' ? '%' : '|'))) as [string, string, string];
  return { issuer, subject, tenant };
}

/** Why a credential was refused: `invalid_token` (HTTP 401) or `unavailable` (the verifier could not decide: HTTP 503). */
export type AuthenticationFailure = 'invalid_token' | 'unavailable';

/**
 * A refused credential. `message` is safe to send to the client as the RFC 6750 `error_description` (it names
 * the problem — expired, wrong audience, unknown key — never a token or a key).
 */
export class AuthenticationError extends Error {
  override readonly name = 'AuthenticationError';
  constructor(
    readonly reason: AuthenticationFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Verifies the bearer token of a request (the part after `Bearer `; the HTTP front parses the header). A missing
 * header never reaches an authenticator: the front refuses it with the same HTTP 401 as a bad token, before any
 * task lookup.
 */
export interface Authenticator {
  /**
   * @returns the principal the token stands for.
   * @throws AuthenticationError `invalid_token` for an unknown, malformed, expired, foreign-audience or
   *   foreign-issuer token; `unavailable` when the verifier cannot decide now (e.g. the key set cannot be fetched).
   */
  verify(token: string): Promise<Principal>;
}
