import { z } from 'zod';

import type { TaskGeneration } from './types.js';

/**
 * Input a server asks the user for: MCP form elicitation (`elicitation/create`), reached through the 2026-07-28
 * `inputRequests` of `tasks/get` and of MRTR `tools/call` answers, or through 2025-11-25 server→client requests.
 */

/** The `params` of an `elicitation/create` request: form mode (`requestedSchema`) or URL mode (`url`). */
export interface ElicitationParams {
  /** `form` when absent. */
  mode?: 'form' | 'url';
  /** What to show the user. */
  message: string;
  /** Form mode: a flat JSON Schema object of the fields to fill in (`properties`, `required`). */
  requestedSchema?: Record<string, unknown>;
  /** URL mode: the page the user should open. */
  url?: string;
  [key: string]: unknown;
}

/** One question for the user. */
export interface InputRequest {
  /**
   * Identifies the question: the `inputRequests` key on 2026-07-28 (unique for the task's life, E23) or of an MRTR
   * round; on 2025-11-25 the key an mcp-tasks server encodes in the request id (`mcp-tasks-input/<taskId>/<key>`),
   * else the JSON-RPC request id as a string.
   */
  key: string;
  /** The task that asks; absent while a `tools/call` gathers input before any task exists. */
  taskId?: string;
  /** Always `elicitation/create`: this client declares no other kind of input (E28). */
  method: 'elicitation/create';
  params: ElicitationParams;
}

/** The user's answer (MCP `ElicitResult`): `accept` with the form's `content`, `decline`, or `cancel` (dismissed). */
export interface ElicitAnswer {
  action: 'accept' | 'decline' | 'cancel';
  /** Field values of an accepted form: strings, numbers, booleans, or string arrays (multi-select). */
  content?: Record<string, string | number | boolean | string[]>;
}

/** What an {@link InputHandler} is told besides the question. */
export interface InputContext {
  /** Aborted when the wait or call that asked is abandoned; a handler prompting a user should stop then. */
  signal: AbortSignal;
  /** The task generation of the connection, or `null` for a connection without tasks (MRTR on an inline call). */
  generation: TaskGeneration | null;
}

/**
 * Answers questions: returns the answer, or `undefined` to leave the question for later (another client, or
 * `answerTask`). Called once per question, one question at a time, in the order they arrive. An exception ends
 * the wait or call that asked with that exception, and the question stays unanswered.
 */
export type InputHandler = (request: InputRequest, context: InputContext) => Promise<ElicitAnswer | undefined> | ElicitAnswer | undefined;

/** The form-mode elicitation capability this client declares when it has an {@link InputHandler}. */
export const ELICITATION_CAPABILITY = Object.freeze({ form: Object.freeze({}) });

const Content = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]));
const ElicitAnswerSchema = z.strictObject({ action: z.enum(['accept', 'decline', 'cancel']), content: Content.optional() });

const InputRequestEntrySchema = z.looseObject({ method: z.string(), params: z.looseObject({ message: z.string() }).optional() });

/**
 * Check what a handler returned before it goes on the wire.
 * @throws TypeError naming the key when it is not an {@link ElicitAnswer}.
 */
export function checkAnswer(key: string, answer: unknown): ElicitAnswer {
  const parsed = ElicitAnswerSchema.safeParse(answer);
  if (!parsed.success)
    throw new TypeError(`the input handler's answer to ${key} is not {action: "accept"|"decline"|"cancel", content?}: ${z.prettifyError(parsed.error)}`);
  return parsed.data as ElicitAnswer;
}

/**
 * The questions of an `inputRequests` map this client can answer (`elicitation/create` with a message), in map
 * order. Entries of other kinds are left out: the client never declared them (E28) and cannot answer them.
 */
export function elicitationsOf(inputRequests: Record<string, unknown>, taskId?: string): InputRequest[] {
  const requests: InputRequest[] = [];
  for (const [key, entry] of Object.entries(inputRequests)) {
    const parsed = InputRequestEntrySchema.safeParse(entry);
    if (!parsed.success || parsed.data.method !== 'elicitation/create' || !parsed.data.params) continue;
    requests.push({ key, ...(taskId === undefined ? {} : { taskId }), method: 'elicitation/create', params: parsed.data.params as ElicitationParams });
  }
  return requests;
}

/**
 * Ask `handler` the given questions one after the other and collect the answers it gave (keys it left for later
 * are absent).
 * @throws whatever the handler throws, or TypeError for an answer of the wrong shape.
 */
export async function collectAnswers(requests: readonly InputRequest[], handler: InputHandler, context: InputContext): Promise<Record<string, ElicitAnswer>> {
  const answers: Record<string, ElicitAnswer> = {};
  for (const request of requests) {
    context.signal.throwIfAborted();
    const answer = await handler(request, context);
    if (answer !== undefined) answers[request.key] = checkAnswer(request.key, answer);
  }
  return answers;
}

/** A handler answering from a fixed map of key → answer; keys not in the map are left for later. */
export function answersFromMap(answers: Readonly<Record<string, ElicitAnswer>>): InputHandler {
  return (request) => (Object.hasOwn(answers, request.key) ? answers[request.key] : undefined);
}

/**
 * The handler with its calls queued, so it is asked one question at a time even when questions arrive together
 * (two 2025-11-25 requests on one stream, two tasks waited on at once).
 */
export function serializeHandler(handler: InputHandler): InputHandler {
  let queue: Promise<unknown> = Promise.resolve();
  return (request, context) => {
    const turn = queue.then(() => handler(request, context));
    queue = turn.catch(() => {});
    return turn;
  };
}
