import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

/** A real git repository (one initial commit) inside `root`. */
export function gitRepository(root: string, name = 'reports'): string {
  const repo = join(root, name);
  mkdirSync(repo, { recursive: true });
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', repo, ...args], {
      env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' },
    });
  git('init', '-q');
  git('commit', '-q', '--allow-empty', '-m', 'init');
  return repo;
}

/** Commits of `repo` whose message carries an `Operation-Id` trailer (all branches). */
export function operationCommits(repo: string): string[] {
  const out = execFileSync('git', ['-C', repo, 'log', '--all', '--format=%H %(trailers:key=Operation-Id,valueonly,separator=%x2C)'], { encoding: 'utf8' });
  return out.split('\n').filter((line) => /^[0-9a-f]{40} \S/.test(line));
}
