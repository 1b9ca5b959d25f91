/**
 * The points of `ctx.operation` where a crash leaves the ledger and the system of record in different states:
 * - `before_perform`: the `pending` row is committed, the effect has not started;
 * - `after_perform`: the system of record committed the effect, its receipt is not stored (the row says `pending`);
 * - `after_receipt`: the receipt is stored (`confirmed`), the task's outcome is not.
 */
export type CrashPoint = 'before_perform' | 'after_perform' | 'after_receipt';

/**
 * TEST HOOK, inert unless enabled: with `MCP_TASKS_TEST_CRASH_AT=<point>` in the environment of a worker (or of
 * `serve` with its embedded worker), the process kills itself with SIGKILL the first time a `ctx.operation`
 * reaches that point — a real crash (no cleanup, no drain, leases left to lapse), used by the crash-window tests.
 * Nothing else reads the variable; unset (the default) this function does nothing.
 */
export function crashPoint(point: CrashPoint): void {
  if (process.env.MCP_TASKS_TEST_CRASH_AT !== point) return;
  processKill(process.pid, 'SIGKILL');
}

/** The name of the environment variable of {@link crashPoint}, which the isolated executor passes to its threads. */
export const CRASH_AT_VARIABLE = 'MCP_TASKS_TEST_CRASH_AT';

let processKill: (pid: number, signal: NodeJS.Signals) => void = (pid, signal) => process.kill(pid, signal);

/**
 * Keep the real `process.kill` for {@link crashPoint}: a tool thread replaces `process.kill` with one that refuses to
 * signal the server (issue 22), but this hook exists to kill the whole process from inside a run, as a crash would.
 */
export function keepProcessKillForCrashPoints(kill: (pid: number, signal: NodeJS.Signals) => void): void {
  processKill = kill;
}
