import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';

import { TasksError } from '../core/errors.js';
import type { JsonObject } from '../core/task.js';
import type { ContentBlock, ToolResult } from '../core/tool.js';
import { sanitizeModelText } from '../core/tool-outcome.js';
import { ErrorCode, UpstreamFailureReason } from '../protocol/constants.js';

/**
 * How the answer of an upstream `tools/call` becomes the outcome of our call (issue 28): a result stays that result
 * (text, structured content, resource links and every other content block unchanged; `isError` stays `isError`),
 * and a failure becomes one `-32603` with `data.reason` ({@link UpstreamFailureReason}) and a one-line message that
 * names the upstream and the tool. The message is model-facing text (guide §7): the upstream's own words in it are
 * sanitised here, and again by the runtime like every error message it stores.
 */

/** Longest upstream text quoted in a failure message (the whole message is capped at 512 by the sanitiser). */
const QUOTED_MAX = 200;

/** An upstream's text made fit to quote: one sanitised line, at most {@link QUOTED_MAX} characters. */
export function quoteUpstream(text: string): string {
  const line = sanitizeModelText(text);
  return line.length > QUOTED_MAX ? `${line.slice(0, QUOTED_MAX - 1)}…` : line;
}

/**
 * An upstream `CallToolResult` as our tool's result. `structuredContent` is kept when it is a JSON object (what
 * both protocol generations' tools return); `_meta` of the upstream's result is not ours to pass on and is dropped.
 */
export function toToolResult(result: { content?: unknown; structuredContent?: unknown; isError?: unknown }): ToolResult {
  const content = Array.isArray(result.content) ? (result.content as ContentBlock[]) : [];
  const structured = result.structuredContent;
  return {
    content,
    ...(typeof structured === 'object' && structured !== null && !Array.isArray(structured) ? { structuredContent: structured as JsonObject } : {}),
    ...(result.isError === true ? { isError: true } : {}),
  };
}

/** What is known of a failed forward besides the error itself. */
export interface ForwardFailureContext {
  /** The upstream's name (the prefix of its tools). */
  upstream: string;
  /** The tool as the upstream names it. */
  tool: string;
  /** Why the connection closed, when it closed during the call (the last words of the upstream, one line). */
  lost?: string | undefined;
}

/**
 * The `TasksError` a failed forward of `tools/call` ends in (see the module comment). Abort errors are not mapped:
 * the caller rethrows them (an aborted run records nothing).
 */
export function forwardFailure(error: unknown, context: ForwardFailureContext): TasksError {
  const { upstream, tool } = context;
  const data = (reason: string, extra: JsonObject = {}): JsonObject => ({ reason, upstream, ...extra });
  if (error instanceof TasksError) return error;
  if (context.lost !== undefined || (error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed)) {
    const why = context.lost ? ` (${quoteUpstream(context.lost)})` : '';
    return new TasksError(
      ErrorCode.InternalError,
      `Upstream ${upstream} stopped while ${tool} ran${why}; it may have done part of the work, so the call is not sent again`,
      data(UpstreamFailureReason.Down),
    );
  }
  if (error instanceof ProtocolError) {
    return new TasksError(
      ErrorCode.InternalError,
      // SDK 1.x servers send "MCP error <code>: <message>" as the message; the code is said once.
      `Upstream ${upstream} answered ${tool} with error ${error.code}: ${quoteUpstream(error.message.replace(/^MCP error -?\d+:\s*/, ''))}`,
      data(UpstreamFailureReason.Error, { upstreamCode: error.code }),
    );
  }
  if (neverSent(error)) {
    return new TasksError(ErrorCode.InternalError, `Upstream ${upstream} is not reachable; ${tool} was not called`, data(UpstreamFailureReason.Unavailable));
  }
  const message = error instanceof Error ? error.message : String(error);
  return new TasksError(
    ErrorCode.InternalError,
    `Calling ${tool} on upstream ${upstream} failed: ${quoteUpstream(message)}`,
    data(UpstreamFailureReason.Error),
  );
}

/** Network errors that say a request never reached the server (nothing listens, no such host). */
const NOT_REACHED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Whether `error` proves the request never reached the upstream: the SDK had no connection or could not send, the
 * HTTP endpoint could not be reached (`fetch` failed with a connection error), or it answered 404 — the session the
 * request belonged to is gone, so nothing ran it.
 */
export function neverSent(error: unknown): boolean {
  if (error instanceof SdkError && (error.code === SdkErrorCode.NotConnected || error.code === SdkErrorCode.SendFailed)) return true;
  if (error instanceof SdkHttpError && error.status === 404) return true;
  const code = (error as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  return error instanceof TypeError && typeof code === 'string' && NOT_REACHED.has(code);
}

/**
 * Whether `error` is a failure of the connection itself rather than an answer of the upstream (a JSON-RPC error, an
 * invalid result): after it, an HTTP connection is made again (a new session; the old one may be gone).
 */
export function connectionFailed(error: unknown): boolean {
  if (neverSent(error)) return true;
  if (error instanceof SdkHttpError) return true;
  if (error instanceof SdkError) return error.code === SdkErrorCode.ConnectionClosed;
  return error instanceof TypeError && /fetch failed|terminated|socket/i.test(error.message);
}

/** The failure of a call that could not be sent because the upstream is down (`why`: its last error, if any). */
export function unavailable(upstream: string, tool: string, why: string | undefined): TasksError {
  return new TasksError(ErrorCode.InternalError, `Upstream ${upstream} is not reachable${why ? ` (${quoteUpstream(why)})` : ''}; ${tool} was not called`, {
    reason: UpstreamFailureReason.Unavailable,
    upstream,
  });
}
