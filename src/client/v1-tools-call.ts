import { ProtocolError } from '@modelcontextprotocol/client';

import { callErrorAnswer, isAbort, neverDelivered } from './error-mapping.js';
import { InputNotAnsweredError, TasksConnectionError, TasksProtocolError, ToolCallOutcomeUnknownError } from './errors.js';
import type { McpSession } from './session.js';
import type { V1InputRouter } from './v1-input-router.js';
import type { ToolsCallAnswer } from './v2-tools-call.js';
import { V1ToolsCallResultSchema } from './wire-schemas.js';

/**
 * The `tools/call` of a v1-generation (2025-11-25) session, through the SDK client. Sent once: no resend on a lost session, even when
 * it provably did not run; any doubt about delivery becomes a {@link ToolCallOutcomeUnknownError}.
 * @param params - the complete params (`name`, `arguments`, `task?`, `_meta`).
 * @throws InputNotAnsweredError when the call failed after asking something the router's handler did not answer.
 * @throws ToolCallFailedError when the server answered the call with a JSON-RPC error (the call failed; see there
 *   whether it ran); TasksProtocolError / TasksConnectionError when the call certainly did not run; otherwise
 *   ToolCallOutcomeUnknownError (also when the server answered that its task store failed).
 */
export async function callToolLegacy(
  session: McpSession,
  router: V1InputRouter | undefined,
  params: Record<string, unknown>,
  options: { timeoutMs: number; signal: AbortSignal | undefined; url: string; listable: boolean },
): Promise<ToolsCallAnswer> {
  const name = params.name as string;
  const unanswered = router?.unansweredCallQuestions;
  const before = unanswered?.length ?? 0;
  try {
    return await session.request('tools/call', params, V1ToolsCallResultSchema, {
      timeoutMs: options.timeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    // The call failed after asking something this client could not answer: that is the reason to report.
    if (unanswered && unanswered.length > before && error instanceof TasksProtocolError)
      throw new InputNotAnsweredError(name, unanswered.slice(before), { cause: error });
    throw undeliveredOrUnknown(name, error, options);
  }
}

/**
 * The server's own JSON-RPC error answer becomes what {@link callErrorAnswer} makes of it (failed, or unknown when its
 * task store failed); other errors proving the call never ran pass through; anything else means it may have started.
 */
function undeliveredOrUnknown(name: string, error: unknown, options: { signal: AbortSignal | undefined; url: string; listable: boolean }): Error {
  if (error instanceof TasksProtocolError && error.code !== null && error.cause instanceof ProtocolError)
    return callErrorAnswer(name, options.url, error.code, error.cause.message, error.data, error.cause);
  if (error instanceof TasksProtocolError) return error;
  if (error instanceof TasksConnectionError && (neverDelivered(error.cause) || (error.httpStatus !== undefined && error.httpStatus < 500))) return error;
  const reason = options.signal?.aborted || isAbort(error) ? 'interrupted' : error instanceof Error ? error.message : String(error);
  return new ToolCallOutcomeUnknownError(
    `tools/call ${name} was sent to ${options.url} but no answer arrived (${reason}). The server may have started it; it was not resent. ` +
      (options.listable ? 'listTasks() shows the tasks it created. ' : 'Check on the server before calling again, unless the tool is safe to repeat.'),
    name,
    { cause: error },
  );
}
