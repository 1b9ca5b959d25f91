import { execFileSync } from 'node:child_process';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { OperationRecord } from '../../src/core/ledger.js';
import { IDEMPOTENCY_KEY_META_KEY } from '../../src/protocol/constants.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { gitRepository, operationCommits } from '../helpers/git-repo.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

function operationsOf(dataDir: string, taskId: string): Promise<OperationRecord[]> {
  const store = openSqliteTaskStore({ path: join(dataDir, 'tasks.db') });
  return store.listOperations({ taskId, limit: 10 }).finally(() => store.close());
}

function exitOf(server: ServerProcess): Promise<void> {
  const { child } = server;
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

describe('issue 12: publish_report on a real git repository, exactly one commit through every crash window', () => {
  let temp: ReturnType<typeof makeTempDir>;
  let root: string;
  let repo: string;
  let dataDir: string;
  const servers: ServerProcess[] = [];
  const serve = async (env: Record<string, string> = {}) => {
    const server = await startServerProcess(dataDir, ['--writable-root', root, '--root', root, '--lease-ms', '1000'], env);
    servers.push(server);
    return server;
  };
  const publish = (server: ServerProcess, args: Record<string, unknown>, key?: string) =>
    postModern(server.url, 'tools/call', {
      name: 'publish_report',
      arguments: { repo, ...args },
      ...(key ? { _meta: { [IDEMPOTENCY_KEY_META_KEY]: key } } : {}),
    });

  beforeEach(() => {
    temp = makeTempDir();
    root = join(temp.dir, 'writable');
    dataDir = join(temp.dir, 'data');
    repo = gitRepository(root);
  });
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.stop();
    temp.remove();
  });

  it('commits once with an Operation-Id trailer; a resent call with the key returns the task, other arguments get -32602', async () => {
    const server = await serve();
    const created = await publish(server, { path: 'reports/a.md', content: '# A\n' }, 'publish-a');
    const taskId = (created.body.result as any)?.taskId as string;
    expect(taskId, JSON.stringify(created.body)).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const done = await pollModernTask(server.url, taskId);
    expect(done.status).toBe('completed');
    const again = await publish(server, { path: 'reports/a.md', content: '# A\n' }, 'publish-a');
    expect((again.body.result as any).taskId).toBe(taskId);
    const conflict = await publish(server, { path: 'reports/a.md', content: '# B\n' }, 'publish-a');
    expect(conflict.body.error?.code).toBe(-32602);
    const commits = operationCommits(repo);
    expect(commits).toHaveLength(1);
    const [operation] = await operationsOf(dataDir, taskId);
    expect(operation).toMatchObject({ status: 'confirmed', effect: 'git.commit', target: repo, receipt: { commit: commits[0]?.slice(0, 40) } });
    expect(commits[0]).toContain(operation?.operationId);
    // mcp-tasks audit shows the call, the operation and the end of the task, and ops list shows nothing open.
    const audit = execFileSync(process.execPath, ['dist/cli/main.js', 'audit', '--data-dir', dataDir, '--tool', 'publish_report', '--json'], {
      encoding: 'utf8',
    });
    const entries = audit
      .trim()
      .split('\n')
      .map((entry) => JSON.parse(entry) as { kind: string; outcome: string; taskId: string | null });
    const kinds = entries.filter((entry) => entry.taskId === taskId).map((entry) => `${entry.kind}:${entry.outcome}`);
    expect(kinds).toEqual(['call:task working', 'operation:pending', 'operation:confirmed', 'task.ended:completed', 'call:task completed']);
    expect(entries.at(-1)).toMatchObject({ kind: 'call', outcome: 'refused', taskId: null, detail: { code: -32602 } });
    const open = execFileSync(process.execPath, ['dist/cli/main.js', 'ops', 'list', '--data-dir', dataDir], { encoding: 'utf8' });
    expect(open).toBe('no operations\n');
  });

  it("fromTask: the service resolves the caller's analyze_logs task and the report is its result", async () => {
    writeFileSync(join(root, 'app.log'), '2026-01-01T00:00:00Z ERROR db timeout\n2026-01-01T00:00:01Z ERROR db timeout\n');
    const server = await serve();
    const analysed = await postModern(server.url, 'tools/call', { name: 'analyze_logs', arguments: { path: join(root, 'app.log') } });
    const analysis = (analysed.body.result as any)?.taskId as string;
    expect(analysis, JSON.stringify(analysed.body)).toBeTruthy();
    await pollModernTask(server.url, analysis);
    const created = await publish(server, { path: 'reports/errors.md', fromTask: analysis });
    const done = await pollModernTask(server.url, (created.body.result as any).taskId);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    const file = execFileSync('git', ['-C', repo, 'show', 'HEAD:reports/errors.md'], { encoding: 'utf8' });
    expect(file).toContain(`Report of task ${analysis} (analyze_logs)`);
    const unknown = await publish(server, { path: 'reports/x.md', fromTask: 'AAAAAAAAAAAAAAAAAAAAAA' });
    expect(unknown.body.error).toMatchObject({ code: -32602, message: 'fromTask: task not found' });
  });

  for (const point of ['before_perform', 'after_perform', 'after_receipt'] as const) {
    it(`kill -9 at ${point}: after a restart exactly one commit, the operation confirmed, the task completed`, async () => {
      const doomed = await serve({ MCP_TASKS_TEST_CRASH_AT: point });
      const created = await publish(doomed, { path: `reports/${point}.md`, content: `# ${point}\n` });
      const taskId = (created.body.result as any)?.taskId as string;
      expect(taskId, JSON.stringify(created.body)).toBeTruthy();
      await exitOf(doomed);
      expect(doomed.child.signalCode).toBe('SIGKILL');
      expect(operationCommits(repo)).toHaveLength(point === 'before_perform' ? 0 : 1);
      const server = await serve();
      const done = await pollModernTask(server.url, taskId, { timeoutMs: 30_000 });
      expect(done.status, JSON.stringify(done)).toBe('completed');
      expect(operationCommits(repo)).toHaveLength(1);
      const [operation] = await operationsOf(dataDir, taskId);
      expect(operation?.status).toBe('confirmed');
      expect(operationCommits(repo)[0]).toContain(operation?.operationId);
    });
  }

  it('kill -9 after the commit with the repository gone at restart: failed with outcome_unknown, operation unknown, never a second commit; ops reconcile settles it later', async () => {
    const doomed = await serve({ MCP_TASKS_TEST_CRASH_AT: 'after_perform' });
    const created = await publish(doomed, { path: 'reports/u.md', content: '# U\n' });
    const taskId = (created.body.result as any).taskId as string;
    await exitOf(doomed);
    const moved = `${repo}.away`;
    renameSync(repo, moved);
    mkdirSync(repo);
    const server = await serve();
    const done = await pollModernTask(server.url, taskId, { timeoutMs: 30_000 });
    expect(done.status).toBe('failed');
    const result = await postModern(server.url, 'tasks/get', { taskId });
    expect(JSON.stringify(result.body.result)).toContain('outcome_unknown');
    const [operation] = await operationsOf(dataDir, taskId);
    expect(operation?.status).toBe('unknown');
    renameSync(repo, `${repo}.empty`);
    renameSync(moved, repo);
    expect(operationCommits(repo)).toHaveLength(1);
    const reconciled = execFileSync(
      process.execPath,
      ['dist/cli/main.js', 'ops', 'reconcile', operation?.operationId as string, '--data-dir', dataDir, '--writable-root', root, '--root', root],
      { encoding: 'utf8' },
    );
    expect(reconciled).toContain('confirmed');
    const [after] = await operationsOf(dataDir, taskId);
    expect(after?.status).toBe('confirmed');
    expect(operationCommits(repo)).toHaveLength(1);
  });
});
