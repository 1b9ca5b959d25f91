import type { Server, ServerContext } from '@modelcontextprotocol/server';

import { resultReadTooLarge, TasksError } from '../core/errors.js';
import type { JsonObject } from '../core/task.js';
import { ErrorCode } from '../protocol/constants.js';
import type { Caller, Negotiation } from '../service/caller.js';
import type { ResultResource } from '../service/tasks/result-reads.js';
import type { HandlerDeps } from './deps.js';
import { guarded } from './guard.js';

/**
 * The `resources` methods of an SDK server instance (issue 10 §2): `resources/read` of a large task result through
 * the service door (owner and `tasks:read` re-checked; `-32602` "Resource not found" otherwise), and empty
 * `resources/list` / `resources/templates/list` — result resources are reachable only through their
 * `resource_link`, which the spec allows (a link need not be listed).
 */
export function registerResultResourceHandlers(
  server: Server,
  deps: HandlerDeps,
  negotiation: Negotiation,
  callerFor: (context: ServerContext) => Caller,
): void {
  server.setRequestHandler('resources/read', (request, context) =>
    guarded(deps.logger, 'resources/read', async () => {
      const resource = await deps.service.tasks.readResultResource(callerFor(context), request.params.uri);
      return (await bufferedResourceResult(negotiation, resource)) as never;
    }),
  );
  server.setRequestHandler('resources/list', () => Promise.resolve({ resources: [] }) as never);
  server.setRequestHandler('resources/templates/list', () => Promise.resolve({ resourceTemplates: [] }) as never);
}

/**
 * The `ReadResourceResult` fields after `contents`: on 2026-07-28 (`per-request`) a `CacheableResult` — the schema
 * requires `ttlMs`, `cacheScope` and `resultType` (the brief names the first two; we follow the schema and send all
 * three) — with `cacheScope: "private"`, since the content belongs to one owner; nothing in 2025 sessions, whose
 * `ReadResourceResult` has no such fields.
 */
export function resourceResultFields(negotiation: Negotiation, resource: ResultResource): JsonObject {
  return negotiation === 'per-request' ? { ttlMs: resource.ttlMs, cacheScope: 'private', resultType: 'complete' } : {};
}

/**
 * Most bytes of a whole large result answered in one message (1 MiB): what the SDK path may assemble per request
 * (issue 23 §5). The SDK encodes one result object per answer, so a buffered read peaks at several times its size
 * (about 6× at 64 MiB, `npm run bench:results`); at this bound that is a few MiB per request, whatever the result.
 * Chunk resources (≤ 256 KiB each) are always within it.
 */
export const MAX_BUFFERED_RESULT_READ_BYTES = 1024 * 1024;

/**
 * The whole `ReadResourceResult` of a large-result resource, for the SDK path (stdio, and HTTP requests the fast
 * path does not take) and for chunk resources on any path: one answer per message, held once, bounded by
 * {@link MAX_BUFFERED_RESULT_READ_BYTES}. A chunk is sent as a base64 `blob` (its bytes may end inside a character);
 * the whole result as one JSON `text`. The HTTP fast path (`http/result-stream.ts`) streams a whole result instead.
 * @throws TasksError `-31004` (`data.reason: "read_in_chunks"`) for a whole result above the bound: nothing is read,
 *   and the error names the chunk resources and the streamed way to read it.
 * @throws TasksError `-32603` when the task was deleted while its chunks were read.
 */
export async function bufferedResourceResult(negotiation: Negotiation, resource: ResultResource): Promise<JsonObject> {
  if (resource.chunk === undefined && resource.bytes > MAX_BUFFERED_RESULT_READ_BYTES) {
    throw resultReadTooLarge(resource.taskId, resource.bytes, resource.totalChunks, MAX_BUFFERED_RESULT_READ_BYTES);
  }
  const parts: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of resource.chunks()) {
    bytes += chunk.byteLength;
    parts.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }
  if (bytes !== resource.bytes) throw incompleteResult();
  const data = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, bytes);
  const content: JsonObject = resource.chunk === undefined ? { text: data.toString('utf8') } : { blob: data.toString('base64') };
  return { contents: [{ uri: resource.uri, mimeType: resource.mimeType, ...content }], ...resourceResultFields(negotiation, resource) };
}

/** The task (and its chunks) went away while the result was read: answered as an error, never as partial content. */
export function incompleteResult(): TasksError {
  return new TasksError(ErrorCode.InternalError, 'Internal error: the result was deleted while it was read');
}
