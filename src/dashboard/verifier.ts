import { AuthenticationError, type Authenticator, ownerKeyOf } from '../core/owner.js';
import type { Viewer } from '../service/viewer/viewer.js';

/**
 * Verifies a bearer token for the dashboard and answers who it stands for (with its scopes), or `undefined` for a
 * refused token (signed out).
 * @throws DashboardUnavailableError when the verifier cannot decide now (e.g. the issuer's key set cannot be
 *   fetched): the page answers HTTP 503 and the session stays open.
 */
export type ViewerVerifier = (token: string) => Promise<Viewer | undefined>;

/** The server's authenticator could not decide about a token now (AuthenticationError `unavailable`). */
export class DashboardUnavailableError extends Error {
  override readonly name = 'DashboardUnavailableError';
}

/**
 * The dashboard's verifier over the server's own {@link Authenticator} (token file or JWT), so the dashboard has no
 * rules of its own: the viewer is the principal's owner key (`issuer|subject|tenant`, the same key its MCP requests
 * own tasks under) with the principal's scopes. An `invalid_token` refusal means "not signed in"; `unavailable`
 * throws {@link DashboardUnavailableError}; anything else propagates.
 */
export function viewerVerifier(authenticator: Authenticator): ViewerVerifier {
  return async (token) => {
    try {
      const principal = await authenticator.verify(token);
      return { ownerKey: ownerKeyOf(principal), scopes: principal.scopes };
    } catch (error) {
      if (!(error instanceof AuthenticationError)) throw error;
      if (error.reason === 'unavailable') throw new DashboardUnavailableError(error.message, { cause: error });
      return undefined;
    }
  };
}
