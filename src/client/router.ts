import { type CapabilityManifest, type TaskOperation, toolTaskMode } from '../protocol/manifest.js';

/**
 * The router: before a `tools/call` is sent, compare what the call needs with the connection's
 * {@link CapabilityManifest} and decide how it runs — as a task, synchronously, or through the caller's fallback.
 * Pure: the decision depends on the manifest, the policy and whether this client answers input, nothing else.
 */

/**
 * Whether the call must, may or must not become a task:
 * - `required`: only as a task; when the connection cannot, the fallback decides (never a silent inline run);
 * - `preferred`: as a task when the connection can, else the fallback;
 * - `forbidden`: never as a task (v1 sends no `task`, v2 does not declare the extension); a tool that needs a task
 *   goes to the fallback.
 */
export type TaskPolicy = 'required' | 'preferred' | 'forbidden';

/** Task operations the caller relies on; a task without them is no use to it. */
export interface CallNeeds {
  /** `tasks/cancel` (v1: the `tasks.cancel` capability; always on v2). */
  cancel?: boolean;
  /** Questions while the task runs: the connection carries them (v1 `tasks/result`, v2 `tasks/update`) and this client has `onInput`. */
  input?: boolean;
  /** `tasks/list` (v1 with `tasks.list`, which servers offer only with authentication; never on v2). */
  list?: boolean;
}

/** What the caller's job API gets: everything needed to run the call elsewhere. */
export interface JobApiRequest {
  tool: string;
  arguments: Record<string, unknown>;
  /** Why the call did not go to the MCP server, one sentence each. */
  missing: string[];
  manifest: CapabilityManifest;
  /** The idempotency key this call would have carried; pass it on so the job API can deduplicate. */
  idempotencyKey: string;
  correlationId: string;
}

/** A function the caller supplies to run a call elsewhere (an existing job API). Its value is returned as is. */
export type JobApi = (request: JobApiRequest) => Promise<unknown> | unknown;

/**
 * What to do when the policy cannot be met:
 * - `'sync'`: run the call inline, bounded by `maxSyncMs` (the HTTP request's timeout) — only when the tool may run
 *   without a task;
 * - `'reject'`: throw {@link CapabilityMissingError} listing what is missing;
 * - `{ jobApi }`: hand the call to the caller's function;
 * - `'handoff'`: return a {@link HandoffRecord} for a person to act on.
 */
export type Fallback = 'sync' | 'reject' | 'handoff' | { jobApi: JobApi };

/** A call handed to a person: what was asked, where, why it was not run, and how to run it without duplicates. */
export interface HandoffRecord {
  kind: 'mcp-tasks/handoff';
  version: 1;
  /** ISO 8601. */
  createdAt: string;
  server: { url: string; name: string | null; version: string | null; protocolVersion: string; generation: 'v1' | 'v2' | null; capabilitiesDigest: string };
  tool: string;
  arguments: Record<string, unknown>;
  policy: TaskPolicy;
  needs: CallNeeds;
  missing: string[];
  idempotencyKey: string;
  correlationId: string;
  /** One paragraph for the person who takes it over. */
  instructions: string;
}

/** The route the router chose. `fallback` carries what is missing. */
export type RouteDecision = { route: 'task' } | { route: 'sync' } | { route: 'fallback'; missing: string[] };

/**
 * Decide how a call runs.
 * @param answersInput - this client has an input handler (`onInput`).
 */
export function decideRoute(manifest: CapabilityManifest, tool: string, policy: TaskPolicy, needs: CallNeeds, answersInput: boolean): RouteDecision {
  const mode = toolTaskMode(manifest, tool);
  if (policy === 'forbidden') {
    return mode === 'required'
      ? { route: 'fallback', missing: [`tool ${tool} runs only as a task (taskSupport: required), and the policy forbids tasks`] }
      : { route: 'sync' };
  }
  const missing: string[] = [];
  if (manifest.generation === null) missing.push(`${manifest.protocolVersion ? `MCP ${manifest.protocolVersion}` : 'this connection'} offers no tasks`);
  else if (mode === 'forbidden') missing.push(`tool ${tool} does not run as a task (taskSupport: forbidden)`);
  const has = (operation: TaskOperation): boolean => manifest.taskOperations.includes(operation);
  if (needs.cancel && !has('cancel')) missing.push('tasks/cancel is not offered (no tasks.cancel capability)');
  if (needs.list && !has('list'))
    missing.push(
      manifest.generation === 'v2'
        ? 'tasks/list does not exist in the 2026-07-28 Tasks Extension'
        : 'tasks/list is not offered (servers offer it only with authentication)',
    );
  if (needs.input) {
    if (manifest.generation !== null && !has('result') && !has('update')) missing.push('the connection cannot carry questions to a task');
    if (!answersInput) missing.push('this client has no input handler (onInput)');
  }
  return missing.length === 0 ? { route: 'task' } : { route: 'fallback', missing };
}

/** Whether the fallback `sync` may run `tool`: never for a tool that runs only as a task. */
export function syncAllowed(manifest: CapabilityManifest, tool: string): boolean {
  return toolTaskMode(manifest, tool) !== 'required';
}
