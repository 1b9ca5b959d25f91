/** A command-line usage problem; the CLI prints it and exits with code 64 (EX_USAGE). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Exit codes of the `mcp-tasks` CLI. */
export const ExitCode = Object.freeze({
  completed: 0,
  toolError: 1,
  failed: 2,
  cancelled: 3,
  unknownOrExpired: 4,
  connectionOrProtocol: 5,
  usage: 64,
} as const);
