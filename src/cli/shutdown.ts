import type { Logger } from '../core/logger.js';

/**
 * Run `stop` (a drain), then exit 0 when it is done, or 1 when it failed (logged). Used when a process ends on its
 * own terms: a signal, or a stdio client closing stdin. (The CLI's logger writes what an outage left counted at exit.)
 */
export function drainThenExit(logger: Logger, stop: () => Promise<void>): void {
  stop().then(
    () => process.exit(0),
    (error: unknown) => {
      logger.error({ err: error }, 'drain failed');
      process.exit(1);
    },
  );
}

/**
 * On the first SIGTERM or SIGINT run `stop` (a drain) and exit 0 when it is done, or 1 when it failed; a second
 * signal while it runs exits at once (an operator who insists). Used by `serve` and `worker` alike.
 */
export function onShutdownSignal(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn({ signal }, 'second signal during the drain: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'draining before exit');
    drainThenExit(logger, stop);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
