/**
 * Path confinement: tools read only below the directories the operator allowed ("roots"). Paths are compared
 * after `realpath`, so a symlink cannot lead a tool out of its roots.
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { ToolInputError } from '../core/tool.js';

/**
 * The roots with symlinks resolved; roots that do not exist are dropped (they can contain nothing).
 *
 * @param roots - absolute directory paths.
 */
export async function realRoots(roots: readonly string[]): Promise<string[]> {
  const resolved = await Promise.all(roots.map((root) => realpath(path.resolve(root)).catch(() => null)));
  return [...new Set(resolved.filter((root): root is string => root !== null))];
}

/** Whether the absolute, normalised `candidate` is one of `roots` or below one of them. */
export function isInsideRoots(candidate: string, roots: readonly string[]): boolean {
  return roots.some((root) => {
    const relative = path.relative(root, candidate);
    return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
  });
}

/**
 * Resolves a user-supplied path to its real path and checks it lies inside a root.
 *
 * A path that is outside every root before resolution is rejected without touching the file system, so the
 * answer never tells whether something exists outside the roots.
 *
 * @param userPath - must be absolute.
 * @param roots - allowed directories (absolute; resolved with `realpath` here too).
 * @returns the real path (symlinks resolved).
 * @throws ToolInputError when the path is relative, outside every root (also via a symlink), or does not exist.
 */
export async function resolveInsideRoots(userPath: string, roots: readonly string[]): Promise<string> {
  if (!path.isAbsolute(userPath)) throw new ToolInputError(`path must be absolute: ${userPath}`);
  const real = await realRoots(roots);
  const lexical = path.resolve(userPath);
  if (!isInsideRoots(lexical, real) && !isInsideRoots(lexical, roots.map((root) => path.resolve(root)))) {
    throw new ToolInputError(`path is outside the allowed roots: ${userPath}`);
  }
  let resolved: string;
  try {
    resolved = await realpath(lexical);
  } catch {
    throw new ToolInputError(`path does not exist or is not readable: ${userPath}`);
  }
  if (!isInsideRoots(resolved, real)) throw new ToolInputError(`path is outside the allowed roots: ${userPath}`);
  return resolved;
}
