import type { Server, ServerContext } from '@modelcontextprotocol/server';
import { ANONYMOUS_OWNER_KEY } from '../core/owner.js';
import type { JsonObject, TaskGeneration } from '../core/task.js';
import { CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, TASKS_EXTENSION_ID, V1_PROTOCOL_VERSION } from '../protocol/constants.js';

/** The protocol era an SDK server instance serves: one stateless 2026-07-28 request, or one 2025-era session. */
export type Era = 'legacy' | 'modern';

/** Everything a handler needs to know about who is calling and what they negotiated, for this one request. */
export interface Caller {
  era: Era;
  /**
   * Which task generation this request may use: `v1` in a session that negotiated 2025-11-25; `v2` for a
   * 2026-07-28 request that declares `io.modelcontextprotocol/tasks` in its own `_meta` (SEP-2663 E1, E3);
   * `null` otherwise (older sessions; modern requests without the extension).
   */
  generation: TaskGeneration | null;
  protocolVersion: string;
  /** The request's client capabilities (modern: its `_meta`; legacy: from `initialize`). */
  clientCapabilities: JsonObject;
  /** Task owner: `issuer|subject|tenant` from the verified token, or `anonymous`. */
  ownerKey: string;
}

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

/**
 * Work out the {@link Caller} of one request. Negotiation is per request on the modern era (B1: never from earlier
 * requests) and per session on the legacy era (the `initialize` result).
 */
export function callerOf(server: Server, era: Era, context: ServerContext): Caller {
  const ownerKey = ownerKeyFromContext(context);
  if (era === 'modern') {
    const envelope = (context.mcpReq.envelope ?? {}) as Record<string, unknown>;
    const clientCapabilities = isPlainObject(envelope[CLIENT_CAPABILITIES_META_KEY]) ? (envelope[CLIENT_CAPABILITIES_META_KEY] as JsonObject) : {};
    const protocolVersion = typeof envelope[PROTOCOL_VERSION_META_KEY] === 'string' ? (envelope[PROTOCOL_VERSION_META_KEY] as string) : '';
    return { era, generation: declaresTasksExtension(clientCapabilities) ? 'v2' : null, protocolVersion, clientCapabilities, ownerKey };
  }
  return legacyCaller(server, ownerKey);
}

/** The {@link Caller} of a request in a 2025-era session, from what its `initialize` negotiated. */
export function legacyCaller(server: Server, ownerKey: string): Caller {
  // Deprecated accessors are the documented way to read initialize-scoped state on a 2025-era session.
  const protocolVersion = server.getNegotiatedProtocolVersion() ?? '';
  const clientCapabilities = (server.getClientCapabilities() ?? {}) as JsonObject;
  return { era: 'legacy', generation: protocolVersion === V1_PROTOCOL_VERSION ? 'v1' : null, protocolVersion, clientCapabilities, ownerKey };
}
