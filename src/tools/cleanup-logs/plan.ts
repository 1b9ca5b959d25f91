/**
 * What `cleanup_logs` would delete: rotated and compressed logs (never a live `*.log`), plus whatever matches the
 * caller's `include` glob, last modified before a cutoff. The plan is plain JSON, so the tool journals it as a
 * step and deletes exactly what it listed, even when the tool is re-run after the user's answer or a crash.
 */
import { lstat } from 'node:fs/promises';
import path from 'node:path';

import picomatch from 'picomatch';

import type { Confinement } from '../roots.js';
import { walkFiles } from '../walk.js';

/** A file the plan would delete, with the size and modification time it had when listed. */
export type Candidate = {
  /** Absolute real path. */
  path: string;
  /** Path relative to the cleaned directory (`/`-separated), for display. */
  relative: string;
  /** Size in bytes. */
  size: number;
  /** Modification time, epoch ms (fractional, as `lstat` reports it). */
  mtimeMs: number;
};

/** The analysis: what would be deleted and how it was chosen. */
export type CleanupPlan = {
  /** The real path that was analysed (a directory, or one file). */
  target: string;
  /** Files last modified before this instant (ISO 8601) qualify. */
  cutoff: string;
  /** Oldest first; at most {@link MAX_CANDIDATES}. */
  candidates: Candidate[];
  /** Sum of the candidates' sizes in bytes. */
  totalBytes: number;
  /** Regular files looked at. */
  scannedFiles: number;
  /** More files qualified than {@link MAX_CANDIDATES} (the oldest were kept), or the walk hit its file limit. */
  truncated: boolean;
};

/** Files one cleanup lists (and deletes) at most; the rest waits for the next run. */
const MAX_CANDIDATES = 2000;
/** Files one analysis walks at most. */
const MAX_WALKED_FILES = 200_000;
const DAY_MS = 86_400_000;

/** Rotated logs: `x.log.1`, `x.log.2.gz`, `x.log-20240101`, `syslog.1`, `messages-20240101.gz`, `x.log.gz`. */
const ROTATED =
  /(?:\.log(?:\.\d+|-\d{8}(?:\d{2})?)?\.gz|\.log\.\d+|\.log-\d{8}(?:\d{2})?|^(?:syslog|messages|dmesg|secure|maillog|cron|kern|auth|daemon)(?:\.\d+|-\d{8})(?:\.gz)?)$/;
/** Any other `*.gz` counts as a compressed old log, except archives and data (`x.tar.gz`, `x.csv.gz`, …). */
const OTHER_GZ = /\.gz$/;
const NOT_A_LOG_GZ = /\.(?:tar|csv|tsv|json|sql|xml|parquet)\.gz$/;
const GLOB_OPTIONS = { dot: true, strictBrackets: true } as const;

/**
 * A predicate over `/`-separated relative paths: rotated or compressed logs, or files matching `include`
 * (picomatch; a pattern without `/` matches the base name).
 * @throws Error when `include` is not a valid glob.
 */
export function cleanupSelector(include?: string): (relative: string) => boolean {
  const matchesInclude = include ? picomatch(include, { ...GLOB_OPTIONS, basename: !include.includes('/') }) : null;
  return (relative) => {
    const name = relative.slice(relative.lastIndexOf('/') + 1);
    return ROTATED.test(name) || (OTHER_GZ.test(name) && !NOT_A_LOG_GZ.test(name)) || (matchesInclude !== null && matchesInclude(relative));
  };
}

/** Options of {@link planCleanup}. */
export interface PlanOptions {
  /** Real path inside the writable roots (see `resolveConfined`). */
  target: string;
  /** The writable roots and the denied paths. */
  confinement: Confinement;
  olderThanDays: number;
  include?: string;
  /** The current time, epoch ms. */
  now: number;
  signal: AbortSignal;
  onProgress(done: number, total: number): void;
}

/**
 * List what a cleanup would delete. Only regular files are listed: a symlink is never followed to its target
 * (deleting the target through a link with a rotated name would delete something else).
 * @throws the signal's reason when aborted.
 */
export async function planCleanup(options: PlanOptions): Promise<CleanupPlan> {
  const selected = cleanupSelector(options.include);
  const cutoffMs = options.now - options.olderThanDays * DAY_MS;
  const info = await lstat(options.target);
  // A single file goes through the walk too: it checks the confinement once more.
  const walked = await walkFiles(options.target, { confinement: options.confinement, signal: options.signal, maxFiles: MAX_WALKED_FILES });
  const base = info.isDirectory() ? options.target : path.dirname(options.target);
  // A file reached through a link is listed under its target's path; keep only files met at their own path.
  const files = walked.files.filter((file) => file.path === path.join(base, file.relative) && selected(file.relative));
  const candidates: Candidate[] = [];
  for (const [index, file] of files.entries()) {
    options.signal.throwIfAborted();
    const stats = await lstat(file.path).catch(() => null);
    if (stats?.isFile() && stats.mtimeMs < cutoffMs) candidates.push({ path: file.path, relative: file.relative, size: stats.size, mtimeMs: stats.mtimeMs });
    options.onProgress(index + 1, files.length);
  }
  candidates.sort((a, b) => a.mtimeMs - b.mtimeMs || (a.relative < b.relative ? -1 : 1));
  const kept = candidates.slice(0, MAX_CANDIDATES);
  return {
    target: options.target,
    cutoff: new Date(cutoffMs).toISOString(),
    candidates: kept,
    totalBytes: kept.reduce((sum, candidate) => sum + candidate.size, 0),
    scannedFiles: walked.files.length,
    truncated: walked.truncated || candidates.length > MAX_CANDIDATES,
  };
}
