import { resolve } from 'node:path';

import { discoverAuthorizationServer } from '../auth/discovery.js';
import { JwtAuthenticator } from '../auth/jwt.js';
import { TokenFileWatcher } from '../auth/token-file-watcher.js';
import type { Logger } from '../core/logger.js';
import type { Authenticator } from '../core/owner.js';
import { ScopePolicy } from '../core/scopes.js';
import { StartupError, UsageError } from './usage-error.js';

/** The authentication flags of `mcp-tasks serve`. */
export interface ServeAuthOptions {
  /** `tokens:<file>` or `jwt`. */
  auth?: string;
  /** `--issuer`: the authorization server's issuer identifier (`--auth jwt`). */
  issuer?: string;
  /** `--audience`: this server's public resource URL, e.g. `https://mcp.example.com/mcp` (`--auth jwt`). */
  audience?: string;
  /** `--jwks-url`: the issuer's key set; default: discovered from the issuer's metadata. */
  jwksUrl?: string;
  /** `--tenant-claim`, default `tenant`. */
  tenantClaim?: string;
  /** `--scope-claim`, default `scope`, else `scp`. */
  scopeClaim?: string;
  /** `--jwks-max-age-ms`, default 600000. */
  jwksMaxAgeMs?: number;
  /** `--jwks-cooldown-ms`, default 30000. */
  jwksCooldownMs?: number;
  /** `--tool-scope tool=scope` (repeatable). */
  toolScope?: string[];
  stdio?: boolean;
}

/** Authentication as `serve` set it up. */
export interface ServeAuth {
  authenticator?: Authenticator;
  oauth?: { resource: URL; issuer: string };
  scopes: ScopePolicy;
  /** The token file (a denied path for tools). */
  tokenFile?: string;
  /** The `auth:` line of the start-up banner. */
  describe: string;
  /** Re-read the token file (SIGHUP); absent without one. */
  reload?: () => void;
  close(): void;
}

const JWT_FLAGS = ['issuer', 'audience', 'jwksUrl', 'tenantClaim', 'scopeClaim', 'jwksMaxAgeMs', 'jwksCooldownMs'] as const;
const FLAG_NAMES: Record<(typeof JWT_FLAGS)[number], string> = {
  issuer: '--issuer',
  audience: '--audience',
  jwksUrl: '--jwks-url',
  tenantClaim: '--tenant-claim',
  scopeClaim: '--scope-claim',
  jwksMaxAgeMs: '--jwks-max-age-ms',
  jwksCooldownMs: '--jwks-cooldown-ms',
};

function httpUrl(value: string, flag: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${flag} ${value}: expected an absolute http(s) URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UsageError(`${flag} ${value}: expected an absolute http(s) URL`);
  if (url.hash) throw new UsageError(`${flag} ${value}: must not have a fragment`);
  return url;
}

/** The scope policy of `--tool-scope`, as a usage error when malformed. */
function scopePolicyOf(specs: readonly string[]): ScopePolicy {
  try {
    return ScopePolicy.fromToolScopeSpecs(specs);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/**
 * Check the authentication flags and build the authenticator (`--auth tokens:<file>` watched and reloadable,
 * or `--auth jwt` against `--issuer`'s keys, discovered unless `--jwks-url` is given).
 * @throws UsageError (exit 64) for inconsistent or malformed flags; StartupError (exit 1) when the issuer's
 *   metadata cannot be discovered.
 */
export async function resolveServeAuth(options: ServeAuthOptions, logger: Logger): Promise<ServeAuth> {
  const scopes = scopePolicyOf(options.toolScope ?? []);
  const jwtFlags = JWT_FLAGS.filter((flag) => options[flag] !== undefined).map((flag) => FLAG_NAMES[flag]);
  if (options.auth === undefined) {
    if (jwtFlags.length > 0) throw new UsageError(`${jwtFlags.join(', ')} need --auth jwt`);
    if (scopes.scopedTools().length > 0) throw new UsageError('--tool-scope needs --auth (without it the one anonymous owner holds every scope)');
    return { scopes, describe: 'off (one anonymous owner, every scope)', close() {} };
  }
  if (options.stdio) throw new UsageError('--auth does not apply to --stdio: the process that starts the server is its one anonymous owner');
  const [kind, file] = options.auth.split(/:(.*)/s);
  if (kind === 'tokens' && file) {
    if (jwtFlags.length > 0) throw new UsageError(`${jwtFlags.join(', ')} need --auth jwt, not tokens:<file>`);
    const tokenFile = resolve(file);
    let watcher: TokenFileWatcher;
    try {
      watcher = new TokenFileWatcher(tokenFile, { logger, defaultScopes: scopes.requestorScopes() });
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    watcher.watch();
    return {
      authenticator: watcher,
      scopes,
      tokenFile,
      describe: `bearer tokens from ${tokenFile} (${watcher.size} tokens; reloaded on change and on SIGHUP)`,
      reload: () => void watcher.reload('signal'),
      close: () => watcher.close(),
    };
  }
  if (kind !== 'jwt' || file !== undefined) throw new UsageError(`--auth ${options.auth}: expected tokens:<file> or jwt`);
  if (options.issuer === undefined || options.audience === undefined)
    throw new UsageError("--auth jwt needs --issuer <issuer URL> and --audience <this server's public MCP URL>");
  const issuerUrl = httpUrl(options.issuer, '--issuer');
  const resource = httpUrl(options.audience, '--audience');
  let jwksUrl: URL;
  if (options.jwksUrl !== undefined) jwksUrl = httpUrl(options.jwksUrl, '--jwks-url');
  else {
    try {
      jwksUrl = new URL((await discoverAuthorizationServer(options.issuer)).jwks_uri);
    } catch (error) {
      throw new StartupError((error as Error).message);
    }
  }
  if (issuerUrl.search) throw new UsageError(`--issuer ${options.issuer}: must not have a query string`);
  const authenticator = new JwtAuthenticator({
    issuer: options.issuer,
    audience: resource.href,
    jwksUrl,
    ...(options.tenantClaim === undefined ? {} : { tenantClaim: options.tenantClaim }),
    ...(options.scopeClaim === undefined ? {} : { scopeClaim: options.scopeClaim }),
    ...(options.jwksMaxAgeMs === undefined ? {} : { jwksCacheMaxAgeMs: options.jwksMaxAgeMs }),
    ...(options.jwksCooldownMs === undefined ? {} : { jwksCooldownMs: options.jwksCooldownMs }),
  });
  const { settings } = authenticator;
  return {
    authenticator,
    oauth: { resource, issuer: options.issuer },
    scopes,
    describe: `JWT access tokens of ${settings.issuer} for ${settings.audience} (keys ${settings.jwksUrl}; tenant claim "${settings.tenantClaim}", scopes from "${settings.scopeClaim}")`,
    close() {},
  };
}
