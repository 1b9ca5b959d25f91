import { InvalidArgumentError } from 'commander';

/**
 * What `main.ts` needs to describe the requestor commands — the default endpoint and the `--timeout` parser — kept
 * apart from `requestor.ts`, which loads the client library: every command of the CLI (and `serve` and `worker`
 * above all) starts without loading the modules of the commands it does not run.
 */

/** Endpoint used when neither `--url`, the journal nor `MCP_TASKS_URL` names one (`mcp-tasks serve`'s default). */
export const DEFAULT_URL = 'http://127.0.0.1:3100/mcp';

/** `--timeout <sec>`: a positive number of seconds, returned in milliseconds. */
export function secondsOption(value: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new InvalidArgumentError('expected a positive number of seconds');
  return Math.round(seconds * 1000);
}
