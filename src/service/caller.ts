import type { JsonObject, TaskGeneration } from '../core/task.js';
import type { Actor, ScopeGrant } from './access.js';

/**
 * How a caller negotiated what it may use: `per-request` for a 2026-07-28 request, which carries its protocol
 * version and client capabilities in its own `_meta` (B1: never taken from earlier requests), or `per-session` for a
 * v1-generation (2025-11-25) session, negotiated once by `initialize`.
 */
export type Negotiation = 'per-request' | 'per-session';

/** Who is calling, as the credential of the current request says: the {@link Actor} of an MCP request. */
export type CallerIdentity = Actor;

export type { ScopeGrant };

/**
 * Who is calling and what they negotiated, for one request. The server adapters build it in one place
 * (`server/request-caller.ts`) and every task service operation (`service/services.ts`) takes it and re-checks the task's owner and the
 * credential's scopes against it. The scopes are also what the audit trail records (none for the anonymous caller).
 */
export interface Caller extends CallerIdentity {
  negotiation: Negotiation;
  /**
   * Which task generation this request may use: `v1` in a session that negotiated 2025-11-25; `v2` for a
   * 2026-07-28 request that declares `io.modelcontextprotocol/tasks` in its own `_meta` (SEP-2663 E1, E3);
   * `null` otherwise (older sessions; 2026-07-28 requests without the extension).
   */
  generation: TaskGeneration | null;
  /** Protocol version of the request (`2025-11-25`, `2026-07-28`, …; empty when none was negotiated). */
  protocolVersion: string;
  /** The request's client capabilities (per request: its `_meta`; per session: from `initialize`). */
  clientCapabilities: JsonObject;
}

/** A caller whose request may use tasks of its generation: what the task operations take. */
export type TaskCaller = Caller & { generation: TaskGeneration };

/**
 * Whether the caller declared that it takes tasks: on 2026-07-28 the Tasks Extension in this request's `_meta`
 * (SEP-2663 E1, E3); in a 2025-era session `capabilities.tasks` in its `initialize` on 2025-11-25 ("present if the
 * client supports task-augmented requests", R1). With task fallback tools on, a 2025-era client that declares
 * nothing is taken for a host without task support and offered the separate job API (see `planCall`).
 */
export function declaresTaskSupport(caller: Caller): boolean {
  if (caller.negotiation === 'per-request') return caller.generation === 'v2';
  const tasks = caller.clientCapabilities.tasks;
  return caller.generation === 'v1' && typeof tasks === 'object' && tasks !== null && !Array.isArray(tasks);
}

/**
 * The task caller of a host without task support in a 2025-era session (see {@link declaresTaskSupport}): the
 * tasks it creates through task fallback tools are 2025-11-25 tasks of its owner, read back only through those tools.
 */
export function fallbackTaskCaller(caller: Caller): TaskCaller {
  return { ...caller, generation: 'v1' };
}
