/** A command-line usage problem; the CLI prints it and exits with code 64 (EX_USAGE). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * `serve` could not start for a reason outside the command line (the store is unreachable, has a newer schema, or
 * cannot be opened); the CLI prints the one-line message and exits with code 1.
 */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** Exit codes of the `mcp-tasks` CLI. */
export const ExitCode = Object.freeze({
  completed: 0,
  toolError: 1,
  /** `serve` could not start (see {@link StartupError}). */
  startupFailed: 1,
  failed: 2,
  cancelled: 3,
  unknownOrExpired: 4,
  connectionOrProtocol: 5,
  /** The task waits for an answer that nobody gave here (`--detach-on-input`, or `answer` left questions open). */
  inputNeeded: 6,
  /** Refused by policy: the connection lacks a capability the call's `--task` policy needs (nothing was sent), or the call was handed off. */
  refusedByPolicy: 7,
  /** Outcome unknown: the call or task may have run, and this client cannot find out now (never treated as failed). */
  outcomeUnknown: 8,
  usage: 64,
  /** `--timeout` reached; the task keeps running (like timeout(1)). */
  timedOut: 124,
  /** Ctrl-C: the command detached; the task keeps running (128 + SIGINT). */
  interrupted: 130,
} as const);
