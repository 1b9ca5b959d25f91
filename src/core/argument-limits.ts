import { ErrorCode } from '../protocol/constants.js';
import { TasksError } from './errors.js';
import { depthUpTo } from './json-depth.js';
import type { TasksServerLimits } from './limits.js';

/** The limits {@link checkArgumentLimits} applies. */
export type ArgumentLimits = Pick<TasksServerLimits, 'maxArgumentBytes' | 'maxArgumentDepth'>;

/**
 * The refusal of `tools/call` arguments beyond the limits (issue 10 §2), or `undefined` when they are within them.
 * Depth is judged first (so the size is measured only on a value shallow enough to serialise safely); the size is
 * the UTF-8 length of the arguments' JSON text.
 * @returns a `-32602` error whose message names the limit and its setting, with `data.reason`
 *   `"argument_depth"` / `"argument_size"`, `data.limit` and `data.actual`.
 */
export function checkArgumentLimits(args: unknown, limits: ArgumentLimits): TasksError | undefined {
  const depth = depthUpTo(args, limits.maxArgumentDepth);
  if (depth > limits.maxArgumentDepth) {
    return new TasksError(
      ErrorCode.InvalidParams,
      `Invalid params for tools/call: arguments nest deeper than maxArgumentDepth (${limits.maxArgumentDepth} levels, --max-argument-depth)`,
      {
        reason: 'argument_depth',
        limit: limits.maxArgumentDepth,
      },
    );
  }
  const bytes = Buffer.byteLength(JSON.stringify(args ?? {}) ?? '', 'utf8');
  if (bytes > limits.maxArgumentBytes) {
    return new TasksError(
      ErrorCode.InvalidParams,
      `Invalid params for tools/call: arguments are ${bytes} bytes of JSON, more than maxArgumentBytes (${limits.maxArgumentBytes} bytes, --max-argument-bytes)`,
      { reason: 'argument_size', limit: limits.maxArgumentBytes, actual: bytes },
    );
  }
  return undefined;
}
