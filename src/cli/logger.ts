import { pino } from 'pino';

import type { Logger } from '../core/logger.js';
import { coalesceOutageLogs } from '../core/outage-log.js';
import { redactSecrets } from '../core/redaction.js';

/** Errors are logged with secret-like values redacted from their message and stack (tools quote what they read). */
export function serializeError(error: unknown): unknown {
  const serialized = pino.stdSerializers.err(error as Error) as unknown as Record<string, unknown>;
  for (const field of ['message', 'stack']) {
    if (typeof serialized[field] === 'string') serialized[field] = redactSecrets(serialized[field] as string);
  }
  return serialized;
}

/**
 * The CLI's logger: pino writing JSON lines to stderr (stdout belongs to MCP in `--stdio` mode), with secret-bearing
 * fields redacted wherever they appear and secret-like values redacted from logged errors, and the lines of a task
 * store outage coalesced ({@link coalesceOutageLogs}).
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
  return coalesceOutageLogs(logger);
}
