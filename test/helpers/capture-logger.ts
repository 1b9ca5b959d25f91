import type { Logger } from '../../src/core/logger.js';

/** One captured log call: its level, the merged child bindings and fields, and the message. */
export interface CapturedLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  fields: Record<string, unknown>;
  message: string | undefined;
}

/** A {@link Logger} that keeps every line in memory, so tests can assert what the server logged. */
export function captureLogger(): { logger: Logger; lines: CapturedLine[] } {
  const lines: CapturedLine[] = [];
  const make = (bindings: Record<string, unknown>): Logger => {
    const write = (level: CapturedLine['level']) => (object: object, message?: string) => {
      lines.push({ level, fields: { ...bindings, ...(object as Record<string, unknown>) }, message });
    };
    return {
      debug: write('debug'),
      info: write('info'),
      warn: write('warn'),
      error: write('error'),
      child: (more) => make({ ...bindings, ...(more as Record<string, unknown>) }),
    };
  };
  return { logger: make({}), lines };
}
