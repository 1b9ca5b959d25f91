import { TasksError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { ErrorCode } from '../protocol/constants.js';
import { wireErrorOf } from './store-errors.js';

/**
 * Run a request handler so that only deliberate protocol errors reach the wire: coded errors pass through, store
 * errors are mapped (`store-errors.ts`), anything else is logged and answered `-32603` "Internal error" (never a
 * client-fault code, never the original message, which may carry secrets).
 */
export async function guarded<T>(logger: Logger, method: string, handler: () => Promise<T>): Promise<T> {
  try {
    return await handler();
  } catch (error) {
    const wire = wireErrorOf(error, logger);
    if (wire) throw new TasksError(wire.code, wire.message, wire.data);
    logger.error({ err: error, method }, 'request handler failed');
    throw new TasksError(ErrorCode.InternalError, 'Internal error', undefined, { cause: error });
  }
}
