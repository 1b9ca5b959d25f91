/**
 * Smoke test of `bench/logs.mjs` (npm run bench:logs) at a tiny size: it writes both corpora, measures the read
 * baseline and the scan in child processes, and prints one row per run with the lines each counted. No timing is
 * asserted: the figures of such a run mean nothing.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

describe('bench:logs', () => {
  it('prints read and scan rows for the plain and the gzip corpus, every run counting the same lines', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['bench/logs.mjs', '--lines', '3000', '--files', '3', '--runs', '1'], {
      cwd: ROOT,
      timeout: 120_000,
    });
    const rows = stdout.split('\n').filter((line) => /^\| 3000 (plain|gzip) \|/.test(line));
    expect(
      rows.map((row) =>
        row
          .split('|')
          .slice(1, 3)
          .map((cell) => cell.trim()),
      ),
    ).toEqual([
      ['3000 plain', 'read'],
      ['3000 plain', 'scan this build'],
      ['3000 gzip', 'read'],
      ['3000 gzip', 'scan this build'],
    ]);
    const lines = rows.map((row) => Number((row.split('|')[3] as string).replace(/,/g, '')));
    // The demo corpus never cuts a stack trace, so a file may have a few more lines than asked for.
    expect(lines.every((n) => n === lines[0] && n >= 3000 && n < 3100)).toBe(true);
  }, 150_000);
});
