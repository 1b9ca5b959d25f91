import { createHash } from 'node:crypto';

import { IDEMPOTENCY_CAPABILITY_ID, TASKS_EXTENSION_ID, V1_PROTOCOL_VERSION } from './constants.js';

/**
 * The capability manifest: what one connection to an MCP server offers for tasks, as a typed, serialisable value.
 * The requestor builds it per connection (refreshed with every new 2025-11-25 session and every 2026-07-28
 * `server/discover`) and decides from it before it sends a `tools/call`; a server can build the same value from
 * its own capabilities and tool list, so the two can be diffed. Pure: no I/O, no clock (times are passed in).
 */

/** A task operation a connection may use. `result` and `list` exist only on 2025-11-25; `update` and `listen` only with the 2026-07-28 extension. */
export type TaskOperation = 'list' | 'get' | 'result' | 'cancel' | 'update' | 'listen';

/**
 * How a tool may run on this connection:
 * - `forbidden` / `optional` / `required`: the 2025-11-25 `execution.taskSupport` (absent means `forbidden`);
 * - `server-decides`: a 2026-07-28 `Tool` has no execution field — with the Tasks Extension the server decides per call;
 * - every tool is `forbidden` on a connection without tasks.
 */
export type ToolTaskMode = 'forbidden' | 'optional' | 'required' | 'server-decides';

/** Evidence of the session a manifest describes: it is never reused for another session or discover result. */
export type SessionEvidence =
  | {
      kind: 'initialize';
      /** `Mcp-Session-Id` of the v1-generation (2025-11-25) HTTP session; `null` for a session-less transport. */
      sessionId: string | null;
      /** When the session was initialised (ISO 8601). */
      at: string;
    }
  | {
      kind: 'discover';
      /** When `server/discover` answered (ISO 8601). */
      at: string;
    };

/**
 * The capability manifest of one connection (format `manifestVersion: 1`). Arrays are sorted, so two manifests of
 * the same capabilities serialise identically (`JSON.stringify`) except for the session evidence.
 */
export interface CapabilityManifest {
  manifestVersion: 1;
  /** The negotiated protocol version (`2026-07-28`, `2025-11-25`, or an older one without tasks). */
  protocolVersion: string;
  /** `v1` = 2025-11-25 tasks, `v2` = 2026-07-28 Tasks Extension, `null` = no tasks on this connection. */
  generation: 'v1' | 'v2' | null;
  /** `serverInfo` as the server reported it; `null` when it sent none. */
  server: { name: string; version: string } | null;
  session: SessionEvidence;
  /**
   * `sha256:<hex>` of the advertised capabilities in canonical JSON (keys sorted): two manifests with the same
   * digest saw the same capabilities, whatever the server's name or version.
   */
  capabilitiesDigest: string;
  /** Task operations this connection may use, sorted. Empty without tasks. */
  taskOperations: TaskOperation[];
  /**
   * The server declares that it honours `_meta["dev.mcp-tasks/idempotency-key"]` on `tools/call` (same key → same
   * task, no second run): 2026-07-28 `capabilities.extensions["dev.mcp-tasks/idempotency"]`, 2025-11-25
   * `capabilities.experimental["dev.mcp-tasks/idempotency"]`. Only then may a requestor resend a call whose answer
   * was lost.
   */
  idempotencyKeys: boolean;
  /** Every listed tool with its task mode, sorted by name. */
  tools: Array<{ name: string; taskMode: ToolTaskMode }>;
}

/** What {@link buildCapabilityManifest} reads: the negotiated result and the tool list, as received. */
export interface ManifestInput {
  protocolVersion: string;
  /** The server's capabilities (`initialize` result or `server/discover` result). */
  capabilities: Record<string, unknown>;
  serverInfo?: { name: string; version: string } | undefined;
  session: SessionEvidence;
  /** `tools/list` entries (every page); only `name` and `execution.taskSupport` are read. */
  tools: ReadonlyArray<{ name: string; execution?: { taskSupport?: string } | undefined }>;
}

/** JSON with object keys sorted at every level (arrays keep their order); `undefined` members are left out. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** `sha256:<hex>` of the canonical JSON of a server's advertised capabilities. */
export function capabilitiesDigest(capabilities: Record<string, unknown>): string {
  return `sha256:${createHash('sha256').update(canonicalJson(capabilities)).digest('hex')}`;
}

function objectAt(value: unknown, ...path: string[]): Record<string, unknown> | undefined {
  let current: unknown = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return typeof current === 'object' && current !== null && !Array.isArray(current) ? (current as Record<string, unknown>) : undefined;
}

/**
 * The task generation a connection offers: `v2` when a 2026-07-28 server advertises `extensions[TASKS_EXTENSION_ID]`,
 * `v1` when a 2025-11-25 session has `tasks.requests.tools.call`, else `null`.
 */
export function taskGenerationOf(protocolVersion: string, capabilities: Record<string, unknown>): 'v1' | 'v2' | null {
  if (protocolVersion === V1_PROTOCOL_VERSION) return objectAt(capabilities, 'tasks', 'requests', 'tools', 'call') ? 'v1' : null;
  if (protocolVersion > V1_PROTOCOL_VERSION) return objectAt(capabilities, 'extensions', TASKS_EXTENSION_ID) ? 'v2' : null;
  return null; // 2025-06-18 and older have no tasks
}

/** Task operations from the capabilities (2025-11-25 R5/R51: `list`/`cancel` only when declared; SEP-2663: all of get/update/cancel, plus listen's `taskIds`). */
function operationsOf(generation: 'v1' | 'v2' | null, capabilities: Record<string, unknown>): TaskOperation[] {
  if (generation === 'v2') return ['cancel', 'get', 'listen', 'update'];
  if (generation === 'v1') {
    const tasks = objectAt(capabilities, 'tasks');
    const operations: TaskOperation[] = ['get', 'result'];
    if (objectAt(tasks, 'cancel')) operations.push('cancel');
    if (objectAt(tasks, 'list')) operations.push('list');
    return operations.sort();
  }
  return [];
}

function modeOf(generation: 'v1' | 'v2' | null, taskSupport: string | undefined): ToolTaskMode {
  if (generation === 'v2') return 'server-decides';
  if (generation === 'v1' && (taskSupport === 'optional' || taskSupport === 'required')) return taskSupport;
  return 'forbidden';
}

/** Whether a server with these capabilities declares that it honours idempotency keys on `tools/call` (see {@link CapabilityManifest.idempotencyKeys}). */
export function honoursIdempotencyKeys(generation: 'v1' | 'v2' | null, capabilities: Record<string, unknown>): boolean {
  if (generation === 'v2') return objectAt(capabilities, 'extensions', IDEMPOTENCY_CAPABILITY_ID) !== undefined;
  if (generation === 'v1') return objectAt(capabilities, 'experimental', IDEMPOTENCY_CAPABILITY_ID) !== undefined;
  return false;
}

/** Build the manifest of one connection from what it negotiated and listed. */
export function buildCapabilityManifest(input: ManifestInput): CapabilityManifest {
  const generation = taskGenerationOf(input.protocolVersion, input.capabilities);
  return {
    manifestVersion: 1,
    protocolVersion: input.protocolVersion,
    generation,
    server: input.serverInfo ? { name: input.serverInfo.name, version: input.serverInfo.version } : null,
    session: input.session,
    capabilitiesDigest: capabilitiesDigest(input.capabilities),
    taskOperations: operationsOf(generation, input.capabilities),
    idempotencyKeys: honoursIdempotencyKeys(generation, input.capabilities),
    tools: input.tools
      .map((tool) => ({ name: tool.name, taskMode: modeOf(generation, tool.execution?.taskSupport) }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  };
}

/** The task mode of `tool`; a tool the server did not list counts as `forbidden` (a v2 connection: `server-decides`). */
export function toolTaskMode(manifest: CapabilityManifest, tool: string): ToolTaskMode {
  return manifest.tools.find((entry) => entry.name === tool)?.taskMode ?? (manifest.generation === 'v2' ? 'server-decides' : 'forbidden');
}
