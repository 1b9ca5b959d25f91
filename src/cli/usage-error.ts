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

/**
 * Exit codes of the `mcp-tasks` CLI: one table for every command (rendered into docs/reference/error-codes.md).
 * A code means the same for every command that uses it; where a command gives a code a meaning of its own, the
 * entry says so. Bad input of any kind — the command line, `--args`, `--answers`, an unknown tool, arguments the
 * tool refuses (JSON-RPC `-32602`) — is 64. With `--json`, every outcome, errors included, is one JSON object on
 * stdout.
 */
export const ExitCode = Object.freeze({
  /** Done: `call`/`watch`/`resume` the task completed; `cancel` the task ended cancelled; `answer` answered (or nothing waited); `get`, `inspect`, `tasks`, `doctor` (no FAIL), `verify` (every deciding check passed), `admin watch` (nothing in flight), operator commands succeeded. */
  completed: 0,
  /** `call`/`watch`/`resume`: the tool's result has `isError: true` (e.g. `check_infrastructure` with a target down). */
  toolError: 1,
  /** `serve`/`worker` could not start (see {@link StartupError}); `doctor` found a FAIL; `verify` a deciding check failed; `admin watch --once` something still in flight. */
  startupFailed: 1,
  /** `call`/`watch`/`resume`: the task failed (a JSON-RPC error), or the server answered the call itself with a JSON-RPC error (e.g. a `sync` tool that threw, or was stopped at `maxSyncMs`). `verify`: none failed, but some deciding checks were skipped (not verified). */
  failed: 2,
  /** `call`/`watch`/`resume`: the task was cancelled. */
  cancelled: 3,
  /** Unknown or expired task (`get`, `watch`, `cancel`, `answer`, …), or a task's result gone before `--output` read it (expired or purged after the task ended); no such operation (`ops show`, `ops reconcile`). */
  unknownOrExpired: 4,
  /** The server is unreachable, refused the connection (401/403), or broke the protocol; nothing is known about the outcome beyond what was printed. */
  connectionOrProtocol: 5,
  /** The task waits for an answer that nobody gave here (`call --detach-on-input`, or `answer` left questions open). */
  inputNeeded: 6,
  /** `call`: refused by policy, nothing ran — the connection lacks a capability the call's `--task` policy needs (nothing was sent), the server refused the call (a quota, load shedding, the kill switch or a canary: JSON-RPC -31001/-31002/-31003; retry later), or the call was handed off (`--fallback handoff`). */
  refusedByPolicy: 7,
  /** Outcome unknown: the call or task may have run, and this client cannot find out now (never treated as failed); `ops reconcile`: still unknown. */
  outcomeUnknown: 8,
  /** `cancel`: the task ended another way (completed or failed) before the cancellation took effect, or had already ended; its outcome is printed. */
  notCancelled: 9,
  /** Bad input: the command line, `--args`/`--answers`, an unknown tool or arguments the tool refuses (JSON-RPC `-32602`); nothing ran. */
  usage: 64,
  /** `call`/`watch`/`resume --output FILE`: FILE could not be written on this machine (a full disk `ENOSPC`, `EIO`, a quota; EX_IOERR). The task and its result are fine: the result stays on the server until the task expires, and the message gives the command that saves it again. A regular FILE is left as it was (it is only ever replaced by a complete file); FILE written in place (a FIFO, a device, `/dev/stdout`) may hold part of the result (`--json`: `partial: true`). */
  ioError: 74,
  /** `--timeout` reached (`call`, `watch`, `resume`, `admin watch`); `cancel`: not final within its `--timeout`. The task keeps running (like timeout(1)). */
  timedOut: 124,
  /** Ctrl-C: the command detached; the task keeps running (128 + SIGINT). */
  interrupted: 130,
} as const);
