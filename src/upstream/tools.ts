import { z } from 'zod';

import type { JsonObject } from '../core/task.js';
import type { AnyToolDefinition } from '../core/tool.js';
import type { UpstreamConnection, UpstreamTool } from './connection.js';
import { upstreamQuestion } from './elicitation.js';
import { toToolResult } from './outcome.js';
import type { UpstreamToolPolicy } from './policy.js';

/**
 * The arguments of an upstream tool as we check them: any JSON object. The upstream validates them against its own
 * schema (its answer, an `isError` result or an error, becomes the call's outcome); a zod copy of its JSON Schema
 * could refuse what the upstream accepts.
 */
const UPSTREAM_ARGUMENTS = z.record(z.string(), z.unknown());

/**
 * One upstream tool as a tool of ours (issue 28): listed as `name` with the upstream's title, description and JSON
 * Schemas unchanged (`advertisedSchemas`), run as `policy` says, and run by forwarding `tools/call` to the upstream —
 * `ctx.signal` cancels it there, the upstream's progress becomes `ctx.progress` (statusMessage and progress
 * notifications, its message prefixed with the upstream's name), and its result is the task's result (see `outcome.ts`).
 */
export function upstreamToolDefinition(connection: UpstreamConnection, tool: UpstreamTool, name: string, policy: UpstreamToolPolicy): AnyToolDefinition {
  const title = tool.title ?? (typeof tool.annotations?.title === 'string' ? tool.annotations.title : undefined);
  return {
    name,
    ...(title === undefined ? {} : { title }),
    description: tool.description ?? `${tool.name} of the upstream server ${connection.name}`,
    inputSchema: UPSTREAM_ARGUMENTS,
    advertisedSchemas: { input: tool.inputSchema, ...(tool.outputSchema ? { output: tool.outputSchema } : {}) },
    execution: policy.execution,
    idempotent: policy.idempotent,
    ...(policy.runtimeLimitMs === undefined ? {} : { runtimeLimitMs: policy.runtimeLimitMs }),
    ...(policy.defaultTtlMs === undefined ? {} : { defaultTtlMs: policy.defaultTtlMs }),
    // The upstream call stays open while its question waits: the run cannot end and run again (see elicitation.ts).
    elicits: 'in-place',
    async run(args: Record<string, unknown>, ctx) {
      // Why our side could not ask (no elicitation declared, a call that cannot wait): told to the caller instead of
      // whatever the upstream answers after its question failed.
      let refused: { error: unknown } | undefined;
      try {
        const result = await connection.call(tool.name, args as JsonObject, ctx.signal, {
          // The upstream's words are attributed to it (`everything: progress (3/5)`): a model reading the
          // statusMessage sees whose text it is. The runtime sanitises the line like every statusMessage.
          progress: (progress) => ctx.progress(progress.progress, progress.total, `${connection.name}: ${progress.message ?? 'progress'}`),
          elicit: async (params) => {
            const question = upstreamQuestion(connection.name, params);
            try {
              return await ctx.elicit(question);
            } catch (error) {
              // Cancelled, expired or stopped while it waited: the upstream's question is answered as cancelled
              // (its call is being cancelled too), not with an internal error.
              if (ctx.signal.aborted) return { action: 'cancel' };
              refused ??= { error };
              throw error;
            }
          },
        });
        if (refused) throw refused.error;
        return toToolResult(result as Parameters<typeof toToolResult>[0]);
      } catch (error) {
        throw refused ? refused.error : error;
      }
    },
  };
}
