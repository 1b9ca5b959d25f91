import type { IncomingMessage, ServerResponse } from 'node:http';

import { buildOAuthProtectedResourceMetadata, getOAuthProtectedResourceMetadataUrl, oauthMetadataResponse } from '@modelcontextprotocol/server';

import type { ProtectedResource } from './bearer-auth.js';

/** The RFC 9728 well-known path without the resource's path suffix. */
const ROOT_PATH = '/.well-known/oauth-protected-resource';

/**
 * Serves this server's OAuth Protected Resource Metadata (RFC 9728) with the SDK's `oauthMetadataResponse`: at the
 * path-suffixed location the challenges advertise (`/.well-known/oauth-protected-resource/mcp` for a resource
 * `…/mcp`) and at the bare `/.well-known/oauth-protected-resource` that clients probe first. Both answer the same
 * document (`resource`, `authorization_servers`, `scopes_supported`); GET/HEAD only, CORS open (it is public).
 */
export class ResourceMetadataRoute {
  private readonly suffixedPath: string;

  /** @throws Error when the issuer is not HTTPS outside loopback (checked once here, by the SDK). */
  constructor(private readonly resource: ProtectedResource) {
    buildOAuthProtectedResourceMetadata(resource.metadata);
    this.suffixedPath = new URL(getOAuthProtectedResourceMetadataUrl(resource.url)).pathname;
  }

  /** Whether `pathname` is one of the metadata locations. */
  matches(pathname: string): boolean {
    const path = pathname.length > 1 && pathname.endsWith('/') ? pathname.slice(0, -1) : pathname;
    return path === ROOT_PATH || path === this.suffixedPath;
  }

  /** Answer a request whose path {@link matches}. */
  async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    // The SDK reads only this header (to answer a CORS preflight).
    const headers = new Headers();
    const preflight = request.headers['access-control-request-headers'];
    if (typeof preflight === 'string') headers.set('access-control-request-headers', preflight);
    // Both locations serve the one document the SDK builds for the suffixed one.
    const web = new Request(new URL(this.suffixedPath, 'http://localhost'), { method: request.method ?? 'GET', headers });
    const answer = oauthMetadataResponse(web, this.resource.metadata) as Response;
    const body = Buffer.from(await answer.arrayBuffer());
    response.writeHead(answer.status, { ...Object.fromEntries(answer.headers), 'content-length': body.length }).end(body);
    request.resume();
  }
}
