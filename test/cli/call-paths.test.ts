/**
 * `mcp-tasks call` rewrites only the arguments a tool declares as local paths (issue 26 item 4): the
 * `"x-mcp-tasks-local-path": true` annotation on a property of its inputSchema, never an argument's name.
 * `publish_report`'s repository-relative `path` reaches the tool as typed; its `repo` is made absolute.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { withAbsoluteLocalPaths } from '../../src/cli/call.js';
import { advertisedSchema } from '../../src/server/tools-list.js';
import { builtinTools, cleanupLogsTool } from '../../src/tools/index.js';
import { publishReportTool } from '../../src/tools/publish-report/tool.js';
import { gitRepository } from '../helpers/git-repo.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { cliRunner, ensureBuilt } from './support.js';

describe('which arguments `call` makes absolute', () => {
  it('only those listed as local paths, and only when relative', () => {
    const args = { repo: 'work/reports', path: 'reports/a.md', root: 'logs', other: 'x' };
    expect(withAbsoluteLocalPaths(args, ['repo'], '/home/u')).toEqual({ repo: '/home/u/work/reports', path: 'reports/a.md', root: 'logs', other: 'x' });
    expect(withAbsoluteLocalPaths({ repo: '/abs' }, ['repo'], '/home/u')).toEqual({ repo: '/abs' });
    expect(withAbsoluteLocalPaths({ path: 'a' }, [], '/home/u')).toEqual({ path: 'a' });
  });

  it('the built-in tools declare their local paths in the advertised inputSchema: publish_report its repo, not its path', () => {
    const annotated = Object.fromEntries(
      [...builtinTools({ roots: ['/tmp'] }), cleanupLogsTool({ writableRoots: ['/tmp'] }), publishReportTool({ writableRoots: ['/tmp'] })].map((tool) => {
        const properties = (advertisedSchema(tool.inputSchema, 'input') as { properties?: Record<string, Record<string, unknown>> }).properties ?? {};
        return [tool.name, Object.keys(properties).filter((name) => properties[name]?.['x-mcp-tasks-local-path'] === true)];
      }),
    );
    expect(annotated).toEqual({
      analyze_logs: ['path'],
      audit_repository: ['path'],
      check_infrastructure: [],
      cleanup_logs: ['path'],
      publish_report: ['repo'],
    });
  });
});

describe('mcp-tasks call publish_report with relative paths (spawned CLI, real server, real git)', () => {
  const temp = makeTempDir('mcp-tasks-cli-paths-');
  const root = join(temp.dir, 'writable');
  let server: ServerProcess;
  let repo: string;
  const env: NodeJS.ProcessEnv = { ...process.env, MCP_TASKS_CLIENT_STATE: join(temp.dir, 'tasks.json') };
  delete env.MCP_TASKS_URL;
  delete env.MCP_TASKS_TOKEN;
  const { cli } = cliRunner(env);

  beforeAll(async () => {
    ensureBuilt();
    repo = gitRepository(root);
    server = await startServerProcess(join(temp.dir, 'data'), ['--writable-root', root, '--root', root]);
  });
  afterAll(async () => {
    await server?.stop();
    temp.remove();
  });

  it('the documented repository-relative path works from another directory; the repo given relative to the shell is found', async () => {
    const cwd = dirname(root); // the shell is above the writable root: repo is "writable/reports" from here
    const args = { repo: relative(cwd, repo), path: 'reports/errors.md', content: '# Errors\n' };
    const run = await cli(['call', 'publish_report', '--args', JSON.stringify(args), '--url', server.url, '--json'], cwd);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).result.structuredContent).toMatchObject({ repo, path: 'reports/errors.md' });
    expect(readFileSync(join(repo, 'reports/errors.md'), 'utf8')).toBe('# Errors\n');
    expect(existsSync(join(cwd, 'reports'))).toBe(false);
  });
});
