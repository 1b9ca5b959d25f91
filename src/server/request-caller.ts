import type { AuthInfo, McpRequestContext, Server, ServerContext } from '@modelcontextprotocol/server';

import { ANONYMOUS_OWNER_KEY } from '../core/owner.js';
import type { JsonObject } from '../core/task.js';
import { CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, TASKS_EXTENSION_ID, V1_PROTOCOL_VERSION } from '../protocol/constants.js';
import type { Caller, CallerIdentity, Negotiation, TaskCaller } from '../service/caller.js';

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

/** The anonymous caller of stdio and of HTTP without `--auth`: the one owner, holding every scope. */
export const ANONYMOUS_IDENTITY: CallerIdentity = Object.freeze({ ownerKey: ANONYMOUS_OWNER_KEY, scopes: 'all' });

/**
 * The identity in an `AuthInfo` the HTTP front built (owner key in `extra`, the credential's scopes), or the
 * anonymous one (stdio, no auth: no `AuthInfo`, or the front's anonymous one).
 */
export function identityOf(authInfo: AuthInfo | undefined): CallerIdentity {
  const ownerKey = authInfo?.extra?.ownerKey;
  if (typeof ownerKey !== 'string' || ownerKey === ANONYMOUS_OWNER_KEY) return ANONYMOUS_IDENTITY;
  return { ownerKey, scopes: Object.freeze([...(authInfo?.scopes ?? [])]) };
}

/** The owner key of the request's identity (see {@link identityOf}). */
export function ownerKeyFromContext(context: ServerContext): string {
  return identityOf(context.http?.authInfo).ownerKey;
}

/** How an SDK server instance negotiates, from the SDK's own `era` of its factory call (read here only). */
export function negotiationOf(sdkProtocolEra: McpRequestContext['era']): Negotiation {
  return sdkProtocolEra === 'modern' ? 'per-request' : 'per-session';
}

/**
 * The caller of a 2026-07-28 request, from its own `_meta` envelope (B1: never from earlier requests): its
 * protocol version and client capabilities; `v2` when the capabilities declare the Tasks Extension (E1, E3).
 */
export function requestCaller(identity: CallerIdentity, envelope: Record<string, unknown>): Caller {
  const clientCapabilities = isPlainObject(envelope[CLIENT_CAPABILITIES_META_KEY]) ? (envelope[CLIENT_CAPABILITIES_META_KEY] as JsonObject) : {};
  const protocolVersion = typeof envelope[PROTOCOL_VERSION_META_KEY] === 'string' ? (envelope[PROTOCOL_VERSION_META_KEY] as string) : '';
  return { ...identity, negotiation: 'per-request', generation: declaresTasksExtension(clientCapabilities) ? 'v2' : null, protocolVersion, clientCapabilities };
}

/** The caller of a request in a v1-generation (2025-11-25) session, from what its `initialize` negotiated (`v1` on 2025-11-25). */
export function sessionCaller(server: Server, identity: CallerIdentity): Caller {
  // Deprecated accessors are the documented way to read initialize-scoped state on a v1-generation (2025-11-25) session.
  const protocolVersion = server.getNegotiatedProtocolVersion() ?? '';
  const clientCapabilities = (server.getClientCapabilities() ?? {}) as JsonObject;
  return { ...identity, negotiation: 'per-session', generation: protocolVersion === V1_PROTOCOL_VERSION ? 'v1' : null, protocolVersion, clientCapabilities };
}

/** The caller of one SDK handler invocation. */
export function callerOf(server: Server, negotiation: Negotiation, context: ServerContext): Caller {
  const identity = identityOf(context.http?.authInfo);
  return negotiation === 'per-request' ? requestCaller(identity, (context.mcpReq.envelope ?? {}) as Record<string, unknown>) : sessionCaller(server, identity);
}

/**
 * The caller behind a client's reply to one of our v1 elicitation requests: known by its credentials only (the
 * reply may reach any process, after any restart, outside the session that carried the question).
 */
export function replyCaller(identity: CallerIdentity): TaskCaller {
  return { ...identity, negotiation: 'per-session', generation: 'v1', protocolVersion: V1_PROTOCOL_VERSION, clientCapabilities: {} };
}
