/**
 * An upstream's `elicitation/create` as a question of ours (issue 28): the upstream asks while one of our calls is
 * in flight on its connection, the call's tool asks our requestor through `ctx.elicit` — in a task, the task goes
 * `input_required` (both generations) while the run waits in place with the upstream call open (the tools have
 * `elicits: 'in-place'`) — and the answer goes back to the upstream as its `ElicitResult`.
 *
 * Which call asked: an `elicitation/create` names no request of ours (stdio carries no link at all, and the SDK
 * client hands its handler none for HTTP streams or 2026-07-28 embedded requests), so it is given to the one call in
 * flight on that connection. With several in flight it cannot be placed, and the upstream gets an error instead of
 * a guess: a question shown to the wrong caller would leak one caller's work to another.
 */
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/client';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';

import type { JsonObject } from '../core/task.js';
import type { ElicitRequest } from '../core/tool.js';

/** Longest upstream question text passed on (characters); the user-facing copy carries the upstream's name too. */
const MESSAGE_MAX = 2000;

/** Compiles a `requestedSchema` as the answer check does (the SDK's Ajv provider), to refuse one it cannot. */
const validators = new AjvJsonSchemaValidator();

/**
 * The question of an upstream's `elicitation/create` params, with the upstream's name before its message
 * (`everything: Please provide …`) so the user sees whose question it is. Form mode keeps `requestedSchema` as
 * given (our answer path checks answers against it); URL mode keeps `url` and `elicitationId`.
 * @throws ProtocolError `-32602` for params that are neither (no message, no schema, a URL that is not http(s)), and
 *   for a schema no answer could be checked against (one that does not compile: an unknown `type`, a `$ref` to
 *   elsewhere): asked anyway, checking any accepted answer would throw and the question could never be answered.
 */
export function upstreamQuestion(upstream: string, params: unknown): ElicitRequest {
  const p = (typeof params === 'object' && params !== null ? params : {}) as Record<string, unknown>;
  if (typeof p.message !== 'string') throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'elicitation/create needs a message');
  const message = `${upstream}: ${p.message.slice(0, MESSAGE_MAX)}`;
  if (p.mode === 'url') {
    if (typeof p.url !== 'string' || !/^https?:\/\//i.test(p.url) || typeof p.elicitationId !== 'string')
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'URL-mode elicitation/create needs an http(s) url and an elicitationId');
    return { mode: 'url', message, url: p.url, elicitationId: p.elicitationId };
  }
  const schema = p.requestedSchema;
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'form-mode elicitation/create needs a requestedSchema object');
  try {
    validators.getValidator(schema as never);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `form-mode elicitation/create: answers cannot be checked against its requestedSchema (${why})`);
  }
  return { mode: 'form', message, requestedSchema: schema as JsonObject };
}

/** The refusal sent to an upstream whose question cannot be placed (see the module comment). */
export function unplacedQuestion(inFlight: number): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.InternalError,
    inFlight === 0
      ? 'mcp-tasks gateway: elicitation/create outside any tools/call; only questions asked during a call are forwarded'
      : `mcp-tasks gateway: ${inFlight} calls are in flight on this connection and elicitation/create names none of them, so it cannot be forwarded`,
  );
}
