import { execFile } from 'node:child_process';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { makeTempDir } from './helpers.js';

const BENCH = fileURLToPath(new URL('../../bench/log-grouping-accuracy.mjs', import.meta.url));
const LIBRARY = fileURLToPath(new URL('../../bench/lib/loghub.mjs', import.meta.url));

/** Runs a copy of the benchmark script; resolves with its exit code and output (a failing exit is not an error here). */
function run(script: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // Without MCP_TASKS_LOGHUB, so that the default location is what is looked up.
    const env = { ...process.env };
    delete env['MCP_TASKS_LOGHUB'];
    execFile(process.execPath, [script, ...args], { env }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
  });
}

describe('grouping benchmark without its data', () => {
  let dir: string;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    ({ dir, cleanup } = await makeTempDir('grouping-bench'));
  });
  afterEach(() => cleanup());

  it('names the default location and the argument to pass instead of crashing, in a clone without ../shared', async () => {
    // A clone elsewhere: the default data directory, ../shared/data/loghub next to the clone, does not exist.
    const script = path.join(dir, 'clone', 'bench', 'log-grouping-accuracy.mjs');
    await mkdir(path.join(path.dirname(script), 'lib'), { recursive: true });
    await copyFile(BENCH, script);
    await copyFile(LIBRARY, path.join(path.dirname(script), 'lib', 'loghub.mjs'));
    const { code, stderr } = await run(script);
    expect(code).toBe(1);
    expect(stderr).toContain(path.join(dir, 'shared', 'data', 'loghub'));
    expect(stderr).toContain('npm run bench:grouping -- /path/to/loghub');
    expect(stderr).not.toMatch(/^\s+at /m);
  });

  it('says which file is missing when a system directory is incomplete', async () => {
    await mkdir(path.join(dir, 'loghub', 'Android'), { recursive: true });
    const { code, stderr } = await run(BENCH, path.join(dir, 'loghub'));
    expect(code).toBe(1);
    expect(stderr).toContain(path.join(dir, 'loghub', 'Android', 'Android_2k.log'));
    expect(stderr).not.toMatch(/^\s+at /m);
  });
});
