/**
 * The caller's identity for HTTP upstreams configured to get it (`upstreamsForwardIdentity`, issue 28). Token
 * exchange is out of scope: the upstream gets who the caller is, as this server authenticated them, in three
 * headers — never the caller's token, which was issued for this server and must not be passed on (MCP security
 * best practices, "token passthrough"). Such an upstream must be reachable by this server only: anyone who reaches
 * it could send the same headers.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

import { ANONYMOUS_OWNER_KEY, ownerKeyParts } from '../core/owner.js';

/** The owner key of the call being forwarded (set by `GatewayExecutor` around an upstream tool's run). */
export const callerOwner = new AsyncLocalStorage<string | undefined>();

/** The header names, each value percent-encoded (RFC 3986 `encodeURIComponent`) so any identity fits in a header. */
export const CALLER_HEADERS = { issuer: 'MCP-Tasks-Caller-Issuer', subject: 'MCP-Tasks-Caller-Subject', tenant: 'MCP-Tasks-Caller-Tenant' } as const;

/**
 * The headers of a caller's owner key `issuer|subject|tenant` (its parts as {@link ownerKeyParts} gives them,
 * encoded for the header); none without a caller or for the anonymous owner (no authentication).
 */
export function callerHeaders(ownerKey: string | undefined): Record<string, string> | undefined {
  const parts = ownerKey === undefined || ownerKey === ANONYMOUS_OWNER_KEY ? undefined : ownerKeyParts(ownerKey);
  if (!parts) return undefined;
  const { issuer, subject, tenant } = parts;
  return {
    [CALLER_HEADERS.issuer]: encodeURIComponent(issuer),
    [CALLER_HEADERS.subject]: encodeURIComponent(subject),
    [CALLER_HEADERS.tenant]: encodeURIComponent(tenant),
  };
}
