import { createHmac, randomUUID } from 'node:crypto';

import { createRequestStateCodec, type RequestStateCodec, type ServerContext } from '@modelcontextprotocol/server';

import { assertElicitationDeclared, toWireRequest } from '../core/elicitation.js';
import { inPlaceInputRefused, invalidParams } from '../core/errors.js';
import type { JsonObject } from '../core/task.js';
import type { ElicitResult } from '../core/tool.js';
import { digestOf } from '../ledger/digest.js';
import { type Caller, declaresTaskSupport } from '../service/caller.js';
import type { CallAsk, CallInteraction } from '../service/calls/call-service.js';
import { checkAnswer } from '../service/tasks/input-answers.js';
import { ownerKeyFromContext } from './request-caller.js';

/** What a `requestState` carries between MRTR rounds of one `tools/call` (signed, readable by the client). */
export interface GatherState {
  tool: string;
  /** SHA-256 of the call's arguments: a retry with other arguments starts over. */
  argsDigest: string;
  /** Answers of earlier rounds, by key. */
  answers: Record<string, JsonObject>;
  /**
   * Random, minted with the first round's state and carried by every later one: identifies this call across its
   * rounds, so a replayed final round derives the same idempotency key (issue 12) and two calls never share one.
   */
  nonce?: string;
}

/**
 * The SDK's HMAC codec for MRTR `requestState` (B15): integrity-protected with a key derived from the server secret,
 * expiring after 10 minutes, and bound to the owner and method, so state replayed by another principal or after
 * expiry is refused by the SDK with `-32602` before our handler runs.
 */
export function createGatherStateCodec(secret: Buffer): RequestStateCodec<GatherState> {
  const key = createHmac('sha256', secret).update('mcp-tasks requestState v1').digest();
  const codec = createRequestStateCodec<GatherState>({
    key,
    ttlSeconds: 600,
    bind: (context) => `${ownerKeyFromContext(context)}\0${context.mcpReq.method}`,
  });
  return {
    mint: (payload, context) => codec.mint(payload, context),
    // Only the spelling the SDK mints: it decodes the MAC with atob, which ignores the spare bits of the last
    // base64url character, so other spellings of the same MAC would pass (found by the hostile-input fuzzer).
    verify(state, context) {
      const mac = state.slice(state.lastIndexOf('.') + 1);
      if (Buffer.from(mac, 'base64url').toString('base64url') !== mac) return Promise.reject(new Error('malformed'));
      return codec.verify(state, context);
    },
  };
}

/**
 * The verified `requestState` of this round. The SDK runs our codec's `verify` before registered handlers; the
 * fallback handler that answers `tools/call` may see the raw string instead, so verify it here in that case.
 * @throws TasksError `-32602` "Invalid or expired requestState" for a forged, altered, expired or foreign state.
 */
async function verifiedState(codec: RequestStateCodec<GatherState>, context: ServerContext): Promise<GatherState | undefined> {
  const state = context.mcpReq.requestState<GatherState | string>();
  if (typeof state !== 'string') return state;
  try {
    return await codec.verify(state, context);
  } catch {
    throw invalidParams('Invalid or expired requestState');
  }
}

/**
 * How one `tools/call` of the SDK path talks back (a {@link CallInteraction}):
 * - 2026-07-28: Multi Round-Trip Requests. A missing answer ends the call with `resultType: "input_required"`, one
 *   question per round under keys `<prefix>-<n>`, and a signed `requestState` carrying the earlier answers; the
 *   client's retry replays the phase with them (SEP-2322, SEP-2663 E16). An invalid answer is asked again.
 * - 2025 sessions: a direct `elicitation/create` request to the client on this call's stream.
 * `withInput` throws TasksError `-32021` when the caller did not declare elicitation, and `-32602` for a
 * `requestState` minted for another tool or other arguments (or forged, altered, expired, foreign).
 */
export function callInteraction(
  caller: Caller,
  context: ServerContext,
  codec: RequestStateCodec<GatherState>,
  call: { tool: string; args: unknown },
): CallInteraction {
  let derivedKey: string | undefined;
  return {
    signal: context.mcpReq.signal,
    withInput: async (prefix, phase) => {
      if (caller.negotiation === 'per-session') return sessionRound(caller, context, phase);
      const round = await requestRounds(caller, context, codec, { ...call, prefix }, phase);
      if ('done' in round && round.nonce !== undefined) derivedKey = `mrtr:${digestOf({ tool: call.tool, nonce: round.nonce })}`;
      return 'done' in round ? { done: round.done } : round;
    },
    derivedIdempotencyKey: () => derivedKey,
  };
}

/** A 2025 session asks the client directly, on the stream of this call, and waits for each answer. */
async function sessionRound<T>(caller: Caller, context: ServerContext, phase: (ask: CallAsk) => Promise<T>): Promise<{ done: T }> {
  return {
    done: await phase(async (requests) => {
      const answers: ElicitResult[] = [];
      for (const request of requests) {
        assertElicitationDeclared(caller.clientCapabilities, request);
        answers.push((await context.mcpReq.elicitInput(toWireRequest(request).params as never)) as ElicitResult);
      }
      return { answers };
    }),
  };
}

/** One MRTR round of a 2026-07-28 call: the phase replayed with the answers so far, or the next `input_required`. */
async function requestRounds<T>(
  caller: Caller,
  context: ServerContext,
  codec: RequestStateCodec<GatherState>,
  call: { tool: string; args: unknown; prefix: string },
  phase: (ask: CallAsk) => Promise<T>,
): Promise<{ done: T; nonce: string | undefined } | { inputRequired: JsonObject }> {
  const argsDigest = digestOf(call.args);
  const state = await verifiedState(codec, context);
  if (state !== undefined && (typeof state !== 'object' || state.tool !== call.tool || state.argsDigest !== argsDigest)) {
    throw invalidParams('requestState does not belong to this tool call');
  }
  const answers: Record<string, JsonObject> = { ...(state?.answers ?? {}) };
  const offered = context.mcpReq.inputResponses ?? {};
  let counter = 0;
  const missing: JsonObject = {};
  let done: T | undefined;
  try {
    done = await phase(async (requests, options) => {
      // A round ends the call; a tool that waits in place would be run again to reach its question (issue 28).
      if (options?.inPlace) throw inPlaceInputRefused(call.tool, declaresTaskSupport(caller));
      const results = requests.map((request) => {
        const key = `${call.prefix}-${(counter += 1)}`;
        const wire = toWireRequest(request);
        const answer = answers[key] ?? offered[key];
        if (answer !== undefined && checkAnswer(wire, answer).ok) {
          answers[key] = answer as JsonObject;
          return answer as unknown as ElicitResult;
        }
        assertElicitationDeclared(caller.clientCapabilities, request);
        missing[key] = wire;
        return undefined;
      });
      return Object.keys(missing).length > 0 ? { parked: true } : { answers: results as ElicitResult[] };
    });
  } catch (error) {
    // Once an answer is missing the phase was told to stop; what it threw then is not the call's outcome.
    if (Object.keys(missing).length === 0) throw error;
  }
  if (Object.keys(missing).length === 0) return { done: done as T, nonce: state?.nonce };
  const requestState = await codec.mint({ tool: call.tool, argsDigest, answers, nonce: state?.nonce ?? randomUUID() }, context);
  return { inputRequired: { resultType: 'input_required', inputRequests: missing, requestState } as unknown as JsonObject };
}
