import { pino } from 'pino';
import type { Logger } from '../core/logger.js';

/**
 * The CLI's logger: pino writing JSON lines to stderr (stdout belongs to MCP in `--stdio` mode), with secret-bearing
 * fields redacted wherever they appear.
 */
export function createCliLogger(level: string): Logger {
  return pino(
    {
      level,
      redact: {
        paths: ['token', '*.token', 'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization', 'secret', '*.secret'],
        censor: '[redacted]',
      },
    },
    pino.destination(2),
  ) as unknown as Logger;
}
