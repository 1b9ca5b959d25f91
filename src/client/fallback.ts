import type { CapabilityManifest } from '../protocol/manifest.js';
import { CapabilityMissingError } from './errors.js';
import { type CallNeeds, type Fallback, type HandoffRecord, syncAllowed, type TaskPolicy } from './router.js';
import type { CallIdentity, CallToolOutcome } from './types.js';

/** Everything a fallback needs to know about the call it replaces. */
export interface FallbackContext extends CallIdentity {
  url: string;
  manifest: CapabilityManifest;
  tool: string;
  args: Record<string, unknown>;
  policy: TaskPolicy;
  needs: CallNeeds;
  missing: string[];
}

/**
 * Run the fallback the caller chose for a call the router would not send as asked. `'sync'` is not handled here:
 * it resolves `'sync'` so the caller sends the call inline (after {@link checkSyncFallback}).
 * @throws CapabilityMissingError for `'reject'`; whatever the job API throws.
 */
export async function runFallback(fallback: Exclude<Fallback, 'sync'>, context: FallbackContext): Promise<CallToolOutcome> {
  if (fallback === 'reject') throw new CapabilityMissingError(context.tool, context.policy, context.missing, context.manifest.capabilitiesDigest);
  const identity = { idempotencyKey: context.idempotencyKey, correlationId: context.correlationId };
  if (fallback === 'handoff') return { kind: 'handoff', handoff: handoffRecord(context) };
  const value = await fallback.jobApi({ tool: context.tool, arguments: context.args, missing: context.missing, manifest: context.manifest, ...identity });
  return { kind: 'jobApi', value, missing: context.missing, ...identity };
}

/**
 * The `'sync'` fallback may run only a tool that does not require a task, and only bounded.
 * @throws CapabilityMissingError when the tool runs only as a task; RangeError without a positive integer `maxSyncMs`.
 */
export function checkSyncFallback(context: FallbackContext, maxSyncMs: number | undefined): number {
  if (!syncAllowed(context.manifest, context.tool)) {
    throw new CapabilityMissingError(
      context.tool,
      context.policy,
      [...context.missing, `the sync fallback cannot run it: tool ${context.tool} runs only as a task`],
      context.manifest.capabilitiesDigest,
    );
  }
  if (maxSyncMs === undefined || !Number.isInteger(maxSyncMs) || maxSyncMs <= 0)
    throw new RangeError(`fallback 'sync' needs maxSyncMs, a positive integer bounding the call in ms (got ${String(maxSyncMs)})`);
  return maxSyncMs;
}

function handoffRecord(context: FallbackContext): HandoffRecord {
  const { manifest } = context;
  return {
    kind: 'mcp-tasks/handoff',
    version: 1,
    createdAt: new Date().toISOString(),
    server: {
      url: context.url,
      name: manifest.server?.name ?? null,
      version: manifest.server?.version ?? null,
      protocolVersion: manifest.protocolVersion,
      generation: manifest.generation,
      capabilitiesDigest: manifest.capabilitiesDigest,
    },
    tool: context.tool,
    arguments: context.args,
    policy: context.policy,
    needs: context.needs,
    missing: context.missing,
    idempotencyKey: context.idempotencyKey,
    correlationId: context.correlationId,
    instructions:
      `The tool ${context.tool} was not called: ${context.missing.join('; ')}. Run it another way (or on a server that offers what is missing); ` +
      `nothing was sent to ${context.url}, so it has not run. Pass the idempotency key on, if the system you use accepts one, so it runs once.`,
  };
}
