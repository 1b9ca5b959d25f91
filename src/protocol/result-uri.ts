/**
 * The resource a large task result is read from (issue 10 §2): `mcp-tasks://tasks/{taskId}/result`. A tool result
 * above `maxResultBytes` is stored in chunks; the task's own result then carries bounded content and a
 * `resource_link` to this URI, which `resources/read` serves to the task's owner only. Each stored chunk is a
 * `resources/read` of a slice of it is possible too (issue 23 §5): `mcp-tasks://tasks/{taskId}/result/chunks/{index}`
 * is bytes `[index × 64 KiB, (index + 1) × 64 KiB)` of the JSON text. A path that cannot stream the whole result in
 * bounded memory answers `-31004` naming these, and reads them one at a time.
 */

/** Scheme of the server's own resources. */
export const RESULT_RESOURCE_SCHEME = 'mcp-tasks:';

/** MIME type of the resource: the JSON text of the whole `CallToolResult`. */
export const RESULT_RESOURCE_MIME_TYPE = 'application/json';
/** MIME type of one chunk: bytes of that JSON text (a character may straddle two chunks), sent as a base64 `blob`. */
export const RESULT_CHUNK_MIME_TYPE = 'application/octet-stream';
/**
 * Bytes of one chunk resource (the last one may be shorter): small enough that its base64 and its JSON-RPC answer
 * stay below V8's large-object size, so serving many of them leaves only short-lived garbage.
 */
export const RESULT_READ_CHUNK_BYTES = 64 * 1024;

/** How many chunk resources a result of `bytes` bytes has. */
export function resultChunkCount(bytes: number): number {
  return Math.ceil(bytes / RESULT_READ_CHUNK_BYTES);
}

const RESULT_URI = /^mcp-tasks:\/\/tasks\/([A-Za-z0-9_-]{1,64})\/result(?:\/chunks\/(0|[1-9][0-9]{0,8}))?$/;

/** The URI of `taskId`'s large result. */
export function resultResourceUri(taskId: string): string {
  return `mcp-tasks://tasks/${taskId}/result`;
}

/** The URI of chunk `index` (0-based) of `taskId`'s large result. */
export function resultChunkUri(taskId: string, index: number): string {
  return `${resultResourceUri(taskId)}/chunks/${index}`;
}

/**
 * What a result URI names: the whole result of `taskId`, or one of its chunks (`chunk`: the index). `undefined` for
 * any other string (the caller answers it like an unknown task: `-32602`, nothing learnt). Only the exact forms
 * {@link resultResourceUri} and {@link resultChunkUri} build are accepted: no query, fragment, percent-encoding,
 * leading zero or extra path.
 */
export function parseResultUri(uri: string): { taskId: string; chunk?: number } | undefined {
  const match = RESULT_URI.exec(uri);
  if (!match) return undefined;
  return match[2] === undefined ? { taskId: match[1] as string } : { taskId: match[1] as string, chunk: Number(match[2]) };
}

/** `_meta` key of a bounded result: where the whole one is and its size (`{uri, bytes, chunks}`). */
export const LARGE_RESULT_META_KEY = 'dev.mcp-tasks/large-result';

/** What a bounded result's `_meta` says about the whole one. */
export interface LargeResultMeta {
  uri: string;
  /** Bytes of the whole result's JSON text (UTF-8). */
  bytes: number;
  /** Stored chunks. */
  chunks: number;
}

/** The {@link LargeResultMeta} of a stored tool result, or `undefined` when it is an ordinary (inline) one. */
export function largeResultMetaOf(result: Record<string, unknown>): LargeResultMeta | undefined {
  const meta = result._meta;
  const entry = typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>)[LARGE_RESULT_META_KEY] : undefined;
  if (typeof entry !== 'object' || entry === null) return undefined;
  const { uri, bytes, chunks } = entry as Record<string, unknown>;
  return typeof uri === 'string' && Number.isSafeInteger(bytes) && Number.isSafeInteger(chunks)
    ? { uri, bytes: bytes as number, chunks: chunks as number }
    : undefined;
}
