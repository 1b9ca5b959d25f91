import type { Server, ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';

import { invalidParams, missingTasksExtension } from '../core/errors.js';
import { issuesLine } from '../core/input-issues.js';
import { v2Acknowledgement } from '../protocol/v2/codec.js';
import type { Caller, TaskCaller } from '../service/caller.js';
import type { HandlerDeps } from './deps.js';
import { guarded } from './guard.js';
import { readTaskV2 } from './task-replies.js';

// Params are checked only after the extension gate, so a non-declaring client always gets -32021 first (E41).
const AnyParams = z.looseObject({});
const TaskIdParams = z.looseObject({ taskId: z.string().min(1) });
const InputResponsesSchema = z.record(z.string(), z.unknown());

type CallerFor = (context: ServerContext) => Caller;

function parse<T>(schema: z.ZodType<T>, method: string, params: unknown): T {
  const parsed = schema.safeParse(params);
  if (!parsed.success) throw invalidParams(`Invalid params for ${method}: ${issuesLine(parsed.error)}`);
  return parsed.data;
}

/** The caller as a v2 task caller, or `-32021` before any lookup when its request lacks the extension (E41). */
function v2Caller(caller: Caller, method: string): TaskCaller {
  if (caller.generation !== 'v2') throw missingTasksExtension({ method });
  return caller as TaskCaller;
}

/**
 * Register the Tasks Extension methods (`tasks/get|update|cancel`, SEP-2663) on a 2026-07-28 SDK server, each
 * through the task service. Without the extension in this request's `_meta` every method answers `-32021` before
 * any lookup (E41); a task that is unknown, foreign, expired or of the other generation is answered `-32602` (E39,
 * E45).
 */
export function registerV2TaskHandlers(server: Server, deps: HandlerDeps, callerFor: CallerFor): void {
  // E19: a pure, repeatable read of the current variant, result or error inline.
  server.setRequestHandler('tasks/get', { params: AnyParams }, (raw, context) =>
    guarded(deps.logger, 'tasks/get', async () => {
      const caller = v2Caller(callerFor(context), 'tasks/get');
      const { taskId } = parse(TaskIdParams, 'tasks/get', raw);
      return readTaskV2(deps, caller, taskId, context.mcpReq.signal);
    }),
  );

  // E25–E27: acknowledged; answers to keys that are not outstanding are ignored.
  server.setRequestHandler('tasks/update', { params: AnyParams }, (raw, context) =>
    guarded(deps.logger, 'tasks/update', async () => {
      const caller = v2Caller(callerFor(context), 'tasks/update');
      const { taskId } = parse(TaskIdParams, 'tasks/update', raw);
      // The SDK lifts `inputResponses` out of the params (MRTR plumbing) into ctx.mcpReq; entries that are not bare
      // response objects are dropped there, which is what E27 asks for unusable answers anyway.
      const inputResponses = parse(InputResponsesSchema, 'tasks/update', context.mcpReq.inputResponses ?? (raw as { inputResponses?: unknown }).inputResponses);
      await deps.service.tasks.answerInput(caller, taskId, inputResponses);
      return v2Acknowledgement();
    }),
  );

  // E30–E31: empty ack; a terminal task is left unchanged and still acknowledged.
  server.setRequestHandler('tasks/cancel', { params: AnyParams }, (raw, context) =>
    guarded(deps.logger, 'tasks/cancel', async () => {
      const caller = v2Caller(callerFor(context), 'tasks/cancel');
      const { taskId } = parse(TaskIdParams, 'tasks/cancel', raw);
      await deps.service.tasks.cancel(caller, taskId);
      return v2Acknowledgement();
    }),
  );
}
