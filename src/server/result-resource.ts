import { StringDecoder } from 'node:string_decoder';
import type { Server, ServerContext } from '@modelcontextprotocol/server';
import { TasksError } from '../core/errors.js';
import type { JsonObject } from '../core/task.js';
import { ErrorCode } from '../protocol/constants.js';
import type { Caller, Negotiation } from '../service/caller.js';
import type { ResultResource } from '../service/result-resource.js';
import type { HandlerDeps } from './deps.js';
import { guarded } from './guard.js';

/**
 * The `resources` methods of an SDK server instance (issue 10 §2): `resources/read` of a large task result through
 * the service door (owner and `tasks:read` re-checked; `-32602` "Resource not found" otherwise), and empty
 * `resources/list` / `resources/templates/list` — result resources are reachable only through their
 * `resource_link`, which the spec allows (a link need not be listed).
 */
export function registerResultResourceHandlers(server: Server, deps: HandlerDeps, negotiation: Negotiation, callerFor: (context: ServerContext) => Caller): void {
  server.setRequestHandler('resources/read', (request, context) =>
    guarded(deps.logger, 'resources/read', async () => {
      const resource = await deps.service.readResultResource(callerFor(context), request.params.uri);
      return (await oneBufferedReadAtATime(() => bufferedResourceResult(negotiation, resource))) as never;
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

let bufferedReads: Promise<unknown> = Promise.resolve();

/**
 * Assemble buffered reads one after another in this process, so concurrent ones do not each hold a whole result
 * while reading chunks. This bounds the assembly only: the SDK's encoding of each answer follows, and at 64 MiB a
 * buffered read peaks at several times the result's size (`npm run bench:results`) — the reason HTTP reads are
 * streamed on the fast path.
 */
function oneBufferedReadAtATime<T>(read: () => Promise<T>): Promise<T> {
  const turn = bufferedReads.then(read, read);
  bufferedReads = turn.catch(() => undefined);
  return turn;
}

/**
 * The whole `ReadResourceResult` of a large result, for the SDK path (stdio, and HTTP requests the fast path does
 * not take): the SDK encodes one result object per answer, so this path holds the result's text once (bounded by
 * `maxStoredResultBytes`). The HTTP fast path (`http/result-stream.ts`) streams it chunk by chunk instead.
 * @throws TasksError `-32603` when the task was deleted while its chunks were read.
 */
export async function bufferedResourceResult(negotiation: Negotiation, resource: ResultResource): Promise<JsonObject> {
  const decoder = new StringDecoder('utf8');
  const parts: string[] = [];
  let bytes = 0;
  for await (const chunk of resource.chunks()) {
    bytes += chunk.byteLength;
    parts.push(decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)));
  }
  parts.push(decoder.end());
  if (bytes !== resource.bytes) throw incompleteResult();
  return { contents: [{ uri: resource.uri, mimeType: resource.mimeType, text: parts.join('') }], ...resourceResultFields(negotiation, resource) };
}

/** The task (and its chunks) went away while the result was read: answered as an error, never as partial content. */
export function incompleteResult(): TasksError {
  return new TasksError(ErrorCode.InternalError, 'Internal error: the result was deleted while it was read');
}
