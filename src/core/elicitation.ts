/**
 * Rules of a task's questions shared by the service (answers, MRTR) and the worker (parking a run): how input keys
 * are minted, how a question looks on the wire, and what the creating request must have declared.
 */
import { CLIENT_CAPABILITIES_META_KEY, ErrorCode } from '../protocol/constants.js';
import { TasksError } from './errors.js';
import type { InputRequestRecord, JsonObject } from './task.js';
import type { ElicitRequest } from './tool.js';
import { sanitizeModelText } from './tool-outcome.js';

/**
 * Input-request keys encode the call order of the question: `input-<n>` the first time question n is asked,
 * `input-<n>.<k>` when it is asked again (after an answer that failed its schema). Keys are never reused (E23).
 */
const KEY_PATTERN = /^input-(\d+)(?:\.(\d+))?$/;

/**
 * Most distinct `inputRequests` keys over one task's whole life (re-asks included): Claude Code, the most widely
 * used 2026-07-28 tasks host, ignores every key after the 16th of a task. A tool asking for more fails the task
 * with `data.reason: "input_limit"` instead of stalling it for such a host.
 */
export const MAX_INPUT_KEYS_PER_TASK = 16;

/**
 * Most times one question is asked (the first time included): an answer failing its `requestedSchema` is asked
 * again under a new key up to this, and the last failing answer fails the task with `data.reason: "input_invalid"`.
 */
export const MAX_ASKS_PER_QUESTION = 3;

/** Longest input key a host must accept (Claude Code's bound); every key minted here is far shorter (asserted in tests). */
export const MAX_INPUT_KEY_LENGTH = 512;

/** The call-order number of a task input key, or `undefined` for a key this runtime did not mint. */
export function ordinalOfKey(key: string): number | undefined {
  const match = KEY_PATTERN.exec(key);
  return match ? Number(match[1]) : undefined;
}

/** The next key for question `ordinal`, given the keys it already had. */
export function nextKey(ordinal: number, previous: readonly InputRequestRecord[]): string {
  return previous.length === 0 ? `input-${ordinal}` : `input-${ordinal}.${previous.length + 1}`;
}

/** The `{method, params}` of an `inputRequests` entry (and of a v1 `elicitation/create`) for a question. */
export function toWireRequest(request: ElicitRequest): JsonObject {
  const params: JsonObject =
    request.mode === 'url'
      ? { mode: 'url', message: request.message, url: request.url, elicitationId: request.elicitationId }
      : { mode: 'form', message: request.message, requestedSchema: request.requestedSchema };
  return { method: 'elicitation/create', params };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Check the creating request declared what a question needs (SEP-2663 E28, 2025-11-25 client capabilities):
 * form mode needs `elicitation` (an empty object means form) or `elicitation.form`; URL mode `elicitation.url`.
 * @throws TasksError `-32021` with `data.requiredCapabilities` naming what is missing.
 */
export function assertElicitationDeclared(clientCapabilities: JsonObject, request: ElicitRequest): void {
  const elicitation = clientCapabilities.elicitation;
  const mode = request.mode === 'url' ? 'url' : 'form';
  const declared =
    isObject(elicitation) &&
    (mode === 'url' ? isObject(elicitation.url) : isObject(elicitation.form) || (elicitation.form === undefined && elicitation.url === undefined));
  if (!declared) {
    const message =
      `Missing required client capability: this tool asks the user for input (elicitation, ${mode} mode), so the client must declare ` +
      `elicitation.${mode} in its capabilities (initialize, or _meta "${CLIENT_CAPABILITIES_META_KEY}" of an MCP 2026-07-28 request). ` +
      'Alternatives: a client that can answer questions, or a tool that needs no input.';
    throw new TasksError(ErrorCode.MissingRequiredClientCapability, message, {
      requiredCapabilities: { elicitation: { [mode]: {} } },
    });
  }
}

/** The statusMessage of a task waiting on `request` (an `inputRequests` entry). */
export function waitingMessage(request: JsonObject): string {
  const message = (request.params as JsonObject | undefined)?.message;
  return sanitizeModelText(`Waiting for input: ${typeof message === 'string' ? message : String(request.method)}`);
}
