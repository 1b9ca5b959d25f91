/**
 * Path confinement: tools touch only paths below the directories the operator allowed ("roots") and never a
 * denied path (the server's own state, see `PathConfinement`). Paths are compared after `realpath`, so a symlink
 * or `..` cannot lead a tool out of its roots or into a denied path; denied files and directories are also
 * recognised by device and inode, so a hard link, a bind mount, or a directory swapped for a symlink between
 * listing a file and opening it does not reach them either.
 */
import { constants, type Stats } from 'node:fs';
import { type FileHandle, lstat, open, opendir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';

import type { PathConfinement } from '../core/confinement.js';
import { isPathInside } from '../core/path-inside.js';
import { ToolInputError } from '../core/tool.js';

/** Entries of a denied directory whose identity is remembered (the data directory holds a handful). */
const MAX_DENIED_ENTRIES = 10_000;
/**
 * Flags for opening a listed file: never through a symlink in the last component (listed paths are real), and
 * without blocking should a FIFO have replaced the file (it is then refused as not a regular file).
 */
const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/** Whether the absolute, normalised `candidate` is one of `roots` or below one of them. */
export function isInsideRoots(candidate: string, roots: readonly string[]): boolean {
  return roots.some((root) => isPathInside(root, candidate));
}

/** A file's identity on this machine. */
function identity(stats: Pick<Stats, 'dev' | 'ino'>): string {
  return `${stats.dev}:${stats.ino}`;
}

/** `realpath`, or `null` when the path does not exist (or cannot be resolved). */
async function realOrNull(target: string): Promise<string | null> {
  return realpath(target).catch(() => null);
}

/**
 * A {@link PathConfinement} resolved against the file system at one moment (build one per tool call with
 * {@link confine}): real roots, denied paths as given and as real paths, and the identities of the denied files
 * and directories and of the entries directly inside denied directories.
 */
export class Confinement {
  private constructor(
    /** Real paths of the roots that exist (a missing root contains nothing). */
    readonly roots: readonly string[],
    private readonly givenRoots: readonly string[],
    private readonly denied: readonly string[],
    private readonly deniedIdentities: ReadonlySet<string>,
  ) {}

  /** @internal use {@link confine}. */
  static async resolve(spec: PathConfinement): Promise<Confinement> {
    const givenRoots = spec.roots.map((root) => path.resolve(root));
    const roots = (await Promise.all(givenRoots.map(realOrNull))).filter((root): root is string => root !== null);
    const givenDenied = spec.deniedPaths.map((denied) => path.resolve(denied));
    const realDenied = (await Promise.all(givenDenied.map(realOrNull))).filter((denied): denied is string => denied !== null);
    const identities = new Set<string>();
    for (const denied of new Set(realDenied)) await rememberIdentities(denied, identities);
    return new Confinement([...new Set(roots)], givenRoots, [...new Set([...givenDenied, ...realDenied])], identities);
  }

  /** Whether the absolute `candidate` is a denied path or below one, as a path (see also {@link isDeniedFile}). */
  isDenied(candidate: string): boolean {
    return isInsideRoots(candidate, this.denied);
  }

  /** Whether a file or directory (its `stat`) is a denied one or directly inside a denied directory, by identity. */
  isDeniedFile(stats: Pick<Stats, 'dev' | 'ino'>): boolean {
    return this.deniedIdentities.has(identity(stats));
  }

  /** Whether the real path `candidate` lies inside a root and is not denied (as a path). */
  allows(candidate: string): boolean {
    return isInsideRoots(candidate, this.roots) && !this.isDenied(candidate);
  }

  /**
   * Resolves a user-supplied path to its real path and checks it lies inside a root and not in a denied place.
   *
   * A path outside every root, or denied, before resolution is rejected without touching the file system, so the
   * answer never tells whether something exists there.
   *
   * @param userPath - must be absolute.
   * @returns the real path (symlinks resolved).
   * @throws ToolInputError when the path is relative, outside every root, denied (as given, after `realpath`, or
   *   because it or a directory above it is a denied file or directory by identity), or does not exist.
   */
  async resolvePath(userPath: string): Promise<string> {
    if (!path.isAbsolute(userPath)) throw new ToolInputError(`path must be absolute: ${userPath}`);
    const lexical = path.resolve(userPath);
    if (!isInsideRoots(lexical, this.roots) && !isInsideRoots(lexical, this.givenRoots)) throw outsideRoots(userPath);
    if (this.isDenied(lexical)) throw deniedPath(userPath);
    const resolved = await realOrNull(lexical);
    if (resolved === null) throw new ToolInputError(`path does not exist or is not readable: ${userPath}`);
    if (!isInsideRoots(resolved, this.roots)) throw outsideRoots(userPath);
    if (this.isDenied(resolved) || (await this.reachesDeniedIdentity(resolved))) throw deniedPath(userPath);
    return resolved;
  }

  /**
   * Opens a listed regular file for reading, refusing a denied one by identity (also when a directory on its path
   * was swapped for a link since it was listed). The caller closes the handle.
   * @throws Error (code `EACCES`) when the file is denied; `ENOTFILE`-like errors as they are.
   */
  async openForReading(realPath: string): Promise<FileHandle> {
    if (this.isDenied(realPath)) throw deniedFileError(realPath);
    const handle = await open(realPath, READ_FLAGS);
    try {
      const info = await handle.stat();
      if (this.isDeniedFile(info)) throw deniedFileError(realPath);
      if (!info.isFile()) throw Object.assign(new Error(`not a regular file: ${realPath}`), { code: 'EINVAL' });
      return handle;
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Whether the real path or any directory above it is a denied file or directory by identity. */
  private async reachesDeniedIdentity(resolved: string): Promise<boolean> {
    if (this.deniedIdentities.size === 0) return false;
    for (let current = resolved; ; current = path.dirname(current)) {
      const info = await stat(current).catch(() => null);
      if (info && this.isDeniedFile(info)) return true;
      if (path.dirname(current) === current) return false;
    }
  }
}

/**
 * Adds the identity of `denied` and, for a directory, of the entries directly inside it (not following links).
 * Entries of `/proc` are not listed: they cannot be hard-linked, and listing a process directory costs
 * milliseconds per call.
 */
async function rememberIdentities(denied: string, identities: Set<string>): Promise<void> {
  const info = await stat(denied).catch(() => null);
  if (!info) return;
  identities.add(identity(info));
  if (!info.isDirectory() || isInsideRoots(denied, ['/proc'])) return;
  const directory = await opendir(denied).catch(() => null);
  if (!directory) return;
  let seen = 0;
  for await (const entry of directory) {
    if (++seen > MAX_DENIED_ENTRIES) break;
    if (entry.isSymbolicLink()) continue;
    const child = await lstat(path.join(denied, entry.name)).catch(() => null);
    if (child) identities.add(identity(child));
  }
}

function outsideRoots(userPath: string): ToolInputError {
  return new ToolInputError(`path is outside the allowed roots: ${userPath}`);
}

function deniedPath(userPath: string): ToolInputError {
  return new ToolInputError(`path is denied to tools (it holds the server's own state): ${userPath}`);
}

function deniedFileError(realPath: string): Error {
  return Object.assign(new Error(`denied to tools: ${realPath}`), { code: 'EACCES' });
}

/**
 * Resolves a confinement against the file system; build one per tool call (roots and denied files may change).
 * @throws TypeError when `spec` is not a `{roots, deniedPaths}` object (a bare roots array would drop the
 *   denied paths, so it is refused rather than accepted).
 */
export function confine(spec: PathConfinement): Promise<Confinement> {
  if (Array.isArray(spec) || !Array.isArray(spec?.roots) || !Array.isArray(spec?.deniedPaths)) {
    return Promise.reject(new TypeError('expected a path confinement {roots, deniedPaths} (pass the tool context), not a list of roots'));
  }
  return Confinement.resolve(spec);
}

/** A user path resolved inside its confinement, and that confinement (to walk and open files through). */
export interface ConfinedPath {
  /** Real path inside a root, not denied. */
  target: string;
  confinement: Confinement;
}

/**
 * Resolves a user-supplied path to its real path and checks it lies inside a root and not in a denied place; see
 * {@link Confinement.resolvePath}. Pass the tool context (or the preflight context) as `spec`.
 *
 * @param userPath - must be absolute.
 * @throws ToolInputError when the path is relative, outside every root (also via a symlink), denied, or does not
 *   exist; TypeError when `spec` is not a `{roots, deniedPaths}` object.
 */
export async function resolveConfined(userPath: string, spec: PathConfinement): Promise<ConfinedPath> {
  const confinement = await confine(spec);
  return { target: await confinement.resolvePath(userPath), confinement };
}

/** {@link resolveConfined} for tools that only need the real path. */
export async function resolveInsideRoots(userPath: string, spec: PathConfinement): Promise<string> {
  return (await resolveConfined(userPath, spec)).target;
}
