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

import { redactSecrets } from '../core/redaction.js';
import type { JsonObject } from '../core/task.js';
import type { ElicitRequest } from '../core/tool.js';
import { toModelLine } from '../protocol/model-text.js';

/** Longest upstream question text passed on (characters); the user-facing copy carries the upstream's name too. */
const MESSAGE_MAX = 2000;

/** Largest `requestedSchema` taken from an upstream (bytes of JSON): it is stored and sent with every `tasks/get`. */
const SCHEMA_MAX_BYTES = 64 * 1024;

/** Longest `title` or `description` inside a `requestedSchema` passed on (characters). */
const SCHEMA_TEXT_MAX = 512;

/** Compiles a `requestedSchema` as the answer check does (the SDK's Ajv provider), to refuse one it cannot. */
const validators = new AjvJsonSchemaValidator();

/** Keywords whose value is one subschema, or a list of them, walked by {@link cleanSchema}. */
const SUBSCHEMA = ['items', 'not', 'additionalProperties', 'contains', 'if', 'then', 'else'] as const;
const SUBSCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'] as const;

/**
 * An upstream's `requestedSchema` as we pass it on:
 * - `pattern` and `patternProperties` are dropped: MCP's elicitation schema has no such keyword, and the API would run
 *   an upstream's regular expression as a backtracking RegExp on its event loop for every answer it checks (one
 *   pattern such as `^(a+)+$` against 27 characters blocks it for seconds). The upstream still checks its own.
 * - every `title` and `description` is one sanitised line (a user and a model read them), at most
 *   {@link SCHEMA_TEXT_MAX} characters. Property names are left as they are (they are the answer's keys).
 */
function cleanSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(cleanSchema);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'pattern' || key === 'patternProperties') continue;
    if ((key === 'title' || key === 'description') && typeof value === 'string')
      out[key] = toModelLine(value, { rewrite: redactSecrets, maxChars: SCHEMA_TEXT_MAX });
    else if (key === 'properties' && typeof value === 'object' && value !== null && !Array.isArray(value))
      out[key] = Object.fromEntries(Object.entries(value).map(([name, property]) => [name, cleanSchema(property)]));
    else if ((SUBSCHEMA as readonly string[]).includes(key) || (SUBSCHEMA_LISTS as readonly string[]).includes(key)) out[key] = cleanSchema(value);
    else out[key] = value;
  }
  return out;
}

/**
 * The question of an upstream's `elicitation/create` params, with the upstream's name before its message
 * (`everything: Please provide …`) so the user sees whose question it is, as one sanitised line. Form mode passes
 * `requestedSchema` on as {@link cleanSchema} leaves it (our answer path checks answers against it); URL mode keeps
 * `url` and `elicitationId`.
 * @throws ProtocolError `-32602` for params that are neither (no message, no schema, a URL that is not http(s)), a
 *   schema over {@link SCHEMA_MAX_BYTES}, and
 *   for a schema no answer could be checked against (one that does not compile: an unknown `type`, a `$ref` to
 *   elsewhere): asked anyway, checking any accepted answer would throw and the question could never be answered.
 */
export function upstreamQuestion(upstream: string, params: unknown): ElicitRequest {
  const p = (typeof params === 'object' && params !== null ? params : {}) as Record<string, unknown>;
  if (typeof p.message !== 'string') throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'elicitation/create needs a message');
  // Model-facing like a statusMessage: one sanitised line (no role markers, no bidi or control characters, secrets
  // redacted), cut on a character boundary.
  const message = toModelLine(`${upstream}: ${p.message}`, { rewrite: redactSecrets, maxChars: MESSAGE_MAX });
  if (p.mode === 'url') {
    if (typeof p.url !== 'string' || !/^https?:\/\//i.test(p.url) || typeof p.elicitationId !== 'string')
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'URL-mode elicitation/create needs an http(s) url and an elicitationId');
    return { mode: 'url', message, url: p.url, elicitationId: p.elicitationId };
  }
  const given = p.requestedSchema;
  if (typeof given !== 'object' || given === null || Array.isArray(given))
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'form-mode elicitation/create needs a requestedSchema object');
  const bytes = Buffer.byteLength(JSON.stringify(given));
  if (bytes > SCHEMA_MAX_BYTES)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `form-mode elicitation/create: its requestedSchema is ${bytes} bytes, more than ${SCHEMA_MAX_BYTES}`,
    );
  const schema = cleanSchema(given) as JsonObject;
  try {
    validators.getValidator(schema as never);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `form-mode elicitation/create: answers cannot be checked against its requestedSchema (${why})`);
  }
  return { mode: 'form', message, requestedSchema: schema };
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
