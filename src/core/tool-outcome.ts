import { ErrorCode, INPUT_REFUSED_META_KEY } from '../protocol/constants.js';
import { toModelLine } from '../protocol/model-text.js';
import { TasksError } from './errors.js';
import type { ExecutionOutcome } from './executor.js';
import { depthUpTo } from './json-depth.js';
import { redactSecrets } from './redaction.js';
import type { JsonObject, JsonRpcErrorObject, JsonValue, TaskGeneration, TaskOutcome, TaskStatus } from './task.js';
import type { AnyToolDefinition, ToolResult } from './tool.js';

/** A tool run turned into what the store records. */
export interface SettledRun {
  status: Extract<TaskStatus, 'completed' | 'failed'>;
  outcome: TaskOutcome;
  /** Diagnostic statusMessage for failures (2025-11-25 R47, SEP-2663 E13); `undefined` keeps the current one. */
  statusMessage?: string;
}

/**
 * The one sanitiser of model-facing short text (issue 23 §3): every `statusMessage`, immediate response and error
 * `message` the server builds from tool text goes through it before it is stored or sent. Secret-like values are
 * redacted, then the text is made to fit the rule of `protocol/model-text.ts` (one line; no Cc, Cf, Zl, Zp or
 * invisible characters; compatibility forms folded; role markers such as `SYSTEM:` or `<|im_start|>` neutralised
 * anywhere in the line; at most 512 UTF-16 code units). Tool *results* never go through it: they are data.
 */
export function sanitizeModelText(text: string): string {
  return toModelLine(text, { rewrite: redactSecrets });
}

function firstText(result: ToolResult): string | undefined {
  const block = result.content.find((item) => item.type === 'text' && typeof item.text === 'string');
  return block ? String(block.text) : undefined;
}

/**
 * Deepest nesting of arrays and objects a tool's outcome may have. A result leaves a tool's thread by structured
 * clone, whose serializer recurses: about 2,000 levels overflow the main thread's stack, and piscina never answered a
 * run whose result could not be posted (the run held its slot for good). No MCP result needs a tenth of this.
 */
export const MAX_RESULT_DEPTH = 1_000;

/**
 * Whether `value` nests arrays and objects more than `limit` levels deep (a cycle, or a graph too large to walk,
 * counts as deeper than any limit; see `json-depth.ts`).
 */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  return depthUpTo(value, limit) > limit;
}

/** The one-line message of a tool outcome nested past {@link MAX_RESULT_DEPTH} (a model may read it). */
export function tooDeepMessage(toolName: string, what: 'result' | 'error' = 'result'): string {
  const subject = what === 'result' ? 'returned a result' : 'threw an error whose data is';
  return `Tool ${toolName} ${subject} nested more than ${MAX_RESULT_DEPTH} levels deep (or circular), which cannot be stored; only this run failed`;
}

/**
 * What a tool's context call is told when what it hands over (a step's value, owner state, a question) nests past
 * {@link MAX_RESULT_DEPTH}: it could not be stored, nor leave a tool's thread.
 */
export function tooDeepArgument(method: string): string {
  return `ctx.${CONTEXT_CALLS[method] ?? method} was given a value nested more than ${MAX_RESULT_DEPTH} levels deep (or circular), which cannot be stored`;
}

/** The `ctx` call behind each host method, for {@link tooDeepArgument}. */
const CONTEXT_CALLS: Record<string, string> = {
  putStep: 'step',
  getStep: 'step',
  putOwnerState: 'ownerState.put',
  getOwnerState: 'ownerState.get',
  elicit: 'elicit',
  openOperation: 'operation',
  settleOperation: 'operation',
};

/**
 * Check a tool's return value against the MCP shape and its `outputSchema`, and turn it into a `CallToolResult`.
 * @throws Error when the tool broke its contract (the caller maps it to `-32603`); `TasksError` `-32603` with
 *   {@link tooDeepMessage} when it nests past {@link MAX_RESULT_DEPTH}.
 */
export function toCallToolResult(tool: AnyToolDefinition, result: ToolResult): JsonObject {
  if (!result || !Array.isArray(result.content)) {
    throw new Error(`tool ${tool.name} returned no content array`);
  }
  if (nestedDeeperThan(result, MAX_RESULT_DEPTH)) throw new TasksError(ErrorCode.InternalError, tooDeepMessage(tool.name));
  if (tool.outputSchema && !result.isError) {
    if (result.structuredContent === undefined) throw new Error(`tool ${tool.name} has an outputSchema but returned no structuredContent`);
    const parsed = tool.outputSchema.safeParse(result.structuredContent);
    if (!parsed.success) throw new Error(`tool ${tool.name} returned structuredContent that fails its outputSchema: ${parsed.error.message}`);
  }
  const body: JsonObject = { content: result.content as unknown as JsonValue[] };
  if (result.structuredContent !== undefined) body.structuredContent = result.structuredContent;
  if (result.isError) body.isError = true;
  // Stored and sent as JSON: a value JSON cannot carry (BigInt, a cycle) is the tool's bug, reported now rather
  // than as a failed store write that would look like a crash.
  return JSON.parse(JSON.stringify(body)) as JsonObject;
}

/** A tool result carrying `isError: true` with one text block (SEP-1303 input errors, v1 pre-2025-11-25 refusals). */
export function toolErrorResult(message: string): JsonObject {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** The `isError` answer for arguments refused before the tool ran, marked so (`_meta["dev.mcp-tasks/input-refused"]`). */
export function inputErrorResult(message: string): JsonObject {
  return { ...toolErrorResult(message), _meta: { [INPUT_REFUSED_META_KEY]: true } };
}

/**
 * Map a tool's return value to the stored outcome. `isError: true` fails a v1 task (2025-11-25 R47) but completes
 * a v2 task (SEP-2663 E13); either way `tasks/result` / `tasks/get` return that very result.
 */
export function settleResult(generation: TaskGeneration, result: JsonObject): SettledRun {
  const isError = result.isError === true;
  if (isError && generation === 'v1') {
    const text = firstText(result as unknown as ToolResult);
    return { status: 'failed', outcome: { kind: 'result', result }, statusMessage: sanitizeModelText(text ?? 'Tool reported an error') };
  }
  return { status: 'completed', outcome: { kind: 'result', result } };
}

/**
 * Map how a task's run ended (an executor's outcome, parked and aborted runs aside: they record nothing) to what
 * the store records. A coded error keeps its code and message, secrets redacted; a tool input error becomes an
 * `isError` tool result; a crash is `-32603` "Internal error in tool <name>" (the details went to the log).
 */
export function settleExecution(generation: TaskGeneration, outcome: Exclude<ExecutionOutcome, { kind: 'parked' | 'aborted' }>): SettledRun {
  switch (outcome.kind) {
    case 'returned':
      return settleResult(generation, outcome.result);
    case 'input_error':
      return settleResult(generation, toolErrorResult(outcome.message));
    case 'protocol_error': {
      // The tool chose this message, and it may quote what it was given (a log line, a file name): it goes into the
      // store and to the client, where a model reads it, so it is model-facing text like the statusMessage.
      const message = sanitizeModelText(outcome.error.message);
      return { status: 'failed', outcome: { kind: 'error', error: { ...outcome.error, message } }, statusMessage: message };
    }
    case 'crashed':
      return {
        status: 'failed',
        outcome: { kind: 'error', error: { code: ErrorCode.InternalError, message: outcome.message } },
        statusMessage: outcome.message,
      };
  }
}

/**
 * The tool's `immediateResponse` for `args` (already parsed by its `inputSchema`) made fit for statusMessage and
 * the model (see {@link sanitizeModelText});
 * `undefined` when the tool has none, it throws, or nothing is left.
 */
export function immediateResponseOf(tool: AnyToolDefinition, args: unknown): string | undefined {
  if (!tool.immediateResponse) return undefined;
  let text: unknown;
  try {
    text = tool.immediateResponse(args);
  } catch {
    return undefined;
  }
  if (typeof text !== 'string') return undefined;
  const clean = sanitizeModelText(text);
  return clean.length > 0 ? clean : undefined;
}

/** The JSON body a task's outcome stores: the error object of an `error` outcome, else the result. */
export function outcomeBodyOf(outcome: TaskOutcome): JsonObject | JsonRpcErrorObject {
  return outcome.kind === 'error' ? outcome.error : outcome.result;
}
