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
    await writeFile(path.join(root, 'src', 'config.py'), `AWS_ACCESS_KEY_ID = "${AWS_KEY}"\napi_key = "${API_KEY}"\npassword = "changeme"\n`);
    await writeFile(path.join(root, 'deploy.pem'), `${PEM}\n`);
    await writeFile(path.join(root, 'README.md'), '# Demo\n\nNothing secret here.\n');
    await writeFile(path.join(root, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]));
    await writeFile(path.join(root, 'blob.dat'), Buffer.from([1, 2, 0, 3]));
    await writeFile(path.join(root, 'node_modules', 'dep', 'index.js'), `const k = "${AWS_KEY}";\n`);
  });
  afterEach(() => cleanup());

  async function audit(target = root) {
    const context = makeContext([root]);
    const result = await auditRepositoryTool.run({ path: target }, context);
    auditRepositoryTool.outputSchema?.parse(result.structuredContent);
    return { result, report: result.structuredContent as unknown as AuditReport, context };
  }

  it('finds planted secrets by file and line without ever returning their values', async () => {
    const { result, report, context } = await audit();
    expect(report.secrets).toEqual([
      { path: 'deploy.pem', line: 1, kind: 'private-key', preview: '----…' },
      { path: 'src/config.py', line: 1, kind: 'aws-access-key-id', preview: 'AKIA…' },
      { path: 'src/config.py', line: 2, kind: 'credential-assignment', preview: 'Zx9Q…' },
      // A default password is a password all the same.
      { path: 'src/config.py', line: 3, kind: 'password', preview: 'ch…' },
    ]);
    expect(report.secretCount).toBe(4);
    const everything = JSON.stringify({ result, statuses: context.statuses });
    for (const value of [AWS_KEY, PEM_BODY, API_KEY, AWS_KEY.slice(4), API_KEY.slice(4)]) {
      expect(everything).not.toContain(value);
    }
  });

  it('counts files and lines per language, skipping node_modules and binary files', async () => {
    const { report } = await audit();
    expect(report).toMatchObject({ files: 4, lines: 11, skipped: { binary: 2, tooLarge: 0, unreadable: 0 } });
    expect(report.languages).toEqual([
      { language: 'Markdown', files: 1, lines: 3 },
      { language: 'PEM', files: 1, lines: 3 },
      { language: 'Python', files: 1, lines: 3 },
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
    const { report } = await audit();
    expect(report.git).toMatchObject({ available: true, reason: null, commits: 2, authors: [{ name: 'Test Author', commits: 2 }] });
    expect(Object.values(report.git.perWeek).reduce((a, b) => a + b, 0)).toBe(2);
    expect(report.git.lastCommitAt).not.toBeNull();
    // .git itself is never walked.
    expect(report.largestFiles.some((file) => file.path.startsWith('.git/'))).toBe(false);
  });

  it('rejects a file, a relative path and a path outside the roots in preflight', async () => {
    const preflight = (p: string) => auditRepositoryTool.preflight?.({ path: p }, { roots: [path.join(root, 'src')], deniedPaths: [] });
    await expect(preflight(path.join(root, 'src', 'index.ts'))).rejects.toThrow(/not a directory/);
    await expect(preflight('src')).rejects.toBeInstanceOf(ToolInputError);
    await expect(preflight(root)).rejects.toBeInstanceOf(ToolInputError);
    await expect(preflight(path.join(root, 'src'))).resolves.toBeUndefined();
  });
});
