/**
 * Confined directory walk shared by the file-reading tools. Symlinks are never followed out of the roots: a
 * link whose target escapes every root is skipped and counted, a link to a file inside the roots is listed once
 * (a file reached both directly and through links is listed under the name met first), and a link to a
 * directory is not descended into (which also rules out cycles). Denied paths (the server's own state) are
 * neither listed nor descended into, whether met by path, through a link, or by identity (a hard link or a bind
 * mount); they are skipped silently, like files that are not there.
 */
import type { Dirent } from 'node:fs';
import { lstat, opendir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';

import { isPathInside } from '../core/path-inside.js';
import { ToolInputError } from '../core/tool.js';
import type { Confinement } from './roots.js';
import { yieldToEventLoop } from './yield.js';

/** A regular file found by {@link walkFiles}. */
export interface WalkedFile {
  /** Real path to read. */
  path: string;
  /** Path relative to the walk's start, `/`-separated (for globs and display); the base name when it is a file. */
  relative: string;
  /** Size in bytes. */
  size: number;
  /** Last modification, epoch ms. */
  mtimeMs: number;
}

/** Options of {@link walkFiles}. */
export interface WalkOptions {
  /** The allowed roots and the denied paths (see `confine`). */
  confinement: Confinement;
  signal: AbortSignal;
  /** Directory names not descended into (e.g. `.git`). */
  skipDirectory?(name: string): boolean;
  /** Called before a directory's entries are listed (e.g. to read its `.gitignore`); `relative` is `''` at the start. */
  enterDirectory?(relative: string, absolute: string): Promise<void>;
  /** Entries left out (neither listed nor descended into), by `/`-separated relative path. */
  exclude?(relative: string, isDirectory: boolean): boolean;
  /** Files listed at most; the walk stops there and reports `truncated`. */
  maxFiles: number;
}

/** What {@link walkFiles} found. */
export interface WalkResult {
  /** In depth-first order, entries of a directory sorted by name. */
  files: WalkedFile[];
  /** Symlinks skipped because their target lies outside every root. */
  escapedSymlinks: number;
  /** Whether `maxFiles` was reached. */
  truncated: boolean;
}

/** Entries between abort checks and event-loop yields (a directory of a million files must stay cancellable). */
const CHECK_EVERY = 1000;

/**
 * Lists the regular files at or below `start`.
 *
 * @param start - a real path inside the roots (see `Confinement.resolvePath`); a file yields just itself.
 * @throws ToolInputError when `start` is outside the roots or denied (checked again here: defence in depth);
 *   the signal's reason when aborted.
 */
export async function walkFiles(start: string, options: WalkOptions): Promise<WalkResult> {
  const { confinement } = options;
  const result: WalkResult = { files: [], escapedSymlinks: 0, truncated: false };
  const info = await stat(start);
  if (!confinement.allows(start) || confinement.isDeniedFile(info)) throw new ToolInputError(`path is outside the allowed roots or denied to tools: ${start}`);
  if (!info.isDirectory()) {
    result.files.push({ path: start, relative: path.basename(start), size: info.size, mtimeMs: info.mtimeMs });
    return result;
  }
  let seen = 0;
  const listed = new Set<string>();
  const pending: string[] = [''];
  while (pending.length > 0) {
    const relativeDir = pending.pop() as string;
    await options.enterDirectory?.(relativeDir, path.join(start, relativeDir));
    const entries = await readSorted(path.join(start, relativeDir));
    const subdirectories: string[] = [];
    for (const entry of entries) {
      if (++seen % CHECK_EVERY === 0) {
        options.signal.throwIfAborted();
        await yieldToEventLoop();
      }
      const relative = relativeDir === '' ? entry.name : `${relativeDir}/${entry.name}`;
      const full = path.join(start, relative);
      if (confinement.isDenied(full)) continue;
      if (options.exclude?.(relative, entry.isDirectory())) continue;
      if (entry.isDirectory()) {
        if (options.skipDirectory?.(entry.name)) continue;
        const directory = await stat(full).catch(() => null);
        if (directory && !confinement.isDeniedFile(directory)) subdirectories.push(relative);
        continue;
      }
      const file = entry.isFile() ? await regularFile(full, confinement) : entry.isSymbolicLink() ? await followFileLink(full, confinement, result) : null;
      if (!file || listed.has(file.path)) continue;
      if (result.files.length >= options.maxFiles) {
        result.truncated = true;
        return result;
      }
      listed.add(file.path);
      result.files.push({ path: file.path, relative, size: file.size, mtimeMs: file.mtimeMs });
    }
    // Reverse so that popping visits subdirectories in name order.
    pending.push(...subdirectories.reverse());
  }
  return result;
}

async function readSorted(directory: string): Promise<Dirent[]> {
  const entries: Dirent[] = [];
  try {
    for await (const entry of await opendir(directory)) entries.push(entry);
  } catch {
    // An unreadable directory (permissions, removed meanwhile) is skipped rather than failing the whole walk.
    return [];
  }
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * A file named by another listing (`git ls-files`), confined like a walked one: `relative` is joined to `start`
 * (a real directory inside the roots), a symlink is followed only to a regular file inside the roots (one that
 * escapes is counted in `result.escapedSymlinks`), and denied paths, directories and other non-files are left out.
 */
export async function confinedFile(start: string, relative: string, confinement: Confinement, result: WalkResult): Promise<WalkedFile | null> {
  const full = path.join(start, relative);
  if (!isPathInside(start, full) || !confinement.allows(full)) return null;
  const info = await lstat(full).catch(() => null);
  if (!info) return null;
  const file = info.isSymbolicLink() ? await followFileLink(full, confinement, result) : info.isFile() ? await regularFile(full, confinement) : null;
  return file ? { path: file.path, relative, size: file.size, mtimeMs: file.mtimeMs } : null;
}

/** A regular file met in a listing, unless it is gone or denied by identity (a hard link to a denied file). */
async function regularFile(full: string, confinement: Confinement): Promise<{ path: string; size: number; mtimeMs: number } | null> {
  const info = await stat(full).catch(() => null);
  return info?.isFile() && !confinement.isDeniedFile(info) ? { path: full, size: info.size, mtimeMs: info.mtimeMs } : null;
}

/** The target of a symlink when it is a regular file inside the roots and not denied; counts targets that escape. */
async function followFileLink(link: string, confinement: Confinement, result: WalkResult): Promise<{ path: string; size: number; mtimeMs: number } | null> {
  const target = await realpath(link).catch(() => null);
  if (target === null || confinement.isDenied(target)) return null;
  if (!confinement.allows(target)) {
    result.escapedSymlinks++;
    return null;
  }
  return regularFile(target, confinement);
}
