import { readFileSync } from 'node:fs';

import { ExitCode, UsageError } from './usage-error.js';

/** How an operator command reaches a server's `/admin/…` API (`--url`, `--token-file`, else `MCP_TASKS_TOKEN`). */
export interface AdminConnection {
  url?: string;
  tokenFile?: string;
}

/** An admin API answer that is not 2xx; the CLI prints it and exits 5 (or 64 for a refused input). */
export class AdminApiError extends Error {
  override readonly name = 'AdminApiError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The API base of `--url`: the server's origin (a trailing `/mcp` or `/admin` is dropped). */
export function adminBase(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url ${url}: not a URL`);
  }
  return new URL('/', parsed);
}

function tokenOf(connection: AdminConnection): string | undefined {
  if (connection.tokenFile !== undefined) {
    try {
      return readFileSync(connection.tokenFile, 'utf8').trim();
    } catch (error) {
      throw new UsageError(`--token-file ${connection.tokenFile}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return process.env.MCP_TASKS_TOKEN || undefined;
}

/**
 * Call the admin API: `method` on `/admin/<path>` with an optional JSON body; resolves with the JSON answer.
 * @throws AdminApiError for a non-2xx answer (its `error_description` as the message); UsageError for bad flags.
 */
export async function adminRequest<T>(connection: AdminConnection & { url: string }, method: string, path: string, body?: unknown): Promise<T> {
  const token = tokenOf(connection);
  const target = new URL(`admin/${path}`, adminBase(connection.url));
  const response = await fetch(target, {
    method,
    headers: {
      accept: 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(15_000),
  }).catch((error: unknown) => {
    throw new AdminApiError(0, `cannot reach ${target.origin}: ${error instanceof Error ? error.message : String(error)}`);
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new AdminApiError(response.status, `${target.href} answered HTTP ${response.status} without JSON (is this an mcp-tasks server?)`);
  }
  if (!response.ok) {
    const problem = parsed as { error?: string; error_description?: string };
    throw new AdminApiError(response.status, `HTTP ${response.status} ${problem.error ?? ''}: ${problem.error_description ?? text}`);
  }
  return parsed as T;
}

/** The exit code of an {@link AdminApiError}: 64 for a refused input (400), else 5 (connection, auth, server). */
export function adminExitCode(error: AdminApiError): number {
  return error.status === 400 ? ExitCode.usage : ExitCode.connectionOrProtocol;
}

/** Run an API call; an {@link AdminApiError} is printed on stderr and sets the exit code (5, or 64 for a 400). */
export async function viaApi(call: () => Promise<void>): Promise<void> {
  try {
    await call();
  } catch (error) {
    if (!(error instanceof AdminApiError)) throw error;
    process.stderr.write(`mcp-tasks: ${error.message}\n`);
    process.exitCode = adminExitCode(error);
  }
}
