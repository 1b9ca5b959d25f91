/**
 * publish_report commits to a repository that other git processes use at the same time (two server processes, two
 * runs of the tool): every commit must land exactly once. Found in a full `npm test` run, where
 * idempotency-two-processes saw 2 of 3 commits: besides `index.lock`, git reports contention as
 * `cannot lock ref 'HEAD'` and, when another `commit -- path` rebuilt the index between our `git add` and our commit,
 * as `pathspec '…' did not match any file(s) known to git` — both were failures before, now they are retried.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { isContention } from '../../src/tools/publish-report/git.js';
import { commitWithRetry } from '../../src/tools/publish-report/tool.js';
import { gitRepository } from '../helpers/git-repo.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const temp = makeTempDir('mcp-tasks-git-contention-');
afterAll(() => temp.remove());

const WRITERS = 8;
const ROUNDS = 4;

describe('publish_report under git contention', () => {
  it(`${WRITERS} writers × ${ROUNDS} rounds commit different files to one repository at once: every commit lands, none twice`, async () => {
    const repo = gitRepository(temp.dir, 'contended');
    const signal = new AbortController().signal;
    for (let round = 0; round < ROUNDS; round += 1) {
      await Promise.all(
        Array.from({ length: WRITERS }, async (_, writer) => {
          const path = `r${round}-w${writer}.md`;
          writeFileSync(join(repo, path), `# ${round} ${writer}\n`);
          await commitWithRetry(repo, ['commit', '--allow-empty', '-q', '-m', `report ${path}`, '--', path], path, signal);
        }),
      );
    }
    const subjects = execFileSync('git', ['-C', repo, 'log', '--format=%s'], { encoding: 'utf8' }).trim().split('\n');
    const reports = subjects.filter((subject) => subject.startsWith('report '));
    expect(reports).toHaveLength(WRITERS * ROUNDS);
    expect(new Set(reports).size).toBe(WRITERS * ROUNDS);
    // Every file is in HEAD's tree (none was committed empty after losing its staged file).
    const tree = execFileSync('git', ['-C', repo, 'ls-tree', '--name-only', 'HEAD'], { encoding: 'utf8' }).trim().split('\n');
    expect(tree.filter((name) => name.endsWith('.md'))).toHaveLength(WRITERS * ROUNDS);
  });

  it('classifies the contention messages git prints, and nothing else', () => {
    expect(isContention("fatal: Unable to create '/r/.git/index.lock': File exists.")).toBe(true);
    expect(isContention("fatal: cannot lock ref 'HEAD': is at 4ed686aa but expected e66965e9")).toBe(true);
    expect(isContention("error: pathspec 'a28' did not match any file(s) known to git")).toBe(true);
    expect(isContention("fatal: pathspec 'x.md' did not match any files")).toBe(false);
    expect(isContention('fatal: not a git repository (or any of the parent directories): .git')).toBe(false);
    expect(isContention("fatal: cannot lock ref 'refs/heads/main': reference already exists")).toBe(false);
  });
});
