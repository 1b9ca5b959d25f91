/**
 * The resource a large task result is read from (issue 10 §2): `mcp-tasks://tasks/{taskId}/result`. A tool result
 * above `maxResultBytes` is stored in chunks; the task's own result then carries bounded content and a
 * `resource_link` to this URI, which `resources/read` serves to the task's owner only.
 */

/** Scheme of the server's own resources. */
export const RESULT_RESOURCE_SCHEME = 'mcp-tasks:';

/** MIME type of the resource: the JSON text of the whole `CallToolResult`. */
export const RESULT_RESOURCE_MIME_TYPE = 'application/json';

const RESULT_URI = /^mcp-tasks:\/\/tasks\/([A-Za-z0-9_-]{1,64})\/result$/;

/** The URI of `taskId`'s large result. */
export function resultResourceUri(taskId: string): string {
  return `mcp-tasks://tasks/${taskId}/result`;
}

/**
 * The task id in a result URI, or `undefined` for any other string (the caller answers it like an unknown task:
 * `-32602`, nothing learnt). Only the exact form {@link resultResourceUri} builds is accepted: no query, fragment,
 * percent-encoding or extra path.
 */
export function taskIdOfResultUri(uri: string): string | undefined {
  return RESULT_URI.exec(uri)?.[1];
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
  return typeof uri === 'string' && Number.isSafeInteger(bytes) && Number.isSafeInteger(chunks) ? { uri, bytes: bytes as number, chunks: chunks as number } : undefined;
}
