/**
 * Smoke test of `bench/sqlite-statements.mjs` at a tiny size: every form runs on the store's schema (a form whose
 * statement no longer matches the store's SQL, or a claim that takes the wrong tasks, makes the script fail) and
 * prints one row. No timing is asserted: the figures of such a run mean nothing.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

describe('bench/sqlite-statements.mjs', () => {
  it('prints one row per statement form: three transitions and two claims', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['bench/sqlite-statements.mjs', '--rows', '200', '--rounds', '20'], {
      cwd: ROOT,
      timeout: 60_000,
    });
    const rows = stdout
      .split('\n')
      .map((line) => /^(transition|claim of 3)\s+([\d.]+) µs {2}(.+)$/.exec(line))
      .filter((match) => match !== null);
    expect(rows.map((match) => [match[1], match[3]])).toEqual([
      ['transition', 'two source flags (now)'],
      ['transition', 'status IN (SELECT … json_each(@from)) (before 6b463e1)'],
      ['transition', 'status IN (@a, @b)'],
      ['claim of 3', 'candidates, then one UPDATE … RETURNING each (now)'],
      ['claim of 3', 'UPDATE … WHERE task_id IN (SELECT … LIMIT) RETURNING (before 6b463e1)'],
    ]);
    expect(rows.every((match) => Number(match[2]) > 0)).toBe(true);
  }, 90_000);
});
