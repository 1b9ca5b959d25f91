/**
 * `demo-corpus` into a directory that is not empty says so: files it does not write stay, and a scan counts them (a
 * newcomer's /tmp/corpus from an earlier run made the tour's counts differ without a word).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, describe, expect, it, vi } from 'vitest';

import { demoCorpusCommand } from '../../src/cli/demo-corpus.js';

const dirs: string[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function run(out: string): Promise<string> {
  let stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((stderr += String(chunk)), true));
  await demoCorpusCommand({ out, files: 2, lines: 50, seed: 1, gzipRatio: 0 });
  vi.restoreAllMocks();
  return stderr;
}

describe('demo-corpus into an existing directory', () => {
  it('says nothing for a new or empty directory (control) and names a directory that holds files', async () => {
    const root = await mkdtemp(join(tmpdir(), 'mcp-tasks-corpus-'));
    dirs.push(root);
    expect(await run(join(root, 'fresh'))).toBe('');
    await writeFile(join(root, 'fresh', 'left-over.log'), 'x\n');
    expect(await run(join(root, 'fresh'))).toMatch(
      /^demo-corpus: .*fresh is not empty \(\d+ entries\): its files of the same names are rewritten, the others are kept\n$/,
    );
  });
});
