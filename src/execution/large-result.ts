import { RESULT_CHUNK_BYTES, type TaskResults } from '../core/ports/results.js';
import type { JsonObject, JsonValue } from '../core/task.js';
import type { SettledRun } from '../core/tool-outcome.js';
import { ErrorCode } from '../protocol/constants.js';
import { LARGE_RESULT_META_KEY, type LargeResultMeta, RESULT_RESOURCE_MIME_TYPE, resultResourceUri } from '../protocol/result-uri.js';

/** The result-size limits of `TasksServerLimits` (bytes of JSON text, UTF-8). */
export interface ResultSizeLimits {
  maxResultBytes: number;
  maxStoredResultBytes: number;
}

/** Most bytes of the first part shown inline (a quarter of `maxResultBytes` when that is smaller). */
const PREVIEW_BYTES = 64 * 1024;

/**
 * Keep a settled run's tool result within the result-size limits (issue 10 §2), before it is stored:
 * - up to `maxResultBytes` of JSON: unchanged (stored inline, as always);
 * - up to `maxStoredResultBytes`: the JSON text is stored in chunks of {@link RESULT_CHUNK_BYTES}
 *   (`TaskResults.putResultChunks`, deleted with the task) and the result becomes bounded content: the first part of
 *   its text, a note, and a `resource_link` to `mcp-tasks://tasks/{taskId}/result` (`size` = bytes of JSON) that
 *   `resources/read` serves to the owner. `structuredContent` is left out of the bounded result (it is part of the
 *   whole one); `isError` is kept, so the task's status is the same either way;
 * - larger: the task fails with `-32603`, `data: {reason: "result_too_large", limit, actual}` (nothing stored).
 * Errors are never resized (a JSON-RPC error is small by construction).
 * The chunks are written only while `leaseOwner` holds the task's lease (see `TaskResults.putResultChunks`); when
 * it does not (the task was cancelled, deleted or taken over), `undefined`: the run's outcome is discarded — its
 * transition, under the same condition, would be refused — and never stored whole in place of the chunks.
 * @throws {StoreError} from `putResultChunks` (the run's write then fails as its transition would).
 */
export async function boundLargeResult(
  store: TaskResults,
  taskId: string,
  settled: SettledRun,
  limits: ResultSizeLimits,
  leaseOwner?: string,
): Promise<SettledRun | undefined> {
  if (settled.outcome.kind !== 'result') return settled;
  const text = JSON.stringify(settled.outcome.result);
  // Cheap first: a string of n UTF-16 units has at most 3n bytes of UTF-8.
  if (text.length * 3 <= limits.maxResultBytes) return settled;
  const bytes = Buffer.byteLength(text);
  if (bytes <= limits.maxResultBytes) return settled;
  if (bytes > limits.maxStoredResultBytes) {
    const message = `Tool result is ${bytes} bytes of JSON, more than maxStoredResultBytes (${limits.maxStoredResultBytes} bytes, --max-stored-result-bytes)`;
    return {
      status: 'failed',
      outcome: {
        kind: 'error',
        error: { code: ErrorCode.InternalError, message, data: { reason: 'result_too_large', limit: limits.maxStoredResultBytes, actual: bytes } },
      },
      statusMessage: message,
    };
  }
  const data = Buffer.from(text);
  const chunks: Uint8Array[] = [];
  for (let offset = 0; offset < data.length; offset += RESULT_CHUNK_BYTES) chunks.push(data.subarray(offset, offset + RESULT_CHUNK_BYTES));
  // A task deleted meanwhile (or whose lease another process holds now, or ended) stores nothing, and the run's
  // outcome is discarded. Never the whole result in its place: it would go inline past maxResultBytes.
  if (!(await store.putResultChunks(taskId, chunks, leaseOwner))) return undefined;
  return { ...settled, outcome: { kind: 'result', result: boundedResult(settled.outcome.result, taskId, bytes, chunks.length, limits.maxResultBytes) } };
}

/** The inline stand-in of a large result: first part, note, link. */
function boundedResult(result: JsonObject, taskId: string, bytes: number, chunks: number, maxResultBytes: number): JsonObject {
  const uri = resultResourceUri(taskId);
  const budget = Math.min(PREVIEW_BYTES, Math.floor(maxResultBytes / 4));
  const preview = utf8Prefix(firstTexts(result, budget) ?? JSON.stringify(result).slice(0, budget), budget);
  const note = `[Result truncated: the whole result is ${bytes} bytes of JSON (more than maxResultBytes, ${maxResultBytes}); read it with resources/read of ${uri} — owner only, until the task expires.]`;
  const bounded: JsonObject = {
    content: [
      { type: 'text', text: preview },
      { type: 'text', text: note },
      {
        type: 'resource_link',
        uri,
        name: `result of task ${taskId}`,
        mimeType: RESULT_RESOURCE_MIME_TYPE,
        size: bytes,
        description: 'The whole CallToolResult of this task as JSON',
      },
    ],
    _meta: { [LARGE_RESULT_META_KEY]: { uri, bytes, chunks } satisfies LargeResultMeta },
  };
  if (result.isError === true) bounded.isError = true;
  return bounded;
}

function isTextBlock(block: JsonValue): block is { type: 'text'; text: string } {
  return typeof block === 'object' && block !== null && !Array.isArray(block) && block.type === 'text' && typeof block.text === 'string';
}

/** The result's text blocks joined until `chars` characters are reached (`undefined` without text blocks). */
function firstTexts(result: JsonObject, chars: number): string | undefined {
  if (!Array.isArray(result.content)) return undefined;
  let joined: string | undefined;
  for (const block of result.content) {
    if (!isTextBlock(block)) continue;
    joined = joined === undefined ? block.text.slice(0, chars) : `${joined}\n${block.text.slice(0, chars)}`;
    if (joined.length >= chars) break;
  }
  return joined;
}

/** The longest prefix of `text` within `maxBytes` of UTF-8, never splitting a character. */
function utf8Prefix(text: string, maxBytes: number): string {
  // maxBytes characters hold at least maxBytes bytes: encode no more than that.
  const head = text.slice(0, maxBytes);
  if (Buffer.byteLength(head) <= maxBytes) return head;
  const cut = Buffer.from(head).subarray(0, maxBytes).toString('utf8');
  // A character cut in half decodes to U+FFFD at the end: drop it.
  return cut.endsWith('\uFFFD') ? cut.slice(0, -1) : cut;
}
