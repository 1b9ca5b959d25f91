/**
 * The small part of `oidc-provider` 9.13 (which ships no types) that `test/helpers/authorization-server.ts` uses.
 * Configuration is passed through unchecked; the provider validates it at construction.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface ProviderContext {
    oidc: { client?: unknown };
  }

  export default class Provider {
    constructor(
      issuer: string,
      configuration: {
        clients: Array<Record<string, unknown>>;
        jwks: { keys: unknown[] };
        features: {
          resourceIndicators: {
            getResourceServerInfo: (ctx: ProviderContext, resourceIndicator: string, client: unknown) => Record<string, unknown>;
            [option: string]: unknown;
          };
          [feature: string]: unknown;
        };
        extraTokenClaims?: (ctx: ProviderContext, token: unknown) => Record<string, unknown> | undefined;
        /** Koa context: set `type` and `body`. */
        renderError?: (ctx: { type: string; body: unknown }, out: { error?: unknown; error_description?: unknown }, error: unknown) => void | Promise<void>;
        [option: string]: unknown;
      },
    );
    callback(): (request: IncomingMessage, response: ServerResponse) => void;
  }
}
