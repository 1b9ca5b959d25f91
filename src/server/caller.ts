import type { AuthInfo, McpRequestContext, Server, ServerContext } from '@modelcontextprotocol/server';
import { ANONYMOUS_OWNER_KEY } from '../core/owner.js';
import type { JsonObject } from '../core/task.js';
import { CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, TASKS_EXTENSION_ID, V1_PROTOCOL_VERSION } from '../protocol/constants.js';
import type { Caller, Negotiation, TaskCaller } from '../service/caller.js';

/**
 * The one place where a {@link Caller} is built from what a request carries: the SDK handlers, the fast path and
 * the elicitation-reply route all call these, so identity and negotiation are read the same way on every path.
 */

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether client capabilities declare the Tasks Extension (`extensions["io.modelcontextprotocol/tasks"]` is an object). */
export function declaresTasksExtension(capabilities: unknown): boolean {
  return isPlainObject(capabilities) && isPlainObject(capabilities.extensions) && isPlainObject(capabilities.extensions[TASKS_EXTENSION_ID]);
}

/** The owner key the HTTP front put into `authInfo.extra`, or `anonymous` (stdio, no auth). */
export function ownerKeyFromContext(context: ServerContext): string {
  const ownerKey = context.http?.authInfo?.extra?.ownerKey;
  return typeof ownerKey === 'string' ? ownerKey : ANONYMOUS_OWNER_KEY;
}

/** The scopes granted to an authenticated caller (for the audit trail), or `undefined` for the anonymous owner. */
export function grantedScopes(authInfo: AuthInfo | undefined): readonly string[] | undefined {
  const ownerKey = authInfo?.extra?.ownerKey;
  return authInfo && typeof ownerKey === 'string' && ownerKey !== ANONYMOUS_OWNER_KEY ? authInfo.scopes : undefined;
}

/** How an SDK server instance negotiates, from the SDK's own `era` of its factory call (read here only). */
export function negotiationOf(sdkProtocolEra: McpRequestContext['era']): Negotiation {
  return sdkProtocolEra === 'modern' ? 'per-request' : 'per-session';
}

/**
 * The caller of a 2026-07-28 request, from its own `_meta` envelope (B1: never from earlier requests): its
 * protocol version and client capabilities; `v2` when the capabilities declare the Tasks Extension (E1, E3).
 */
export function requestCaller(ownerKey: string, envelope: Record<string, unknown>, scopes?: readonly string[]): Caller {
  const clientCapabilities = isPlainObject(envelope[CLIENT_CAPABILITIES_META_KEY]) ? (envelope[CLIENT_CAPABILITIES_META_KEY] as JsonObject) : {};
  const protocolVersion = typeof envelope[PROTOCOL_VERSION_META_KEY] === 'string' ? (envelope[PROTOCOL_VERSION_META_KEY] as string) : '';
  return { ownerKey, negotiation: 'per-request', generation: declaresTasksExtension(clientCapabilities) ? 'v2' : null, protocolVersion, clientCapabilities, ...(scopes ? { scopes } : {}) };
}

/** The caller of a request in a v1-generation (2025-11-25) session, from what its `initialize` negotiated (`v1` on 2025-11-25). */
export function sessionCaller(server: Server, ownerKey: string, scopes?: readonly string[]): Caller {
  // Deprecated accessors are the documented way to read initialize-scoped state on a v1-generation (2025-11-25) session.
  const protocolVersion = server.getNegotiatedProtocolVersion() ?? '';
  const clientCapabilities = (server.getClientCapabilities() ?? {}) as JsonObject;
  return { ownerKey, negotiation: 'per-session', generation: protocolVersion === V1_PROTOCOL_VERSION ? 'v1' : null, protocolVersion, clientCapabilities, ...(scopes ? { scopes } : {}) };
}

/** The caller of one SDK handler invocation. */
export function callerOf(server: Server, negotiation: Negotiation, context: ServerContext): Caller {
  const ownerKey = ownerKeyFromContext(context);
  const scopes = grantedScopes(context.http?.authInfo);
  return negotiation === 'per-request' ? requestCaller(ownerKey, (context.mcpReq.envelope ?? {}) as Record<string, unknown>, scopes) : sessionCaller(server, ownerKey, scopes);
}

/**
 * The caller behind a client's reply to one of our v1 elicitation requests: known by its credentials only (the
 * reply may reach any process, after any restart, outside the session that carried the question).
 */
export function replyCaller(ownerKey: string): TaskCaller {
  return { ownerKey, negotiation: 'per-session', generation: 'v1', protocolVersion: V1_PROTOCOL_VERSION, clientCapabilities: {} };
}
