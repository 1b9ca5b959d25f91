/** What this server needs from an authorization server's metadata (RFC 8414 / OpenID Connect Discovery). */
export interface AuthorizationServerMetadata {
  issuer: string;
  jwks_uri: string;
  [field: string]: unknown;
}

/** The metadata URLs of `issuer`, in the order tried: RFC 8414 (path-inserted), then OpenID Connect Discovery (appended). */
export function metadataUrlsOf(issuer: string): URL[] {
  const url = new URL(issuer);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  return [new URL(`/.well-known/oauth-authorization-server${path}`, url.origin), new URL(`${url.origin}${path}/.well-known/openid-configuration`)];
}

/**
 * Fetch the authorization server metadata of `issuer` (RFC 8414 §3, else OpenID Connect Discovery 1.0 §4) and check
 * that it names the same issuer (RFC 8414 §3.3: a document for another issuer is refused) and a `jwks_uri`.
 * @throws Error naming the URLs tried and why each failed.
 */
export async function discoverAuthorizationServer(issuer: string, options: { timeoutMs?: number } = {}): Promise<AuthorizationServerMetadata> {
  const problems: string[] = [];
  for (const url of metadataUrlsOf(issuer)) {
    try {
      const response = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(options.timeoutMs ?? 5000), redirect: 'error' });
      if (!response.ok) {
        problems.push(`${url.href}: HTTP ${response.status}`);
        continue;
      }
      const metadata = (await response.json()) as Partial<AuthorizationServerMetadata>;
      if (metadata.issuer !== issuer) {
        problems.push(`${url.href}: names the issuer ${JSON.stringify(metadata.issuer)}, not ${JSON.stringify(issuer)}`);
        continue;
      }
      if (typeof metadata.jwks_uri !== 'string') {
        problems.push(`${url.href}: has no jwks_uri`);
        continue;
      }
      return metadata as AuthorizationServerMetadata;
    } catch (error) {
      problems.push(`${url.href}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  throw new Error(`cannot discover the authorization server ${issuer} (give --jwks-url to skip discovery): ${problems.join('; ')}`);
}
