import { randomUUID } from 'node:crypto';
import type { FetchLike } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY, TASKS_EXTENSION_ID, V2_PROTOCOL_VERSION } from '../protocol/constants.js';
import type { JsonValue } from '../protocol/types.js';
import { neverDelivered, rootCause } from './error-mapping.js';
import { TasksConnectionError, TasksProtocolError, ToolCallOutcomeUnknownError } from './errors.js';
import type { CallToolResult, TaskSnapshot } from './types.js';
import { CallToolResultSchema, fromV2Task, toCallToolResult, V2CreateTaskResultSchema } from './wire-schemas.js';

/**
 * The first `tools/call` of a 2026-07-28 task, sent without the SDK client: `@modelcontextprotocol/client` 2.4.0
 * rejects a `resultType: "task"` answer with `UNSUPPORTED_RESULT_TYPE` — after the server has created the task.
 * One POST, never repeated: any doubt about delivery becomes a {@link ToolCallOutcomeUnknownError}.
 */

/** Everything the raw POST needs; mirrors what the SDK transport sends. */
export interface ModernCallOptions {
  url: URL;
  fetch: FetchLike;
  token?: string;
  headers?: Record<string, string>;
  clientInfo: { name: string; version: string };
  /** Declare the Tasks Extension in this request's `_meta` (only when the server advertises it, B10). */
  declareTasks: boolean;
  signal?: AbortSignal;
  /** How long to wait for the answer, in ms. */
  timeoutMs: number;
}

/** What a modern `tools/call` answered. */
export type ToolsCallAnswer = { kind: 'task'; task: TaskSnapshot } | { kind: 'result'; result: CallToolResult };

const SENTINEL_PREFIX = '=?base64?';
const SENTINEL_SUFFIX = '?=';

/** SEP-2243 header value: plain printable ASCII as is, anything else (or sentinel look-alikes) as `=?base64?…?=`. */
function encodeHeaderValue(value: string): string {
  const plain = value.length > 0 && value === value.trim() && /^[\t\x20-\x7e]*$/.test(value) && !(value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX));
  return plain ? value : `${SENTINEL_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${SENTINEL_SUFFIX}`;
}

const JsonRpcResponseSchema = z.looseObject({
  id: z.union([z.string(), z.number(), z.null()]),
  result: z.record(z.string(), z.unknown()).optional(),
  error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
});
type JsonRpcResponse = z.output<typeof JsonRpcResponseSchema>;

/**
 * Send `tools/call` once and interpret the answer.
 * @throws TasksProtocolError for a JSON-RPC error answer (the call did not run), an invalid answer, or an
 *   `input_required` (MRTR) answer, which this client does not fulfil.
 * @throws TasksConnectionError when the request certainly never arrived (refused, unresolvable, HTTP 4xx without a
 *   JSON-RPC body).
 * @throws ToolCallOutcomeUnknownError when it may have arrived but no usable answer came back.
 */
export async function callToolModern(name: string, args: Record<string, unknown>, options: ModernCallOptions): Promise<ToolsCallAnswer> {
  const id = `tools-call-${randomUUID()}`;
  const capabilities = options.declareTasks ? { extensions: { [TASKS_EXTENSION_ID]: {} } } : {};
  const body = {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: {
      name,
      arguments: args,
      _meta: { [PROTOCOL_VERSION_META_KEY]: V2_PROTOCOL_VERSION, [CLIENT_CAPABILITIES_META_KEY]: capabilities, [CLIENT_INFO_META_KEY]: options.clientInfo },
    },
  };
  // One Headers object, so a caller's `mcp-name` in any letter case cannot become a duplicate header (-32020).
  const headers = new Headers(options.headers);
  headers.set('content-type', 'application/json');
  headers.set('accept', 'application/json, text/event-stream');
  headers.set('mcp-protocol-version', V2_PROTOCOL_VERSION);
  headers.set('mcp-method', 'tools/call');
  headers.set('mcp-name', encodeHeaderValue(name));
  if (options.token !== undefined) headers.set('authorization', `Bearer ${options.token}`);
  const signals = [AbortSignal.timeout(options.timeoutMs), ...(options.signal ? [options.signal] : [])];
  const signal = AbortSignal.any(signals);
  const url = options.url.href;

  let response: Response;
  try {
    response = await options.fetch(options.url, { method: 'POST', headers, body: JSON.stringify(body), signal });
  } catch (error) {
    if (neverDelivered(error)) throw new TasksConnectionError(`cannot reach ${url}: ${rootCause(error)}; tools/call ${name} was not sent`, false, { cause: error });
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
    throw new TasksProtocolError(`tools/call ${name}: ${text} (JSON-RPC ${code})`, code, data as JsonValue | undefined);
  }
  if (!message?.result) {
    if (response.status >= 400 && response.status < 500) {
      throw new TasksConnectionError(`HTTP ${response.status} from ${url}; tools/call ${name} was refused before it ran`, false, { httpStatus: response.status });
    }
    throw outcomeUnknown(name, url, `HTTP ${response.status} without a JSON-RPC answer`, undefined, response.status);
  }
  return interpret(name, message.result, options.declareTasks);
}

function interpret(name: string, result: Record<string, unknown>, declaredTasks: boolean): ToolsCallAnswer {
  const resultType = result.resultType ?? 'complete'; // B5: an answer without resultType is "complete"
  if (resultType === 'task') {
    if (!declaredTasks) throw new TasksProtocolError(`tools/call ${name}: the server created a task although this request did not declare the Tasks Extension (E3)`);
    const parsed = V2CreateTaskResultSchema.safeParse(result);
    if (!parsed.success) throw new TasksProtocolError(`tools/call ${name}: invalid CreateTaskResult (${z.prettifyError(parsed.error)})`);
    return { kind: 'task', task: fromV2Task(parsed.data) };
  }
  if (resultType === 'complete') {
    const parsed = CallToolResultSchema.safeParse(result);
    if (!parsed.success) throw new TasksProtocolError(`tools/call ${name}: invalid CallToolResult (${z.prettifyError(parsed.error)})`);
    return { kind: 'result', result: toCallToolResult(parsed.data) };
  }
  if (resultType === 'input_required') {
    throw new TasksProtocolError(`tools/call ${name}: the server asked for input (elicitation/sampling) before starting; this client cannot answer input requests`);
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
  if (type.includes('text/event-stream')) return readSseAnswer(response, matches);
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

/** Read SSE events until the matching response; notifications on the stream (progress, logs) are skipped. */
async function readSseAnswer(response: Response, matches: (value: unknown) => value is JsonRpcResponse): Promise<JsonRpcResponse | undefined> {
  if (!response.body) return undefined;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return undefined;
      buffer += value;
      const lines = buffer.split(/\r\n|\r|\n/);
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        if (line === '') {
          const event = data.join('\n');
          data = [];
          if (event.length === 0) continue;
          try {
            const message: unknown = JSON.parse(event);
            if (matches(message)) return message;
          } catch {
            // A non-JSON event is not ours; keep reading.
          }
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
        }
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
