/**
 * Who owns a task. Tasks are bound to the authorization context of their creator (2025-11-25 R48, SEP-2663 E45):
 * the owner key is `issuer|subject|tenant`, never a client id or the token itself.
 */
export interface Principal {
  issuer: string;
  subject: string;
  tenant: string;
}

/** The single owner that exists when authentication is off. */
export const ANONYMOUS_OWNER_KEY = 'anonymous';

/** `issuer|subject|tenant`; the three parts may not contain `|` (checked when tokens are loaded). */
export function ownerKeyOf(principal: Principal): string {
  return `${principal.issuer}|${principal.subject}|${principal.tenant}`;
}

/**
 * Resolves the `Authorization` header of a request to a principal.
 * A missing header or an unknown token gives `undefined`; the server then answers HTTP 401 before any task lookup.
 */
export interface Authenticator {
  authenticate(authorizationHeader: string | undefined): Principal | undefined;
}
