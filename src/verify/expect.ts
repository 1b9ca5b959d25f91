/**
 * Assertions for checks. Each failure names what was expected and what came back, and points at the exchange it
 * is about, so the report can print that request and answer under the failure line.
 */
import { CheckFailed, CheckSkipped } from './check.js';
import type { Exchange, WireAnswer } from './wire/exchange.js';

/** A failure that points at the exchange showing it. */
export class CheckFailedAt extends CheckFailed {
  constructor(
    message: string,
    readonly exchange: Exchange | undefined,
  ) {
    super(message);
  }
}

/** Fail the check. */
export function fail(message: string, answer?: WireAnswer): never {
  throw new CheckFailedAt(message, answer?.exchange);
}

/** Skip the check, saying why. */
export function skip(reason: string): never {
  throw new CheckSkipped(reason);
}

const SHOWN_CHARS = 240;

/** A short description of an answer: HTTP status, then the error or the result (abbreviated). */
export function describe(answer: WireAnswer): string {
  const response = answer.response;
  // JSON-quoted: a control character or quote in the server's message shows as an escape, and cannot end the quote.
  if (response?.error) return `HTTP ${answer.status}, error ${response.error.code} ${JSON.stringify(response.error.message)}`;
  if (response?.result) {
    const json = JSON.stringify(response.result);
    return `HTTP ${answer.status}, result ${json.length > SHOWN_CHARS ? `${json.slice(0, SHOWN_CHARS)}…` : json}`;
  }
  return `HTTP ${answer.status}${answer.text ? `, body ${JSON.stringify(answer.text.slice(0, SHOWN_CHARS))}` : ', no JSON-RPC response'}`;
}

/** The JSON-RPC error of an answer with one of `codes`; fails otherwise. */
export function expectError(answer: WireAnswer, codes: number | readonly number[], what: string): { code: number; message: string; data?: unknown } {
  const wanted = typeof codes === 'number' ? [codes] : codes;
  const error = answer.response?.error;
  if (!error || !wanted.includes(error.code)) fail(`${what}: expected error ${wanted.join(' or ')}, got ${describe(answer)}`, answer);
  return error;
}

/** The JSON-RPC result of an answer; fails on an error or no response. */
export function expectResult(answer: WireAnswer, what: string): Record<string, unknown> {
  const result = answer.response?.result;
  if (!result) fail(`${what}: expected a result, got ${describe(answer)}`, answer);
  return result;
}

/** Fails unless the HTTP status is one of `statuses`. */
export function expectHttpStatus(answer: WireAnswer, statuses: number | readonly number[], what: string): void {
  const wanted = typeof statuses === 'number' ? [statuses] : statuses;
  if (!wanted.includes(answer.status)) fail(`${what}: expected HTTP ${wanted.join(' or ')}, got ${describe(answer)}`, answer);
}

/** Fails with `message` unless `condition` holds. */
export function expectThat(condition: unknown, message: string, answer?: WireAnswer): asserts condition {
  if (!condition) fail(message, answer);
}

/** Whether a value is an ISO 8601 date-time string. */
export function isIsoTime(value: unknown): boolean {
  return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value) && !Number.isNaN(Date.parse(value));
}

/** Whether a value is a non-negative integer. */
export function isNonNegativeInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}
