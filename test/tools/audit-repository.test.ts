import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { ToolInputError } from '../../src/core/tool.js';
import type { AuditReport } from '../../src/tools/audit-repository/scan.js';
import { auditRepositoryTool } from '../../src/tools/audit-repository/tool.js';
import { makeContext, makeTempDir } from './helpers.js';

// Fake credentials, assembled at run time so that no scanner flags this test file itself.
const AWS_KEY = ['AKIA', 'Q3EXAMPLE7TESTKEY1'].join('').slice(0, 20);
const PEM_BODY = 'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun';
const PEM = [`-----BEGIN RSA ${'PRIVATE'} KEY-----`, PEM_BODY, `-----END RSA ${'PRIVATE'} KEY-----`].join('\n');
const API_KEY = 'Zx9Qw2Lm7Rt4Yp1Vb8Nc3Kd6';

const git = (cwd: string, ...args: string[]) =>
  promisify(execFile)('git', ['-c', 'user.name=Test Author', '-c', 'user.email=test@example.com', ...args], { cwd });

describe('audit_repository', () => {
  let root: string;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    ({ dir: root, cleanup } = await makeTempDir('audit'));
    await mkdir(path.join(root, 'src'));
    await mkdir(path.join(root, 'node_modules', 'dep'), { recursive: true });
    await writeFile(path.join(root, 'src', 'index.ts'), 'export const a = 1;\nexport const b = 2;\n');
    await writeFile(
      path.join(root, 'src', 'config.py'),
      `AWS_ACCESS_KEY_ID = "${AWS_KEY}"\napi_key = "${API_KEY}"\npassword = "changeme"\npassword = "Winter2024!"\n`,
    );
    await writeFile(path.join(root, 'deploy.pem'), `${PEM}\n`);
    await writeFile(path.join(root, 'README.md'), '# Demo\n\nNothing secret here.\n');
    await writeFile(path.join(root, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]));
    await writeFile(path.join(root, 'blob.dat'), Buffer.from([1, 2, 0, 3]));
    await writeFile(path.join(root, 'node_modules', 'dep', 'index.js'), `const k = "${AWS_KEY}";\n`);
  });
  afterEach(() => cleanup());

  async function audit(target = root, deniedPaths: string[] = []) {
    const context = makeContext([root], undefined, deniedPaths);
    const result = await auditRepositoryTool.run({ path: target, detail: 'full' }, context);
    auditRepositoryTool.outputSchema?.parse(result.structuredContent);
    return { result, report: result.structuredContent as unknown as AuditReport, context };
  }

  it('finds planted secrets by file and line without ever returning their values', async () => {
    const { result, report, context } = await audit();
    expect(report.secrets).toEqual([
      { path: 'deploy.pem', line: 1, kind: 'private-key', preview: '----…', fixture: false },
      { path: 'src/config.py', line: 1, kind: 'aws-access-key-id', preview: 'AKIA…', fixture: false },
      { path: 'src/config.py', line: 2, kind: 'credential-assignment', preview: 'Zx9Q…', fixture: false },
      { path: 'src/config.py', line: 4, kind: 'password', preview: 'Wi…', fixture: false },
    ]);
    // `password = "changeme"` on line 3 is a placeholder, not a secret.
    expect(report.secretCount).toBe(4);
    const everything = JSON.stringify({ result, statuses: context.statuses });
    for (const value of [AWS_KEY, PEM_BODY, API_KEY, AWS_KEY.slice(4), API_KEY.slice(4)]) {
      expect(everything).not.toContain(value);
    }
  });

  it('counts files and lines per language, skipping node_modules and binary files', async () => {
    const { report } = await audit();
    expect(report).toMatchObject({ listing: 'walk', files: 4, lines: 12, skipped: { binary: 2, tooLarge: 0, unreadable: 0 } });
    expect(report.languages).toEqual([
      { language: 'Python', files: 1, lines: 4 },
      { language: 'Markdown', files: 1, lines: 3 },
      { language: 'PEM', files: 1, lines: 3 },
      { language: 'TypeScript', files: 1, lines: 2 },
    ]);
    expect(report.largestFiles[0]?.path).toBe('deploy.pem');
    expect(report.largestFiles.map((file) => file.path)).not.toContain('node_modules/dep/index.js');
  });

  it('reports that the directory is not a git repository instead of failing', async () => {
    const { report } = await audit();
    expect(report.git).toMatchObject({ available: false, reason: 'not a git repository', commits: 0 });
  });

  it('summarises recent commits of a git repository', async () => {
    await git(root, 'init', '-q');
    await git(root, 'add', 'src/index.ts');
    await git(root, 'commit', '-q', '-m', 'first');
    await git(root, 'add', 'README.md');
    await git(root, 'commit', '-q', '-m', 'second');
    const { report, result } = await audit();
    expect(report.git).toMatchObject({ available: true, reason: null, commits: 2, authors: [{ name: 'Test Author', commits: 2 }], authorCount: 1 });
    expect((result.content[0] as { text: string }).text).toContain('Git: 2 commits since ');
    expect((result.content[0] as { text: string }).text).toContain(' by 1 author (Test Author 2).');
    expect(Object.values(report.git.perWeek).reduce((a, b) => a + b, 0)).toBe(2);
    expect(report.git.lastCommitAt).not.toBeNull();
    // .git itself is never walked.
    expect(report.largestFiles.some((file) => file.path.startsWith('.git/'))).toBe(false);
  });

  it('counts every author and says when the author and largest-file lists are cut', async () => {
    await git(root, 'init', '-q');
    // 12 authors: more than the 10 the structured report lists, and more than the 3 the text names.
    for (let i = 1; i <= 12; i++) {
      await writeFile(path.join(root, `file-${i}.txt`), `${'x'.repeat(100 * i)}\n`);
      await git(root, 'add', `file-${i}.txt`);
      await promisify(execFile)(
        'git',
        ['-c', `user.name=Author ${String(i).padStart(2, '0')}`, '-c', 'user.email=a@example.com', 'commit', '-q', '-m', `c${i}`],
        { cwd: root },
      );
    }
    const { report, result } = await audit();
    expect(report.git.authors).toHaveLength(10);
    expect(report.git.authorCount).toBe(12);
    const text = (result.content[0] as { text: string }).text;
    expect(text).toContain('Git: 12 commits since ');
    expect(text).toContain(' by 12 authors (Author 01 1, Author 02 1, Author 03 1, and 9 more).');
    expect(report.largestFiles).toHaveLength(10);
    expect(text).toMatch(/^Largest files: (?:[^,]+ \([\d,]+ bytes\), ){5}and 5 more in structuredContent\.$/m);
  });

  /** The build output and data that ignore rules exclude, and what they keep. */
  async function plantIgnored(): Promise<void> {
    await mkdir(path.join(root, 'dist'), { recursive: true });
    await mkdir(path.join(root, 'coverage'), { recursive: true });
    await writeFile(path.join(root, 'dist', 'bundle.js'), 'x();\n'.repeat(5000));
    await writeFile(path.join(root, 'coverage', 'lcov.info'), 'SF:x\n'.repeat(100));
    // Large enough to be among the largest files when they are listed at all.
    await writeFile(path.join(root, 'src', 'debug.log'), 'log line\n'.repeat(3000));
    await writeFile(path.join(root, 'src', 'keep.log'), 'kept by a negation\n'.repeat(1000));
    await writeFile(path.join(root, '.gitignore'), 'dist/\n*.log\nnode_modules/\n');
    await writeFile(path.join(root, 'src', '.gitignore'), '!keep.log\n');
    await mkdir(path.join(root, 'sub', 'coverage'), { recursive: true });
    await writeFile(path.join(root, 'sub', '.gitignore'), 'coverage\n');
    await writeFile(path.join(root, 'sub', 'coverage', 'x.js'), 'y();\n');
    await writeFile(path.join(root, 'sub', 'main.go'), 'package main\n'.repeat(500));
  }

  const names = (report: AuditReport) => report.largestFiles.map((file) => file.path);

  it('respects .gitignore outside a git work tree: build output does not dominate the language table', async () => {
    await plantIgnored();
    const { report, result } = await audit();
    // dist/, src/debug.log, node_modules/ and sub/coverage/.
    expect(report).toMatchObject({ listing: 'walk', ignoredEntries: 4 });
    expect(names(report)).not.toContain('dist/bundle.js');
    expect(names(report)).not.toContain('src/debug.log');
    expect(names(report)).not.toContain('sub/coverage/x.js');
    // Not ignored: a negated pattern, and a coverage directory that only sub/.gitignore names.
    expect(names(report)).toEqual(expect.arrayContaining(['src/keep.log', 'coverage/lcov.info', 'sub/main.go']));
    expect(report.languages.map((l) => l.language)).not.toContain('JavaScript');
    expect((result.content[0] as { text: string }).text).toContain('walking the tree, 4 files and directories left out by .gitignore rules');
  });

  it('lists tracked and untracked-not-ignored files with git ls-files in a work tree, never the denied data directory', async () => {
    await plantIgnored();
    await mkdir(path.join(root, 'data'));
    await writeFile(path.join(root, 'data', 'tasks.db'), Buffer.alloc(1_000_000, 1));
    await git(root, 'init', '-q');
    await git(root, 'add', 'src/index.ts', '.gitignore');
    await git(root, 'commit', '-q', '-m', 'first');
    // Tracked although ignored now (forced in): git lists it; so it counts.
    await git(root, 'add', '-f', 'src/debug.log');
    const { report, result } = await audit(root, [path.join(root, 'data')]);
    expect(report).toMatchObject({ listing: 'git', ignoredEntries: null });
    const listed = names(report);
    expect(listed).not.toContain('dist/bundle.js');
    expect(listed).not.toContain('data/tasks.db');
    expect(listed).toEqual(expect.arrayContaining(['src/debug.log', 'src/config.py', 'coverage/lcov.info']));
    expect(report.files).toBe(report.languages.reduce((sum, l) => sum + l.files, 0));
    expect((result.content[0] as { text: string }).text).toContain('as git lists them');
    // Without the denial the data directory would be listed: the test would notice a leak.
    const open = await audit(root);
    expect(names(open.report)).toContain('data/tasks.db');
  });

  it('marks findings in tests and fixtures, lists the others first, and says how many more there are', async () => {
    await mkdir(path.join(root, 'test', 'fixtures'), { recursive: true });
    const lines = Array.from({ length: 30 }, (_, i) => `api_key = "${API_KEY}${i}"`);
    await writeFile(path.join(root, 'test', 'fixtures', 'keys.ts'), `${lines.join('\n')}\n`);
    await writeFile(path.join(root, 'src', 'auth.spec.ts'), `const token = "${API_KEY}";\n`);
    const { report, result } = await audit();
    expect(report.secretCount).toBe(4 + 30 + 1);
    expect(report.fixtureSecretCount).toBe(31);
    expect(report.secrets.filter((s) => s.fixture).map((s) => s.path)).toEqual(['src/auth.spec.ts', ...lines.map(() => 'test/fixtures/keys.ts')]);
    const text = (result.content[0] as { text: string }).text;
    expect(text).toContain('Secret-like strings: 35 (4 outside tests and fixtures, 31 in test fixtures).');
    const shown = text.split('\n').filter((line) => line.startsWith('  ') && line.includes(':'));
    expect(shown[0]).toContain('deploy.pem:1 private-key');
    expect(shown.filter((line) => line.endsWith('[test fixture]'))).toHaveLength(16);
    expect(text).toContain('  … 15 more findings (see structuredContent)');
  });

  it('rejects a file, a relative path and a path outside the roots in preflight', async () => {
    const preflight = (p: string) => auditRepositoryTool.preflight?.({ path: p, detail: 'summary' }, { roots: [path.join(root, 'src')], deniedPaths: [] });
    await expect(preflight(path.join(root, 'src', 'index.ts'))).rejects.toThrow(/not a directory/);
    await expect(preflight('src')).rejects.toBeInstanceOf(ToolInputError);
    await expect(preflight(root)).rejects.toBeInstanceOf(ToolInputError);
    await expect(preflight(path.join(root, 'src'))).resolves.toBeUndefined();
  });
});
