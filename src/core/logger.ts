/**
 * The logging port: a subset of pino's API so that a pino logger fits and tests can pass a silent one.
 * Libraries never call `console`; secrets and full task ids never reach a log line (see `redactTaskId`).
 */
export interface Logger {
  debug(object: object, message?: string): void;
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
  child(bindings: object): Logger;
}

/** A logger that drops everything. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};

/** A task id shortened for logs: the first 6 characters and an ellipsis, never the full bearer-like id. */
export function redactTaskId(taskId: string): string {
  return `${taskId.slice(0, 6)}…`;
}
