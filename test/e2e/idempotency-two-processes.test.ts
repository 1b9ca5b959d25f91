import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { IDEMPOTENCY_KEY_META_KEY } from '../../src/protocol/constants.js';
import { gitRepository, operationCommits } from '../helpers/git-repo.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask } from '../helpers/wire.js';

const BARRIER_CALL = resolve(import.meta.dirname, '../fixtures/barrier-call.mjs');

/** Start one client process per url, wait until each is ready, release them together, collect the answers. */
async function releaseTogether(urls: readonly string[], params: (i: number) => Record<string, unknown>): Promise<Array<Record<string, any>>> {
  const clients = urls.map((url, i) => {
    const child = spawn(process.execPath, [BARRIER_CALL, url, JSON.stringify(params(i))], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout! });
    const queue: string[] = [];
    const waiters: Array<(line: string) => void> = [];
    lines.on('line', (line) => (waiters.length ? waiters.shift()!(line) : queue.push(line)));
    const next = () => new Promise<string>((r) => (queue.length ? r(queue.shift()!) : waiters.push(r)));
    return { child, next };
  });
  for (const client of clients) expect(await client.next()).toBe('ready');
  for (const client of clients) client.child.stdin!.write('go\n');
  return Promise.all(clients.map(async (client) => JSON.parse(await client.next()) as Record<string, any>));
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`issue 12: one key, two server processes, two client processes released by a barrier (${backend})`, () => {
    let database: TestDatabase | undefined;
    let temp: ReturnType<typeof makeTempDir>;
    let root: string;
    let repo: string;
    let tests = 0;
    const servers: ServerProcess[] = [];
    // One pair of servers for the describe block (the tests use distinct keys), a fresh repository per test.
    beforeAll(async () => {
      temp = makeTempDir();
      root = join(temp.dir, 'writable');
      mkdirSync(root);
      database = backend === 'postgres' ? await createTestDatabase() : undefined;
      const store = database ? database.url : join(temp.dir, 'shared.db');
      for (const name of ['a', 'b'])
        servers.push(
          await startServerProcess(join(temp.dir, `data-${name}`), ['--store', store, '--writable-root', root, '--root', root], {
            MCP_TASKS_SECRET: 'cd'.repeat(32),
          }),
        );
    });
    afterAll(async () => {
      for (const server of servers.splice(0)) await server.stop();
      await database?.drop();
      temp?.remove();
    });
    beforeEach(() => {
      repo = gitRepository(root, `reports-${(tests += 1)}`);
    });

    const params = (key: string, content = '# same\n') => ({
      name: 'publish_report',
      arguments: { repo, path: 'reports/race.md', content },
      _meta: { [IDEMPOTENCY_KEY_META_KEY]: key },
    });

    it('creates one task and one commit', async () => {
      const answers = await releaseTogether(
        servers.map((s) => s.url),
        () => params('race-key'),
      );
      const ids = answers.map((answer) => answer.result?.taskId);
      expect(ids[0], JSON.stringify(answers)).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(ids[1]).toBe(ids[0]);
      const done = await pollModernTask(servers[0]!.url, ids[0]);
      expect(done.status).toBe('completed');
      expect(operationCommits(repo)).toHaveLength(1);
    });

    it('the loser of a race with other arguments gets -32602; negative control: two keys make two tasks and two commits', async () => {
      const conflicting = await releaseTogether(
        servers.map((s) => s.url),
        (i) => params('race-conflict', `# ${i}\n`),
      );
      const errors = conflicting.filter((answer) => answer.error);
      expect(errors, JSON.stringify(conflicting)).toHaveLength(1);
      expect(errors[0]?.error).toMatchObject({ code: -32602 });
      expect(errors[0]?.error.message).toMatch(/different arguments/);
      const winner = conflicting.find((answer) => answer.result)?.result.taskId;
      expect((await pollModernTask(servers[0]!.url, winner)).status).toBe('completed');

      const distinct = await releaseTogether(
        servers.map((s) => s.url),
        (i) => ({ ...params(`race-distinct-${i}`), arguments: { repo, path: `reports/d${i}.md`, content: 'x' } }),
      );
      const ids = distinct.map((answer) => answer.result?.taskId);
      expect(new Set(ids).size).toBe(2);
      for (const id of ids) expect((await pollModernTask(servers[0]!.url, id)).status).toBe('completed');
      expect(operationCommits(repo)).toHaveLength(3);
    });
  });
}
