import type { Logger } from '../core/logger.js';
import { hasJsonRpcCode, TasksError } from '../core/errors.js';
import { ErrorCode } from '../protocol/constants.js';

/**
 * Run a request handler so that only deliberate protocol errors reach the wire: coded errors pass through,
 * anything else is logged and answered `-32603` "Internal error" (never a client-fault code, never the original
 * message, which may carry secrets).
 */
export async function guarded<T>(logger: Logger, method: string, handler: () => Promise<T>): Promise<T> {
  try {
    return await handler();
  } catch (error) {
    if (hasJsonRpcCode(error)) throw error;
    logger.error({ err: error, method }, 'request handler failed');
    throw new TasksError(ErrorCode.InternalError, 'Internal error', undefined, { cause: error });
  }
}
