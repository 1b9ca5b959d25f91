import { pino } from 'pino';

import type { Logger } from '../core/logger.js';
import { coalesceOutageLogs, flushOutageLogs } from '../core/outage-log.js';
import { redactSecrets } from '../core/redaction.js';

/**
 * Errors are logged with secret-like values redacted from their message and stack (tools quote what they read). The
 * message carries its causes' messages, as pino's serializer writes them, except a cause's message the message
 * already quotes: a `StoreError` names its driver's error in its own words ("Task store failed to commit: database or
 * disk is full"), which pino would have repeated after it.
 */
export function serializeError(error: unknown): unknown {
  const serialized = pino.stdSerializers.err(error as Error) as unknown as Record<string, unknown>;
  if (error instanceof Error && typeof serialized.message === 'string') serialized.message = messageWithNewCauses(error);
  for (const field of ['message', 'stack']) {
    if (typeof serialized[field] === 'string') serialized[field] = redactSecrets(serialized[field] as string);
  }
  return serialized;
}

/** `error`'s message, then each cause's (`: ` between) that the words so far do not already contain; at most 8 deep. */
function messageWithNewCauses(error: Error): string {
  let message = error.message;
  let cause: unknown = error.cause;
  for (let depth = 0; cause instanceof Error && depth < 8; depth++, cause = cause.cause) {
    if (cause.message !== '' && !message.includes(cause.message)) message += `: ${cause.message}`;
  }
  return message;
}

/**
 * The CLI's logger: pino writing JSON lines to stderr (stdout belongs to MCP in `--stdio` mode), with secret-bearing
 * fields redacted wherever they appear and secret-like values redacted from logged errors, and the lines of a task
 * store outage coalesced ({@link coalesceOutageLogs}), whose open windows are written when the process exits.
 */
export function createCliLogger(level: string): Logger {
  const logger = pino(
    {
      level,
      serializers: { err: serializeError },
      redact: {
        paths: ['token', '*.token', 'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization', 'secret', '*.secret'],
        censor: '[redacted]',
      },
    },
    pino.destination(2),
  ) as unknown as Logger;
  const coalesced = coalesceOutageLogs(logger);
  // Whatever ends the process — a drain, a lost registration's process.exit, an uncaught exception — the count of an
  // outage window still open is written first: before pino's own exit listener, which flushes what its destination
  // still holds (the write itself goes through libuv's pool, which an exiting process no longer runs).
  process.prependOnceListener('exit', () => flushOutageLogs(coalesced));
  return coalesced;
}
