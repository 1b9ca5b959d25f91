import path from 'node:path';

/**
 * Whether the absolute, normalised `candidate` is `parent` or below it, compared as text (symlinks are not followed).
 * A name that merely starts with two dots (`..cache`) is below `parent`: only `..` itself, or `../` at the start,
 * leaves it — a check for `startsWith('..')` took `<root>/..cache/file` for a path outside.
 */
export function isPathInside(parent: string, candidate: string): boolean {
  const relative = path.relative(parent, candidate);
  return relative === '' || (relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative));
}
