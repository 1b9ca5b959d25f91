/**
 * One `tools/call` of the requestor, whichever generation carries it: the call's identity in `_meta`, the pending
 * journal entry kept while its answer is outstanding, and the one resend with the same idempotency key that a
 * server honouring keys allows. The generation-specific exchanges are v1-tools-call.ts and v2-tools-call.ts.
 */
import { ApplicationErrorReason, CORRELATION_ID_META_KEY, IDEMPOTENCY_KEY_META_KEY } from '../protocol/constants.js';
import { honoursIdempotencyKeys } from '../protocol/manifest.js';
import { TasksProtocolError, ToolCallOutcomeUnknownError, ToolCallRefusedError } from './errors.js';
import type { PendingCallEntry } from './journal.js';
import { modernEndpointOf, type RequestorLink } from './requestor-link.js';
import type { CallIdentity, CallToolOutcome, TaskGeneration } from './types.js';
import { callToolLegacy } from './v1-tools-call.js';
import { callToolModern, type ToolsCallAnswer } from './v2-tools-call.js';

/**
 * Send one `tools/call` (with the identity in `_meta`), journaled as pending while its answer is outstanding.
 * A lost answer is resent once with the same key when the server honours keys (and `retry` allows it). `resend`:
 * this send repeats an earlier one whose answer was lost ({@link TasksClient.resumeCall}).
 *
 * A refusal of a resend (a quota, the kill switch: {@link ToolCallRefusedError}) proves nothing about the first send,
 * which may have been recorded before the refusal began (the kill switch is checked before the idempotency key):
 * its outcome stays unknown and its pending entry stays.
 * @throws ToolCallFailedError when the server answered the call with a JSON-RPC error, TasksProtocolError when it
 *   refused it otherwise, TasksConnectionError when it certainly never reached the server (all settle the pending
 *   entry); ToolCallOutcomeUnknownError when no usable answer arrived or the server's task store failed (the pending
 *   entry stays, evidence for {@link TasksClient.resumeCall}).
 */
export async function sendToolsCall(
  link: RequestorLink,
  params: Record<string, unknown>,
  identity: CallIdentity,
  asTask: boolean,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  retry = true,
  resend = false,
): Promise<ToolsCallAnswer> {
  const name = params.name as string;
  const args = params.arguments as Record<string, unknown>;
  const honoured = honoursIdempotencyKeys(link.generation, link.session.serverCapabilities);
  const meta = { [IDEMPOTENCY_KEY_META_KEY]: identity.idempotencyKey, [CORRELATION_ID_META_KEY]: identity.correlationId };
  const pending: PendingCallEntry = {
    ...identity,
    url: link.url,
    generation: link.generation,
    protocolVersion: link.protocolVersion,
    tool: name,
    arguments: args,
    ...(params.task ? { task: params.task as Record<string, unknown> } : {}),
    sentAt: new Date().toISOString(),
    idempotencyHonoured: honoured,
  };
  await link.journaled.addPending(pending);
  const send = (): Promise<ToolsCallAnswer> =>
    link.session.generation === 'v2'
      ? callToolModern(name, args, {
          ...modernEndpointOf(link, asTask),
          declareTasks: asTask && link.generation === 'v2',
          ...(link.input ? { onInput: link.input.handler } : {}),
          ...(signal ? { signal } : {}),
          timeoutMs,
          meta,
        })
      : callToolLegacy(
          link.session,
          link.input?.router,
          { ...params, _meta: meta },
          { timeoutMs, signal, url: link.url, listable: link.taskCapabilities.list },
        );
  let answer: ToolsCallAnswer;
  try {
    try {
      answer = await send().catch((error: unknown) => {
        throw resend && error instanceof ToolCallRefusedError ? refusedResend(error, pending) : error;
      });
    } catch (error) {
      if (!(retry && honoured && error instanceof ToolCallOutcomeUnknownError && !signal?.aborted)) throw error;
      // The server promised: same owner + key + tool + arguments → the existing task, never a second run.
      answer = await send().catch((resent: unknown) => {
        // "Key already used" without a task (an inline call, its result not kept), or a refusal of the resend (the
        // first send may be recorded): the outcome stays unknown.
        throw keyAlreadyUsed(resent) || resent instanceof ToolCallRefusedError ? error : resent;
      });
    }
  } catch (error) {
    // Proof that nothing started (refused, answered with an error): no evidence worth keeping.
    if (!(error instanceof ToolCallOutcomeUnknownError)) await link.journaled.removePending(identity.correlationId);
    throw error;
  }
  // A task settles the pending entry in the same write that records the task; an inline result needs none.
  if (answer.kind === 'result') await link.journaled.removePending(identity.correlationId);
  return answer;
}

/** The unknown outcome of a call whose resend the server refused (the first send may have been recorded). */
function refusedResend(refusal: ToolCallRefusedError, pending: PendingCallEntry): ToolCallOutcomeUnknownError {
  return new ToolCallOutcomeUnknownError(
    `tools/call ${pending.tool} sent to ${pending.url} at ${pending.sentAt} (correlation id ${pending.correlationId}) was sent again and refused (${refusal.message}); the first send may have been recorded, so its outcome is still unknown and it stays journaled: resume it later, or check on the server before calling again.`,
    pending.tool,
    { cause: refusal },
  );
}

/** Journal a created task (settling its pending call) and describe it as the outcome of its call. */
export async function createdOutcome(
  link: RequestorLink,
  answer: Extract<ToolsCallAnswer, { kind: 'task' }>,
  tool: string,
  identity: CallIdentity,
): Promise<CallToolOutcome> {
  const generation = link.generation as TaskGeneration;
  const journaled = await link.journaled.record(answer.task, tool, generation, identity);
  return {
    kind: 'task',
    taskId: answer.task.taskId,
    generation,
    task: answer.task,
    journaled,
    ...identity,
    ...(answer.immediateResponse === undefined ? {} : { immediateResponse: answer.immediateResponse }),
  };
}

/**
 * Whether a resent call was refused because its idempotency key is used up (`data.reason` `idempotency_key_used`);
 * the message is read only for servers from before that reason existed.
 */
export function keyAlreadyUsed(error: unknown): boolean {
  if (!(error instanceof TasksProtocolError)) return false;
  const data = error.data;
  if (typeof data === 'object' && data !== null && !Array.isArray(data) && 'reason' in data) return data.reason === ApplicationErrorReason.IdempotencyKeyUsed;
  return /^Idempotency key .* already used/.test(error.message.replace(/^tools\/call[^:]*: /, ''));
}
