import type { Server, ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';

import { methodNotFound, TasksError } from '../core/errors.js';
import type { JsonObject } from '../core/task.js';
import { ErrorCode } from '../protocol/constants.js';
import { toV1Task, v1ListTasksResult } from '../protocol/v1/codec.js';
import type { Caller } from '../service/caller.js';
import { withPollHint } from '../service/poll-hint.js';
import type { HandlerDeps } from './deps.js';
import { guarded } from './guard.js';
import { readTaskV1, terminalPayloadV1, v1Caller } from './task-replies.js';
import { deliverInputRequests } from './v1-elicitation.js';

const TaskIdParams = z.looseObject({ taskId: z.string().min(1) });
const ListParams = z.looseObject({ cursor: z.string().optional() });

type CallerFor = (context: ServerContext) => Caller;

/**
 * Register the 2025-11-25 task methods (`tasks/get|result|list|cancel`) on an SDK server of the v1 generation (2025-11-25). Each one goes
 * through the task service, which re-checks the caller: the task must belong to the same owner and be a v1 task,
 * else it is answered exactly like an unknown id (`-32602`, R45, R49). Sessions older than 2025-11-25 get `-32601`.
 */
export function registerV1TaskHandlers(server: Server, deps: HandlerDeps, callerFor: CallerFor): void {
  server.setRequestHandler('tasks/get', { params: TaskIdParams }, (params, context) =>
    guarded(deps.logger, 'tasks/get', () => readTaskV1(deps, callerFor(context), params.taskId, context.mcpReq.signal)),
  );

  // R23–R26: block until terminal, then exactly the original result (with related-task _meta) or JSON-RPC error.
  server.setRequestHandler('tasks/result', { params: TaskIdParams }, (params, context) =>
    guarded(deps.logger, 'tasks/result', async () => {
      const caller = v1Caller(callerFor(context), 'tasks/result');
      const sent = new Set<string>();
      // R29: while the call is open, the task's questions reach the client on this call's stream.
      const record = await deps.service.tasks.waitForTerminal(caller, params.taskId, context.mcpReq.signal, async (current) =>
        deliverInputRequests(server, current, (await deps.service.tasks.details(caller, current)).inputRequests ?? [], context.mcpReq.id, sent),
      );
      return terminalPayloadV1(deps, caller, record);
    }),
  );

  // R37–R39, R51: only offered when requestors are authenticated; keyset pages on the creation sequence.
  server.setRequestHandler('tasks/list', { params: ListParams }, (params, context) =>
    guarded(deps.logger, 'tasks/list', async () => {
      const caller = v1Caller(callerFor(context), 'tasks/list');
      if (!deps.authEnabled) throw methodNotFound('tasks/list');
      const page = await deps.service.tasks.list(caller, params.cursor);
      return v1ListTasksResult(page.tasks, page.nextCursor) as unknown as JsonObject;
    }),
  );

  // R40–R42: `cancelled` is written before the reply; a terminal task answers -32602.
  server.setRequestHandler('tasks/cancel', { params: TaskIdParams }, (params, context) =>
    guarded(deps.logger, 'tasks/cancel', async () => {
      const { cancelled, task } = await deps.service.tasks.cancel(v1Caller(callerFor(context), 'tasks/cancel'), params.taskId);
      if (cancelled) return toV1Task(withPollHint(task, deps.clock.now())) as unknown as JsonObject;
      throw new TasksError(ErrorCode.InvalidParams, `Cannot cancel task: already in terminal status '${task.status}'`);
    }),
  );
}
