import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { ToolInputError } from '../../src/core/tool.js';
import { confine, resolveInsideRoots } from '../../src/tools/roots.js';
import { walkFiles } from '../../src/tools/walk.js';
import { makeTempDir } from './helpers.js';

/** Only roots, nothing denied (what these tests are about; denied paths: roots-denied.test.ts). */
const only = (...roots: string[]) => ({ roots, deniedPaths: [] });

describe('path confinement', () => {
  let base: string;
  let cleanup: () => Promise<void>;
  let root: string;
  let outside: string;

  beforeEach(async () => {
    ({ dir: base, cleanup } = await makeTempDir('roots'));
    root = path.join(base, 'root');
    outside = path.join(base, 'outside');
    await mkdir(path.join(root, 'logs'), { recursive: true });
    await mkdir(outside);
    await writeFile(path.join(root, 'logs', 'app.log'), 'hello\n');
    await writeFile(path.join(outside, 'secret.log'), 'secret\n');
  });
  afterEach(() => cleanup());

  it('resolves a path inside a root to its real path', async () => {
    await symlink(path.join(root, 'logs'), path.join(root, 'alias'));
    expect(await resolveInsideRoots(path.join(root, 'alias', 'app.log'), only(root))).toBe(path.join(root, 'logs', 'app.log'));
    expect(await resolveInsideRoots(root, only(root))).toBe(root);
  });

  it('accepts roots given through a symlink', async () => {
    await symlink(root, path.join(base, 'root-link'));
    const inside = path.join(root, 'logs', 'app.log');
    expect(await resolveInsideRoots(inside, only(path.join(base, 'root-link')))).toBe(inside);
  });

  it('rejects relative paths', async () => {
    await expect(resolveInsideRoots('logs/app.log', only(root))).rejects.toBeInstanceOf(ToolInputError);
    await expect(resolveInsideRoots('.', only(root))).rejects.toThrow(/absolute/);
  });

  it('rejects paths outside every root, also through ..', async () => {
    await expect(resolveInsideRoots(path.join(outside, 'secret.log'), only(root))).rejects.toThrow(/outside the allowed roots/);
    await expect(resolveInsideRoots(`${root}/../outside/secret.log`, only(root))).rejects.toBeInstanceOf(ToolInputError);
    await expect(resolveInsideRoots(`${root}-sibling`, only(root))).rejects.toBeInstanceOf(ToolInputError);
  });

  it('rejects a symlink inside a root whose target escapes', async () => {
    await symlink(path.join(outside, 'secret.log'), path.join(root, 'escape.log'));
    await symlink(outside, path.join(root, 'escape-dir'));
    await expect(resolveInsideRoots(path.join(root, 'escape.log'), only(root))).rejects.toThrow(/outside the allowed roots/);
    await expect(resolveInsideRoots(path.join(root, 'escape-dir', 'secret.log'), only(root))).rejects.toBeInstanceOf(ToolInputError);
  });

  it('rejects paths that do not exist', async () => {
    await expect(resolveInsideRoots(path.join(root, 'missing.log'), only(root))).rejects.toThrow(/does not exist/);
  });

  it('does not reveal whether a path outside the roots exists', async () => {
    // Both expectations are attached at once: awaiting one while the other promise may already have rejected made an
    // unhandled rejection whenever the second settled first (seen once in a loaded full run).
    await Promise.all([
      expect(resolveInsideRoots(path.join(outside, 'missing.log'), only(root))).rejects.toThrow(/outside the allowed roots/),
      expect(resolveInsideRoots(path.join(outside, 'secret.log'), only(root))).rejects.toThrow(/outside the allowed roots/),
    ]);
  });

  it('walks a tree, listing a file reached through a link once and skipping and counting links that escape', async () => {
    await symlink(path.join(outside, 'secret.log'), path.join(root, 'logs', 'escape.log'));
    await symlink(outside, path.join(root, 'escape-dir'));
    await symlink(path.join(root, 'logs', 'app.log'), path.join(root, 'inside.log'));
    await symlink(path.join(root, 'logs'), path.join(root, 'logs-alias'));
    await writeFile(path.join(root, 'logs', 'other.log'), 'other\n');
    const result = await walkFiles(root, { confinement: await confine(only(root)), signal: new AbortController().signal, maxFiles: 100 });
    expect(result.files.map((file) => file.relative)).toEqual(['inside.log', 'logs/other.log']);
    expect(result.files[0]?.path).toBe(path.join(root, 'logs', 'app.log'));
    expect(result.escapedSymlinks).toBe(2);
    expect(result.truncated).toBe(false);
  });

  it('stops listing at maxFiles and says so', async () => {
    for (let i = 0; i < 5; i++) await writeFile(path.join(root, `f${i}.log`), 'x\n');
    const result = await walkFiles(root, { confinement: await confine(only(root)), signal: new AbortController().signal, maxFiles: 3 });
    expect(result.files).toHaveLength(3);
    expect(result.truncated).toBe(true);
  });
});
