/**
 * Issue 11 item 5: every instance of one store needs the same server secret (it signs tasks/list cursors and MRTR
 * requestStates, which any instance must verify). Real `serve` processes on one PostgreSQL database and one SQLite
 * file; the refusal is exit 1 with one line, and the database never holds a `MCP_TASKS_SECRET` in clear.
 */
import { join } from 'node:path';

import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { ensureBuilt } from './support.js';

const SECRET = 'shared-secret-test-0123456789abcdef';
const OTHER = 'another-secret-test-0123456789abcdef';

describe('one server secret per store', () => {
  const temp = makeTempDir('mcp-tasks-secret-');
  const databases: TestDatabase[] = [];
  const running: ServerProcess[] = [];
  afterEach(async () => {
    for (const server of running.splice(0)) await server.stop();
  });
  afterAll(async () => {
    for (const database of databases) await database.drop();
    temp.remove();
  });

  const serve = async (name: string, store: string, env: Record<string, string>): Promise<ServerProcess> => {
    ensureBuilt();
    const server = await startServerProcess(join(temp.dir, name), ['--store', store, '--no-worker'], env);
    running.push(server);
    return server;
  };
  const refusal = (start: Promise<unknown>): Promise<string> =>
    start.then(
      () => 'started',
      (error: unknown) => String((error as Error).message),
    );
  const secretRow = async (url: string): Promise<Record<string, unknown>> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query('SELECT * FROM mcp_tasks.server_secret')).rows[0] as Record<string, unknown>;
    } finally {
      await client.end();
    }
  };

  it('PostgreSQL with MCP_TASKS_SECRET: the same secret starts on every instance, another is refused (exit 1, one line); only a digest is stored', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const first = await serve('pg-a', database.url, { MCP_TASKS_SECRET: SECRET });
    // The banner does not suggest the data directory holds anything of a PostgreSQL deployment (newcomer, stop 40).
    expect(first.log()).toMatch(/data dir: \S+ \(not used: the tasks and the secret are elsewhere\)\n/);
    await serve('pg-b', database.url, { MCP_TASKS_SECRET: SECRET });
    const refused = await refusal(serve('pg-c', database.url, { MCP_TASKS_SECRET: OTHER }));
    expect(refused).toMatch(/exited early \(1\)/);
    expect(refused).toMatch(
      /mcp-tasks: cannot agree on the server secret with store postgres:.*MCP_TASKS_SECRET differs from the secret the other instances of this store use/,
    );
    expect(refused).not.toMatch(/\n\s+at /);
    const row = await secretRow(database.url);
    expect(row).toMatchObject({ mode: 'verifier', secret: null });
    expect(JSON.stringify(row)).not.toContain(SECRET);
    expect(JSON.stringify(row)).not.toContain(Buffer.from(SECRET).toString('base64url'));
  });

  it('PostgreSQL without MCP_TASKS_SECRET: the secret is kept in the database and shared; an instance bringing another secret is refused', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    expect((await serve('kept-a', database.url, {})).log()).toMatch(/data dir: \S+ \(not used: the tasks and the secret are elsewhere\)\n/);
    await serve('kept-b', database.url, {});
    const row = await secretRow(database.url);
    expect(row).toMatchObject({ mode: 'kept', verifier: null });
    expect(String(row.secret)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await refusal(serve('kept-c', database.url, { MCP_TASKS_SECRET: OTHER }))).toMatch(/MCP_TASKS_SECRET differs/);
  });

  it('SQLite: two processes on one file with different data directories (different secret files) are refused; with one MCP_TASKS_SECRET both start', async () => {
    const file = join(temp.dir, 'shared', 'tasks.db');
    // A SQLite store outside the data directory: only the secret file is there.
    expect((await serve('sqlite-a', file, {})).log()).toMatch(/data dir: \S+ \(the secret file only: the tasks are in the store below\)\n/);
    expect(await refusal(serve('sqlite-b', file, {}))).toMatch(/secret in .*secret differs from the one the other instances of this store use/);
    const second = join(temp.dir, 'shared-2', 'tasks.db');
    expect((await serve('sqlite-c', second, { MCP_TASKS_SECRET: SECRET })).log()).toMatch(
      /data dir: \S+ \(not used: the tasks and the secret are elsewhere\)\n/,
    );
    // Control: a store in the data directory (no note after its path).
    expect((await serve('sqlite-inside', join(temp.dir, 'sqlite-inside', 'tasks.db'), {})).log()).toMatch(/data dir: \S+\n/);
    await serve('sqlite-d', second, { MCP_TASKS_SECRET: SECRET });
  });
});
