import type { JSONRPCRequest, ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';

import { invalidParams } from '../core/errors.js';
import { issuesLine } from '../core/input-issues.js';
import type { JsonObject, TaskRecord } from '../core/task.js';
import { traceCarrierOf } from '../core/trace-context.js';
import { IDEMPOTENCY_KEY_META_KEY, isValidIdempotencyKey } from '../protocol/constants.js';
import { v1CreateTaskResult } from '../protocol/v1/codec.js';
import { v2CreateTaskResult } from '../protocol/v2/codec.js';
import type { Caller } from '../service/caller.js';
import type { ToolCall } from '../service/calls/call-plan.js';
import type { CallOutcome } from '../service/calls/call-service.js';
import type { InlineProgressUpdate } from '../service/calls/inline-progress.js';
import { withPollHint } from '../service/poll-hint.js';
import type { HandlerDeps } from './deps.js';
import { fallbackCreatedAnswer, fallbackOperationAnswer } from './fallback-answers.js';
import { callInteraction } from './input-gathering.js';

const CallParamsSchema = z.looseObject({
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).optional(),
  _meta: z.looseObject({ progressToken: z.union([z.string(), z.number().int()]).optional(), [IDEMPOTENCY_KEY_META_KEY]: z.unknown().optional() }).optional(),
});

/**
 * The {@link ToolCall} of `tools/call` params.
 * @throws TasksError `-32602` for params that are not a `CallToolRequest`'s.
 */
export function toolCallOf(params: unknown): ToolCall {
  const parsed = CallParamsSchema.safeParse(params ?? {});
  if (!parsed.success) throw invalidParams(`Invalid params for tools/call: ${issuesLine(parsed.error)}`);
  const { name, arguments: args, task, _meta } = parsed.data as z.infer<typeof CallParamsSchema> & { task?: unknown };
  const idempotencyKey = _meta?.[IDEMPOTENCY_KEY_META_KEY];
  const trace = traceCarrierOf(_meta as { traceparent?: unknown; tracestate?: unknown } | undefined);
  if (idempotencyKey !== undefined && (typeof idempotencyKey !== 'string' || !isValidIdempotencyKey(idempotencyKey))) {
    throw invalidParams(`Invalid params for tools/call: _meta["${IDEMPOTENCY_KEY_META_KEY}"] must be a string of 1–255 printable ASCII characters`);
  }
  return {
    name,
    ...(args === undefined ? {} : { arguments: args }),
    ...(task === undefined ? {} : { task }),
    progressToken: _meta?.progressToken ?? null,
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
    ...(trace ? { trace } : {}),
  };
}

/**
 * `tools/call` on the SDK path for every generation, answered through the SDK's fallback handler so that task
 * results are spec-exact (v1 nested `{task}` and v2 flat `resultType: "task"`, neither with a `content` key).
 * The decision and the work are the service's (`planCall`, `callTool`); this adapter reads the request and
 * writes the answer.
 */
export async function handleToolsCall(
  deps: HandlerDeps,
  caller: Caller,
  request: JSONRPCRequest,
  context: ServerContext,
  onCreated?: (record: TaskRecord) => void,
): Promise<JsonObject> {
  const call = toolCallOf(request.params);
  const plan = await deps.service.calls.planCall(caller, call);
  const interaction = callInteraction(caller, context, deps.requestStates, { tool: call.name, args: call.arguments ?? {} });
  // A v1 session's task is recorded with its session, so the instance holding the session's GET stream follows it.
  const session = {
    ...(onCreated ? { onCreated } : {}),
    ...(caller.negotiation === 'per-session' && context.sessionId ? { sessionId: context.sessionId } : {}),
  };
  // Issue 27 §3: a request with a progressToken hears its inline run's progress (and keep-alives) on its own
  // stream — the SDK upgrades the answer to SSE at the first related notification, on both generations.
  const { progressToken } = call;
  const progress =
    progressToken === null
      ? {}
      : {
          progress: (update: InlineProgressUpdate) => {
            void context.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, ...update } }).catch((error: unknown) => {
              deps.logger.debug({ err: error }, 'progress notification not delivered');
            });
          },
        };
  return callAnswer(deps, caller, await deps.service.calls.callTool(caller, plan, { interaction, ...session, ...progress }));
}

/**
 * The wire answer of a `tools/call` outcome: the `CreateTaskResult` of a task (v1 nested with the immediate
 * response in `_meta`, R12/R15; v2 flat, E8, whose initial statusMessage carries it, and both with Claude Code's
 * `_meta["com.anthropic/agent-task"].modelImmediateResponse`), the text result of a task
 * fallback tool or of a task started for a host without task support, or the result.
 */
export function callAnswer(deps: Pick<HandlerDeps, 'clock'>, caller: Caller, outcome: CallOutcome): JsonObject {
  const now = deps.clock.now();
  switch (outcome.kind) {
    case 'task': {
      const answered = withPollHint(outcome.task, now);
      return caller.generation === 'v1'
        ? (v1CreateTaskResult(answered, outcome.immediateResponse) as unknown as JsonObject)
        : (v2CreateTaskResult(answered, outcome.immediateResponse) as unknown as JsonObject);
    }
    case 'fallback':
      return fallbackCreatedAnswer(outcome.task, outcome.immediateResponse, now);
    case 'task_operation':
      return fallbackOperationAnswer(outcome, now);
    case 'result':
      // A 2026-07-28 result is `resultType: "complete"` (base protocol); the SDK path adds it too, the fast path
      // (a task answered inline within the grace, issue 27 §5) relies on this.
      return caller.negotiation === 'per-request' && outcome.result.resultType === undefined ? { ...outcome.result, resultType: 'complete' } : outcome.result;
    default:
      return outcome.result;
  }
}
