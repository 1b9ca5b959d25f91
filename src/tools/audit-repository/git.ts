/**
 * Recent commit activity of a repository from `git log`. A missing git, a directory outside any repository or
 * a refused repository is reported, never thrown.
 */
import { execFile } from 'node:child_process';

/** Commit activity in the window, or why it is unavailable. */
export type GitActivity = {
  available: boolean;
  /** Why `available` is false (e.g. "not a git repository", "git is not installed"), else `null`. */
  reason: string | null;
  /** Start of the window, ISO 8601. */
  since: string;
  /** Commits in the window touching the path. */
  commits: number;
  /** Most active authors (by name) in the window, at most {@link MAX_AUTHORS}. */
  authors: { name: string; commits: number }[];
  /** Distinct authors in the window (`authors` may list fewer). */
  authorCount: number;
  /** Committer date of the newest commit in the window, ISO 8601, or `null`. */
  lastCommitAt: string | null;
  /** Commits per ISO week start (Monday, `YYYY-MM-DD`, UTC), oldest first. */
  perWeek: Record<string, number>;
};

const MAX_AUTHORS = 10;
const TIMEOUT_MS = 15_000;
const MAX_OUTPUT_BYTES = 32 * 1024 * 1024;
const DAY_MS = 86_400_000;

/**
 * Reads `git log` for `directory` (restricted to that subtree) over the last `days` days.
 *
 * @param now - epoch ms the window ends at.
 * @throws only the signal's reason when aborted.
 */
export async function gitActivity(directory: string, days: number, signal: AbortSignal, now = Date.now()): Promise<GitActivity> {
  const since = new Date(now - days * DAY_MS).toISOString();
  const empty: GitActivity = { available: false, reason: null, since, commits: 0, authors: [], authorCount: 0, lastCommitAt: null, perWeek: {} };
  let output: string;
  try {
    output = await run(
      // fsmonitor is disabled because a repository's own config could otherwise make git run a program.
      ['-c', 'core.fsmonitor=false', '-C', directory, 'log', `--since=${since}`, '--format=%cI%x09%an', '--', '.'],
      signal,
    );
  } catch (error) {
    signal.throwIfAborted();
    return { ...empty, reason: explain(error) };
  }
  const authors = new Map<string, number>();
  const perWeek = new Map<string, number>();
  let commits = 0;
  let lastCommitAt: string | null = null;
  for (const line of output.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab < 0) continue;
    const date = line.slice(0, tab);
    const at = Date.parse(date);
    if (Number.isNaN(at)) continue;
    commits++;
    lastCommitAt ??= new Date(at).toISOString();
    const name = line.slice(tab + 1);
    authors.set(name, (authors.get(name) ?? 0) + 1);
    const week = weekStart(at);
    perWeek.set(week, (perWeek.get(week) ?? 0) + 1);
  }
  return {
    available: true,
    reason: null,
    since,
    commits,
    authors: [...authors]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, MAX_AUTHORS)
      .map(([name, count]) => ({ name, commits: count })),
    authorCount: authors.size,
    lastCommitAt,
    perWeek: Object.fromEntries([...perWeek].sort((a, b) => (a[0] < b[0] ? -1 : 1))),
  };
}

/**
 * The files git would call part of the work tree below `directory`: tracked ones and untracked ones that no
 * ignore rule excludes (`git ls-files --cached --others --exclude-standard`), `/`-separated and relative to it.
 *
 * @returns `null` when `directory` is not in a git work tree (or git is missing or refuses it).
 * @throws only the signal's reason when aborted.
 */
export async function gitFiles(directory: string, signal: AbortSignal): Promise<string[] | null> {
  try {
    const output = await run(['-c', 'core.fsmonitor=false', '-C', directory, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], signal);
    // A file both tracked and modified is listed once; an unmerged one once per stage.
    return [...new Set(output.split('\0').filter((name) => name !== ''))];
  } catch {
    signal.throwIfAborted();
    return null;
  }
}

function run(args: string[], signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      args,
      { timeout: TIMEOUT_MS, maxBuffer: MAX_OUTPUT_BYTES, signal, env: { ...process.env, GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' } },
      (error, stdout, stderr) => (error ? reject(Object.assign(error, { stderr })) : resolve(stdout)),
    );
  });
}

function explain(error: unknown): string {
  const { code, killed, stderr } = error as { code?: unknown; killed?: boolean; stderr?: string };
  if (code === 'ENOENT') return 'git is not installed';
  if (killed) return 'git log timed out';
  const text = (stderr ?? '').toLowerCase();
  if (text.includes('not a git repository')) return 'not a git repository';
  if (text.includes('dubious ownership')) return 'git refused the repository (owned by another user)';
  if (text.includes('does not have any commits')) return 'the repository has no commits';
  return `git log failed: ${(stderr ?? String(error)).split('\n')[0]?.slice(0, 200) ?? ''}`;
}

/** Monday 00:00 UTC of the week of `epochMs`, as `YYYY-MM-DD`. */
function weekStart(epochMs: number): string {
  const day = new Date(epochMs).getUTCDay();
  const monday = Math.floor(epochMs / DAY_MS) * DAY_MS - ((day + 6) % 7) * DAY_MS;
  return new Date(monday).toISOString().slice(0, 10);
}
