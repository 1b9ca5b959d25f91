/**
 * Denied paths (the server's own state) inside the roots: the path checks refuse them however they are reached —
 * as given, through `..`, a symlink, a hard link, a directory swapped for a link after listing — and the walk
 * neither lists nor descends into them. The end-to-end attack over HTTP is test/e2e/server-state-denied.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { link, mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { serverStatePaths } from '../../src/core/confinement.js';
import { ToolInputError } from '../../src/core/tool.js';
import { confine, resolveInsideRoots } from '../../src/tools/roots.js';
import { walkFiles } from '../../src/tools/walk.js';
import { makeTempDir } from './helpers.js';

describe('denied paths inside the roots', () => {
  let root: string;
  let data: string;
  let cleanup: () => Promise<void>;
  let spec: { roots: string[]; deniedPaths: string[] };

  beforeEach(async () => {
    ({ dir: root, cleanup } = await makeTempDir('denied'));
    data = path.join(root, 'data');
    await mkdir(path.join(root, 'logs'), { recursive: true });
    await mkdir(data);
    await writeFile(path.join(root, 'logs', 'app.log'), 'hello\n');
    await writeFile(path.join(data, 'secret'), 'c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0\n');
    await writeFile(path.join(data, 'tasks.db'), 'pages\n');
    await writeFile(path.join(root, 'tokens.json'), '{"tokens":[]}\n');
    spec = { roots: [root], deniedPaths: serverStatePaths({ dataDir: data, tokenFile: path.join(root, 'tokens.json') }).map((state) => state.path) };
  });
  afterEach(() => cleanup());

  const denied = /denied to tools/;

  it('refuses the data directory, files in it (existing or not, without telling which) and the token file', async () => {
    for (const target of [
      data,
      path.join(data, 'secret'),
      path.join(data, 'tasks.db-wal'),
      path.join(data, 'missing', 'deeper'),
      path.join(root, 'tokens.json'),
    ]) {
      await expect(resolveInsideRoots(target, spec), target).rejects.toThrow(denied);
    }
    await expect(resolveInsideRoots(path.join(data, 'secret'), spec)).rejects.toBeInstanceOf(ToolInputError);
    // The rest of the root stays readable.
    expect(await resolveInsideRoots(root, spec)).toBe(root);
    expect(await resolveInsideRoots(path.join(root, 'logs', 'app.log'), spec)).toBe(path.join(root, 'logs', 'app.log'));
  });

  it('refuses them through `..` segments and through symlinks to the directory or to one file', async () => {
    await symlink(data, path.join(root, 'logs', 'data-link'));
    await symlink(path.join(data, 'secret'), path.join(root, 'logs', 'secret.log'));
    await symlink(path.join(root, 'tokens.json'), path.join(root, 'logs', 'tokens.log'));
    for (const target of [
      `${root}/logs/../data/secret`,
      `${root}/logs/../data`,
      `${root}/data/../data/./secret`,
      path.join(root, 'logs', 'data-link'),
      path.join(root, 'logs', 'data-link', 'secret'),
      path.join(root, 'logs', 'secret.log'),
      path.join(root, 'logs', 'tokens.log'),
    ]) {
      await expect(resolveInsideRoots(target, spec), target).rejects.toThrow(denied);
    }
  });

  it('refuses a hard link to the secret placed in the root (recognised by device and inode)', async () => {
    await link(path.join(data, 'secret'), path.join(root, 'logs', 'hard.log'));
    await expect(resolveInsideRoots(path.join(root, 'logs', 'hard.log'), spec)).rejects.toThrow(denied);
  });

  it('a root that is the data directory or inside it gives nothing', async () => {
    await mkdir(path.join(data, 'sub'));
    for (const inner of [data, path.join(data, 'sub')]) {
      const confined = { roots: [inner], deniedPaths: spec.deniedPaths };
      await expect(resolveInsideRoots(inner, confined)).rejects.toThrow(denied);
      await expect(walkFiles(inner, { confinement: await confine(confined), signal: new AbortController().signal, maxFiles: 100 })).rejects.toThrow(
        /denied to tools/,
      );
    }
  });

  it('the walk of a root containing the state neither lists nor counts it: not the directory, links into it, or a hard link', async () => {
    await symlink(data, path.join(root, 'logs', 'data-link'));
    await symlink(path.join(data, 'secret'), path.join(root, 'logs', 'secret.log'));
    await link(path.join(data, 'secret'), path.join(root, 'logs', 'hard.log'));
    const result = await walkFiles(root, { confinement: await confine(spec), signal: new AbortController().signal, maxFiles: 100 });
    expect(result.files.map((file) => file.relative)).toEqual(['logs/app.log']);
    expect(result.escapedSymlinks).toBe(0);
    // Negative control: without the denied paths the same walk lists the state (so the assertion above can fail);
    // logs/secret.log is the same file as data/secret, listed once under the name met first.
    const open = await walkFiles(root, { confinement: await confine({ roots: [root], deniedPaths: [] }), signal: new AbortController().signal, maxFiles: 100 });
    expect(open.files.map((file) => file.relative).sort()).toEqual(['data/secret', 'data/tasks.db', 'logs/app.log', 'logs/hard.log', 'tokens.json']);
  });

  it('a file listed before its directory was swapped for a link into the data directory is refused when opened', async () => {
    const swapped = path.join(root, 'swapped');
    await mkdir(swapped);
    await writeFile(path.join(swapped, 'secret'), 'innocent\n');
    const confinement = await confine(spec);
    const listed = await walkFiles(swapped, { confinement, signal: new AbortController().signal, maxFiles: 100 });
    expect(listed.files.map((file) => file.path)).toEqual([path.join(swapped, 'secret')]);
    await rename(swapped, path.join(root, 'moved-away'));
    await symlink(data, swapped);
    await expect(confinement.openForReading(path.join(swapped, 'secret'))).rejects.toThrow(/denied to tools/);
    // Negative control: the same open without denied paths reads the secret through the swapped directory.
    const handle = await (await confine({ roots: [root], deniedPaths: [] })).openForReading(path.join(swapped, 'secret'));
    expect((await handle.readFile('utf8')).startsWith('c2Vj')).toBe(true);
    await handle.close();
  });

  it('a FIFO in place of a listed file is refused at once instead of blocking the reader', async () => {
    const fifo = path.join(root, 'logs', 'pipe.log');
    const made = spawnSync('mkfifo', [fifo]);
    if (made.status !== 0 || !existsSync(fifo)) throw new Error(`mkfifo is needed for this test: ${made.stderr?.toString() ?? made.error?.message}`);
    await expect((await confine(spec)).openForReading(fifo)).rejects.toThrow(/not a regular file/);
  });

  it.runIf(process.platform === 'linux')("refuses this process's /proc entry (its environment holds MCP_TASKS_SECRET) also by its numeric name", async () => {
    const proc = { roots: ['/proc'], deniedPaths: spec.deniedPaths };
    for (const target of ['/proc/self/environ', `/proc/${process.pid}/environ`, '/proc/thread-self/environ']) {
      await expect(resolveInsideRoots(target, proc), target).rejects.toThrow(denied);
    }
    // Negative control: without the denied paths the same file resolves.
    expect(await resolveInsideRoots('/proc/self/environ', { roots: ['/proc'], deniedPaths: [] })).toBe(`/proc/${process.pid}/environ`);
  });

  it('refuses a bare list of roots, which would drop the denied paths', async () => {
    await expect(resolveInsideRoots(root, [root] as never)).rejects.toThrow(TypeError);
    await expect(confine({ roots: [root] } as never)).rejects.toThrow(/deniedPaths/);
  });
});

describe('serverStatePaths', () => {
  it('names the data directory, a store outside it with its side files, the token file, the configuration file and /proc/self on Linux', () => {
    expect(serverStatePaths({ dataDir: '/srv/app/data', storePath: '/srv/app/data/tasks.db', platform: 'darwin' })).toEqual([
      { path: '/srv/app/data', what: 'data directory' },
    ]);
    const all = serverStatePaths({
      dataDir: '/srv/app/data',
      storePath: '/var/db/tasks.db',
      tokenFile: '/etc/mcp/tokens.json',
      configFile: '/etc/mcp/mcp-tasks.json',
      platform: 'linux',
    });
    expect(all.map((state) => state.path)).toEqual([
      '/srv/app/data',
      '/var/db/tasks.db',
      '/var/db/tasks.db-wal',
      '/var/db/tasks.db-shm',
      '/var/db/tasks.db-journal',
      '/etc/mcp/tokens.json',
      '/etc/mcp/mcp-tasks.json',
      '/proc/self',
    ]);
  });
});
