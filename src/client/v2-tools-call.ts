import { randomUUID } from 'node:crypto';

import { z } from 'zod';

import { IMMEDIATE_RESPONSE_META_KEY } from '../protocol/constants.js';
import type { JsonValue } from '../protocol/types.js';
import { callErrorAnswer, neverDelivered, rootCause } from './error-mapping.js';
import { InputNotAnsweredError, TasksConnectionError, TasksProtocolError, ToolCallOutcomeUnknownError } from './errors.js';
import { collectAnswers, elicitationsOf, type InputHandler } from './input.js';
import type { CallToolResult, TaskSnapshot } from './types.js';
import { type ModernEndpoint, modernMeta, postModern, sseMessages } from './v2-http.js';
import { CallToolResultSchema, fromV2Task, toCallToolResult, V2CreateTaskResultSchema } from './wire-schemas.js';

/**
 * The `tools/call` of a 2026-07-28 connection, sent without the SDK client: `@modelcontextprotocol/client` 2.4.0
 * rejects a `resultType: "task"` answer with `UNSUPPORTED_RESULT_TYPE` — after the server has created the task.
 * Each POST is sent once, never repeated: any doubt about delivery becomes a {@link ToolCallOutcomeUnknownError}.
 * An MRTR `input_required` answer is followed by the protocol's own retry (a new request id carrying the answers
 * and the echoed `requestState`, B16), which is not a repeat: the server started nothing for the earlier round.
 */

/** Everything the raw POSTs need. */
export interface ModernCallOptions extends ModernEndpoint {
  /** This request's capabilities declare the Tasks Extension (only when the server advertises it, B10). */
  declareTasks: boolean;
  /** Answers MRTR questions; without one an `input_required` answer ends in {@link InputNotAnsweredError}. */
  onInput?: InputHandler;
  signal?: AbortSignal;
  /** How long to wait for each answer, in ms. */
  timeoutMs: number;
  /** More `_meta` for every round (idempotency key, correlation id). */
  meta?: Record<string, unknown>;
}

/** What a `tools/call` answered in the end (either generation); `immediateResponse` as R15 / the v2 initial statusMessage. */
export type ToolsCallAnswer = { kind: 'task'; task: TaskSnapshot; immediateResponse?: string } | { kind: 'result'; result: CallToolResult };

/** MRTR rounds answered at most before the call is given up (a server asking forever is a server bug). */
const MAX_INPUT_ROUNDS = 10;

const JsonRpcResponseSchema = z.looseObject({
  id: z.union([z.string(), z.number(), z.null()]),
  result: z.record(z.string(), z.unknown()).optional(),
  error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
});
type JsonRpcResponse = z.output<typeof JsonRpcResponseSchema>;

const InputRequiredSchema = z.looseObject({
  inputRequests: z.record(z.string(), z.unknown()).optional(),
  requestState: z.string().optional(),
});

type RoundAnswer = ToolsCallAnswer | { kind: 'input_required'; inputRequests: Record<string, unknown>; requestState?: string };

/**
 * Call a tool: send `tools/call`, answer MRTR rounds through `onInput` (at most {@link MAX_INPUT_ROUNDS}), and
 * return the task or the result.
 * @throws ToolCallFailedError for the server's JSON-RPC error answer to the call (it failed; see there whether it
 *   ran); TasksProtocolError for a refusal before the call was read (`id: null`, HTTP 4xx) or an invalid answer.
 * @throws InputNotAnsweredError when the server asks for input the handler does not give (nothing started).
 * @throws TasksConnectionError when a request certainly never arrived (refused, unresolvable, HTTP 4xx without a
 *   JSON-RPC body).
 * @throws ToolCallOutcomeUnknownError when a request may have arrived but no usable answer came back, the server
 *   failed (HTTP 5xx), or it answered that its task store failed.
 */
export async function callToolModern(name: string, args: Record<string, unknown>, options: ModernCallOptions): Promise<ToolsCallAnswer> {
  let retry: { inputResponses: Record<string, unknown>; requestState?: string } | undefined;
  for (let round = 0; ; round++) {
    const answer = await sendRound(name, args, options, retry);
    if (answer.kind !== 'input_required') return answer;
    if (round >= MAX_INPUT_ROUNDS)
      throw new TasksProtocolError(`tools/call ${name}: the server still asks for input after ${MAX_INPUT_ROUNDS} answered rounds; giving up`);
    const requests = elicitationsOf(answer.inputRequests);
    if (requests.length < Object.keys(answer.inputRequests).length) {
      throw new TasksProtocolError(`tools/call ${name}: the server asked for input of a kind this client did not declare (E28)`);
    }
    const signal = options.signal ?? new AbortController().signal;
    const responses = options.onInput ? await collectAnswers(requests, options.onInput, { signal, generation: options.declareTasks ? 'v2' : null }) : {};
    const missing = requests.filter((request) => !Object.hasOwn(responses, request.key));
    if (missing.length > 0) throw new InputNotAnsweredError(name, missing);
    // B16: only the retry carries both fields, with requestState echoed byte for byte (never invented).
    retry = { inputResponses: responses, ...(answer.requestState === undefined ? {} : { requestState: answer.requestState }) };
  }
}

/** One POST of `tools/call` (the first, or an MRTR retry) and its interpreted answer. */
async function sendRound(
  name: string,
  args: Record<string, unknown>,
  options: ModernCallOptions,
  retry: { inputResponses: Record<string, unknown>; requestState?: string } | undefined,
): Promise<RoundAnswer> {
  const id = `tools-call-${randomUUID()}`;
  const params = { name, arguments: args, ...retry, _meta: { ...options.meta, ...modernMeta(options) } };
  const signal = AbortSignal.any([AbortSignal.timeout(options.timeoutMs), ...(options.signal ? [options.signal] : [])]);
  const url = options.url.href;
  let response: Response;
  try {
    response = await postModern(options, { id, method: 'tools/call', params }, { name, signal });
  } catch (error) {
    if (neverDelivered(error))
      throw new TasksConnectionError(`cannot reach ${url}: ${rootCause(error)}; tools/call ${name} was not sent`, false, { cause: error });
    throw outcomeUnknown(name, url, describeFailure(error, options.signal), error);
  }
  let message: JsonRpcResponse | undefined;
  try {
    message = await readAnswer(response, id);
  } catch (error) {
    throw outcomeUnknown(name, url, describeFailure(error, options.signal), error, response.status);
  }
  if (message?.error) {
    const { code, message: text, data } = message.error;
    // The answer to this request (not an `id: null` refusal of the HTTP layer) from a server that did not fail itself.
    if (message.id === id && response.status < 500) throw callErrorAnswer(name, url, code, text, data as JsonValue | undefined);
    if (response.status >= 500) throw outcomeUnknown(name, url, `HTTP ${response.status}: ${text} (JSON-RPC ${code})`, undefined, response.status);
    throw new TasksProtocolError(`tools/call ${name}: ${text} (JSON-RPC ${code})`, code, data as JsonValue | undefined);
  }
  if (!message?.result) {
    if (response.status >= 400 && response.status < 500) {
      throw new TasksConnectionError(`HTTP ${response.status} from ${url}; tools/call ${name} was refused before it ran`, false, {
        httpStatus: response.status,
      });
    }
    throw outcomeUnknown(name, url, `HTTP ${response.status} without a JSON-RPC answer`, undefined, response.status);
  }
  return interpret(name, message.result, options.declareTasks);
}

function interpret(name: string, result: Record<string, unknown>, declaredTasks: boolean): RoundAnswer {
  const resultType = result.resultType ?? 'complete'; // B5: an answer without resultType is "complete"
  if (resultType === 'task') {
    if (!declaredTasks)
      throw new TasksProtocolError(`tools/call ${name}: the server created a task although this request did not declare the Tasks Extension (E3)`);
    const parsed = V2CreateTaskResultSchema.safeParse(result);
    if (!parsed.success) throw new TasksProtocolError(`tools/call ${name}: invalid CreateTaskResult (${z.prettifyError(parsed.error)})`);
    const task = fromV2Task(parsed.data);
    const meta = parsed.data._meta as Record<string, unknown> | undefined;
    const immediate = typeof meta?.[IMMEDIATE_RESPONSE_META_KEY] === 'string' ? (meta[IMMEDIATE_RESPONSE_META_KEY] as string) : task.statusMessage;
    return { kind: 'task', task, ...(immediate === undefined ? {} : { immediateResponse: immediate }) };
  }
  if (resultType === 'complete') {
    const parsed = CallToolResultSchema.safeParse(result);
    if (!parsed.success) throw new TasksProtocolError(`tools/call ${name}: invalid CallToolResult (${z.prettifyError(parsed.error)})`);
    return { kind: 'result', result: toCallToolResult(parsed.data) };
  }
  if (resultType === 'input_required') {
    const parsed = InputRequiredSchema.safeParse(result);
    // B14: at least one of the two; without questions there is nothing to answer.
    if (!parsed.success || !parsed.data.inputRequests || Object.keys(parsed.data.inputRequests).length === 0) {
      throw new TasksProtocolError(`tools/call ${name}: invalid input_required answer (no inputRequests)`);
    }
    return {
      kind: 'input_required',
      inputRequests: parsed.data.inputRequests,
      ...(parsed.data.requestState === undefined ? {} : { requestState: parsed.data.requestState }),
    };
  }
  throw new TasksProtocolError(`tools/call ${name}: unknown resultType ${JSON.stringify(resultType)}`);
}

function outcomeUnknown(name: string, url: string, reason: string, cause: unknown, httpStatus?: number): ToolCallOutcomeUnknownError {
  return new ToolCallOutcomeUnknownError(
    `tools/call ${name} was sent to ${url} but no answer arrived (${reason}). The server may have started it; ` +
      `it was not resent. Check on the server before calling again, unless the tool is safe to repeat.`,
    name,
    { cause, ...(httpStatus === undefined ? {} : { httpStatus }) },
  );
}

function describeFailure(error: unknown, callerSignal: AbortSignal | undefined): string {
  if (callerSignal?.aborted) return 'interrupted';
  if (error instanceof Error && error.name === 'TimeoutError') return 'timed out';
  return rootCause(error) ?? (error instanceof Error ? error.message : 'network error');
}

/** The JSON-RPC response to `id` from a JSON body or an SSE stream; `undefined` when the body holds none. */
async function readAnswer(response: Response, id: string): Promise<JsonRpcResponse | undefined> {
  const type = response.headers.get('content-type') ?? '';
  const matches = (value: unknown): value is JsonRpcResponse => {
    const parsed = JsonRpcResponseSchema.safeParse(value);
    return parsed.success && (parsed.data.id === id || (parsed.data.id === null && parsed.data.error !== undefined));
  };
  if (type.includes('text/event-stream')) {
    if (!response.body) return undefined;
    // Notifications on the stream (progress, logs) are skipped; leaving the loop cancels the body.
    for await (const message of sseMessages(response.body)) if (matches(message)) return message;
    return undefined;
  }
  const text = await response.text();
  if (!type.includes('application/json')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  return (Array.isArray(parsed) ? parsed : [parsed]).find(matches);
}
