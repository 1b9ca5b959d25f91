import type { JsonValue } from './task.js';

/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) as MCP carries it in `_meta.traceparent` /
 * `_meta.tracestate` of a request, and as a task keeps it: plain strings, no tracing library needed, so the
 * service and the stores stay free of OpenTelemetry.
 */
export interface TraceCarrier {
  /** `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`. */
  traceparent: string;
  /** Vendor entries (`key=value,…`), at most 512 characters. */
  tracestate?: string;
}

/** The parts of a valid `traceparent`. */
export interface ParsedTraceparent {
  traceId: string;
  spanId: string;
  /** Trace flags (bit 0: sampled). */
  flags: number;
}

/**
 * The trace context of a `tools/call` as it travels through the service: `incoming` as the request's `_meta` sent
 * it; `request` set by a tracing hook to its request span's context (the one a created task links to). The
 * service stores `request ?? incoming` with a created task under {@link TRACE_STEP}.
 */
export interface RequestTrace {
  readonly incoming?: TraceCarrier;
  request?: TraceCarrier;
}

/** The journaled step under which a task keeps the trace context its runs link to (written with the task). */
export const TRACE_STEP = '@trace';

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$/;
const MAX_TRACESTATE = 512;

/** A `traceparent` parsed, or `undefined` when it is not valid (version `ff`, all-zero ids, bad shape: ignored, W3C §3.2). */
export function parseTraceparent(value: unknown): ParsedTraceparent | undefined {
  if (typeof value !== 'string' || value.length > 512) return undefined;
  const match = TRACEPARENT.exec(value);
  if (!match) return undefined;
  const [, version, traceId, spanId, flags] = match as unknown as [string, string, string, string, string];
  // Version 00 has exactly four fields; later versions may append more (W3C §3.2.4).
  if (version === 'ff' || (version === '00' && value.length !== 55)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, flags: Number.parseInt(flags, 16) };
}

/** The `traceparent` of a span context (version 00). */
export function formatTraceparent(parts: ParsedTraceparent): string {
  return `00-${parts.traceId}-${parts.spanId}-${(parts.flags & 0xff).toString(16).padStart(2, '0')}`;
}

/**
 * The carrier of a request's `_meta`, or `undefined` when it has no valid `traceparent` (an invalid trace
 * context is ignored, never an error: W3C §3.2). A `tracestate` beyond 512 characters is dropped.
 */
export function traceCarrierOf(meta: { traceparent?: unknown; tracestate?: unknown } | undefined): TraceCarrier | undefined {
  if (!meta || !parseTraceparent(meta.traceparent)) return undefined;
  const carrier: TraceCarrier = { traceparent: meta.traceparent as string };
  if (typeof meta.tracestate === 'string' && meta.tracestate.length > 0 && meta.tracestate.length <= MAX_TRACESTATE) carrier.tracestate = meta.tracestate;
  return carrier;
}

/** A stored {@link TRACE_STEP} value back as a carrier (`undefined` for anything else). */
export function traceCarrierFromJson(value: JsonValue | undefined): TraceCarrier | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  return traceCarrierOf(value as { traceparent?: unknown; tracestate?: unknown });
}
