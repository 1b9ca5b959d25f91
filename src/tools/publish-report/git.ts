/**
 * The git commands of `publish_report`: git is the system of record, so every call goes to the real `git` binary
 * with the repository's own hooks and fsmonitor disabled (a repository's config must never make us run a program)
 * and a fixed committer identity (no user config needed).
 */
import { execFile } from 'node:child_process';

const TIMEOUT_MS = 30_000;
const MAX_OUTPUT_BYTES = 8 * 1024 * 1024;
/** The trailer that ties a commit to the operation that made it. */
export const OPERATION_TRAILER = 'Operation-Id';

/**
 * Whether git's error text says another git process got in the way, before anything reached the history, so the
 * same command may simply be tried again:
 * - `index.lock` exists: another git holds the index (git refuses before writing anything);
 * - `cannot lock ref 'HEAD': is at … but expected …`: another commit moved HEAD between ours reading and updating it
 *   (our commit object stays dangling, outside the history the reconciler searches);
 * - `pathspec '…' did not match any file(s) known to git` from `commit -- path`: another `commit -- other` rebuilt
 *   the index from its HEAD between our `git add` and our commit, dropping our staged new file.
 * Seen with two `publish_report` runs committing different files to one repository at once (two server processes).
 */
export function isContention(text: string): boolean {
  return /index\.lock|Unable to create .*\.lock|cannot lock ref 'HEAD'|did not match any file\(s\) known to git/.test(text);
}

/** A failed git command: `stderr` (trimmed) and whether another git process got in the way ({@link isContention}). */
export class GitError extends Error {
  override readonly name = 'GitError';
  constructor(
    message: string,
    readonly locked: boolean,
  ) {
    super(message);
  }
}

/** Run `git -C repo …args` and return stdout. @throws GitError */
export function git(repo: string, args: readonly string[], signal?: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'commit.gpgsign=false', '-C', repo, ...args],
      {
        timeout: TIMEOUT_MS,
        maxBuffer: MAX_OUTPUT_BYTES,
        ...(signal ? { signal } : {}),
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: process.env.HOME ?? '/nonexistent',
          GIT_AUTHOR_NAME: 'mcp-tasks',
          GIT_AUTHOR_EMAIL: 'mcp-tasks@localhost',
          GIT_COMMITTER_NAME: 'mcp-tasks',
          GIT_COMMITTER_EMAIL: 'mcp-tasks@localhost',
          GIT_TERMINAL_PROMPT: '0',
        },
      },
      (error, stdout, stderr) => {
        if (!error) return resolve(stdout);
        const text = String(stderr).trim() || error.message;
        reject(new GitError(`git ${args[0] ?? ''} failed: ${text.slice(0, 300)}`, isContention(text)));
      },
    );
  });
}

/** The current commit of `repo`, or `null` for a repository without commits. */
export async function headOf(repo: string): Promise<string | null> {
  try {
    return (await git(repo, ['rev-parse', '--verify', '-q', 'HEAD'])).trim() || null;
  } catch {
    return null;
  }
}

/** The commit (any branch) whose `Operation-Id` trailer is exactly `operationId`, or `null`. */
export async function commitOfOperation(repo: string, operationId: string): Promise<string | null> {
  const out = await git(repo, [
    'log',
    '--all',
    '-F',
    `--grep=${OPERATION_TRAILER}: ${operationId}`,
    `--format=%H%x09%(trailers:key=${OPERATION_TRAILER},valueonly,separator=%x2C)`,
  ]);
  for (const line of out.split('\n')) {
    const [commit, values] = line.split('\t');
    if (
      commit &&
      values
        ?.split(',')
        .map((value) => value.trim())
        .includes(operationId)
    )
      return commit;
  }
  return null;
}
