import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { TaskJournal } from '../../src/client/index.js';
import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { createTestDatabase, emptyTaskStore, type PrivateCluster, startPrivateCluster, type TestDatabase, withDatabase } from '../helpers/postgres.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

// `mcp-tasks serve --store postgres://…` (and MCP_TASKS_STORE) as an operator runs it: real processes, real HTTP,
// a real PostgreSQL server.

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const TOOLS = resolve(import.meta.dirname, '../fixtures/recovery-tools.mjs');
const ARGS = ['--no-builtins', '--fixtures', 'conformance', '--tools', TOOLS, '--lease-ms', '600'];

let database: TestDatabase;
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await emptyTaskStore(database.url);
});
afterAll(async () => {
  await database?.drop();
});

async function serve(args: string[], env: Record<string, string> = {}): Promise<ServerProcess> {
  const temp = makeTempDir();
  cleanups.push(() => temp.remove());
  const server = await startServerProcess(join(temp.dir, 'data'), [...ARGS, ...args], env);
  cleanups.push(() => server.stop());
  return server;
}

async function create(url: string, name: string, args: Record<string, unknown>): Promise<string> {
  const response = await postModern(url, 'tools/call', { name, arguments: args });
  const taskId = response.body.result?.taskId;
  if (typeof taskId !== 'string') throw new Error(`no task: ${JSON.stringify(response.body)}`);
  return taskId;
}

/**
 * In a server's JSON log lines, those of `message`: how many were written whole (with their error) and how many
 * failures they account for (each whole line, plus the `repeats` of its window's summary line).
 */
function outageLog(log: string, message: string): { whole: number; counted: number } {
  let whole = 0;
  let counted = 0;
  for (const line of log.split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { msg?: string; err?: unknown; repeats?: number };
    if (entry.msg === message && entry.err !== undefined) {
      whole += 1;
      counted += 1;
    } else if (entry.msg?.startsWith(`${message} — `) && typeof entry.repeats === 'number') counted += entry.repeats;
  }
  return { whole, counted };
}

/** `serve` that is expected to fail at start: exit status and every line it printed. */
function serveFailing(args: string[], env: Record<string, string> = {}) {
  const temp = makeTempDir();
  try {
    const result = spawnSync(process.execPath, [MAIN, 'serve', '--port', '0', '--data-dir', temp.dir, ...args], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, ...env },
    });
    return { status: result.status, lines: result.stderr.trim().split('\n'), wroteSqlite: existsSync(join(temp.dir, 'tasks.db')) };
  } finally {
    temp.remove();
  }
}

describe('serve on PostgreSQL', () => {
  it('--store postgres://… keeps tasks in the database: any instance on it answers for them, the password is never shown', async () => {
    const url = new URL(database.url);
    url.password = 'not-shown-anywhere';
    const a = await serve(['--store', url.toString()]);
    const b = await serve([], { MCP_TASKS_STORE: url.toString() });
    for (const server of [a, b]) {
      expect(server.log()).toMatch(/store: +postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/mcp_tasks_t_/);
      expect(server.log()).not.toContain('not-shown-anywhere');
    }
    const taskId = await create(a.url, 'slow_compute', { seconds: 0, label: 'pg' });
    expect((await pollModernTask(a.url, taskId)).status).toBe('completed');
    const fromB = await pollModernTask(b.url, taskId);
    expect(fromB.result).toMatchObject({ content: [{ type: 'text', text: 'Computed pg after 0s' }] });
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      expect((await client.query('SELECT status FROM mcp_tasks.tasks WHERE task_id = $1', [taskId])).rows).toEqual([{ status: 'completed' }]);
    } finally {
      await client.end();
    }
  });

  it('kill -9 mid-run and a restart on the same database: idempotent tasks re-run to completion, others fail as interrupted', async () => {
    const temp = makeTempDir();
    cleanups.push(() => temp.remove());
    const first = await serve(['--store', database.url]);
    const logs = { idempotent: join(temp.dir, 'idempotent.log'), fragile: join(temp.dir, 'fragile.log') };
    const idempotentId = await create(first.url, 'idempotent_job', { log: logs.idempotent });
    const fragileId = await create(first.url, 'fragile_job', { log: logs.fragile });
    for (const log of Object.values(logs)) await expect.poll(() => (existsSync(log) ? readFileSync(log, 'utf8') : ''), { timeout: 15_000 }).toContain('run');

    await first.kill9();
    for (const log of Object.values(logs)) writeFileSync(`${log}.release`, '');
    const second = await serve(['--store', database.url]);
    expect((await pollModernTask(second.url, idempotentId)).status).toBe('completed');
    expect(readFileSync(logs.idempotent, 'utf8').trim().split('\n')).toEqual(['run', 'run']);
    const fragile = await pollModernTask(second.url, fragileId);
    expect(fragile).toMatchObject({ status: 'failed', error: { code: -32603, data: { reason: 'interrupted' } } });
    expect(readFileSync(logs.fragile, 'utf8').trim().split('\n')).toEqual(['run']);
  });

  it('an unreachable database at start: exit 1, one line naming the store and the cause, no stack trace, no SQLite file', () => {
    const result = serveFailing(['--store', 'postgres://postgres:secret@127.0.0.1:1/nowhere']);
    expect(result.status).toBe(1);
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]).toMatch(
      /^mcp-tasks: cannot open the task store postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/nowhere: Task store unavailable: cannot connect \(.*ECONNREFUSED.*\)$/,
    );
    expect(result.wroteSqlite).toBe(false);
  });

  it('a database with a newer schema at start: exit 1, one line saying to upgrade', async () => {
    const newer = await createTestDatabase();
    try {
      const client = new pg.Client({ connectionString: newer.url });
      await client.connect();
      await client.query('CREATE SCHEMA mcp_tasks');
      await client.query(
        'CREATE TABLE mcp_tasks.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      await client.query("INSERT INTO mcp_tasks.schema_migrations (version, name) VALUES (1, 'initial'), (999, 'from a newer mcp-tasks')");
      await client.end();
      const result = serveFailing([], { MCP_TASKS_STORE: newer.url });
      expect(result.status).toBe(1);
      const known = POSTGRES_MIGRATIONS.at(-1)?.version;
      expect(result.lines).toEqual([
        expect.stringMatching(
          new RegExp(
            `^mcp-tasks: cannot open the task store postgres:.*: task store schema version 999 is newer than this mcp-tasks knows \\(${known}\\), and migration 999 \\("from a newer mcp-tasks"\\) is not marked compatible with older code: upgrade mcp-tasks$`,
          ),
        ),
      ]);
    } finally {
      await newer.drop();
    }
  });
});

describe('serve on a PostgreSQL server that goes away', () => {
  let cluster: PrivateCluster;
  beforeAll(() => {
    cluster = startPrivateCluster();
  }, 120_000);
  afterAll(() => cluster?.destroy());

  it('task requests answer -32603 "Task store unavailable" while it is down (no crash, no hang) and work again when it is back', async () => {
    const temp = makeTempDir();
    cleanups.push(() => temp.remove());
    const server = await serve(['--store', withDatabase(cluster.url, 'postgres')]);
    const doneId = await create(server.url, 'slow_compute', { seconds: 0, label: 'outage' });
    expect((await pollModernTask(server.url, doneId)).status).toBe('completed');
    const log = join(temp.dir, 'running.log');
    const runningId = await create(server.url, 'idempotent_job', { log });
    await expect.poll(() => (existsSync(log) ? readFileSync(log, 'utf8') : ''), { timeout: 15_000 }).toContain('run');

    const logBefore = server.log().length;
    const haltedAt = Date.now();
    cluster.halt();
    try {
      for (const request of [
        () => postModern(server.url, 'tasks/get', { taskId: runningId }),
        () => postModern(server.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'down' } }),
        () => postModern(server.url, 'tasks/cancel', { taskId: runningId }),
      ]) {
        const started = Date.now();
        // Seconds of idling (the halt) can outlast the server's keep-alive: a reused socket the server closed just
        // then fails before the request is sent. That one is sent again; a dead server would fail again.
        const response = await request().catch((error: unknown) => {
          if (!/other side closed/.test(String((error as { cause?: unknown }).cause))) throw error;
          return request();
        });
        expect(response.body.error).toEqual({ code: -32603, message: 'Task store unavailable', data: { reason: 'store_unavailable' } });
        expect(Date.now() - started).toBeLessThan(15_000);
      }
      // The requestor: the server cannot know whether the call was recorded, so its outcome is unknown (exit 8), not
      // failed (2) — and the journal keeps the call for resume (stop 43's review).
      const journal = join(temp.dir, 'client', 'tasks.json');
      const call = spawnSync(process.execPath, [MAIN, 'call', 'slow_compute', '--args', '{"seconds":0}', '--url', server.url, '--json'], {
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, MCP_TASKS_CLIENT_STATE: journal, MCP_TASKS_URL: '', MCP_TASKS_TOKEN: '' },
      });
      expect(call.status, call.stderr).toBe(8);
      expect(JSON.parse(call.stdout)).toMatchObject({ status: 'unknown', tool: 'slow_compute', exitCode: 8 });
      expect(call.stderr).toContain('whose task store failed while handling it (Task store unavailable)');
      expect((await new TaskJournal(journal).listPending()).map((entry) => entry.tool)).toEqual(['slow_compute']);
      // A terminal task read before never changes: it is still answered (from the terminal-task cache).
      expect((await postModern(server.url, 'tasks/get', { taskId: doneId })).body.result?.status).toBe('completed');
      expect(server.child.exitCode).toBeNull();
      // The log of the outage: each failure is counted, but its stack is written once per line and 10 s window
      // (a 10 s outage under load wrote 5,777 lines before). Every request above failed in the store: at least 4.
      await expect
        .poll(() => outageLog(server.log().slice(logBefore), 'task store failed').counted, { timeout: 15_000, interval: 250 })
        .toBeGreaterThanOrEqual(4);
      const { whole, counted } = outageLog(server.log().slice(logBefore), 'task store failed');
      // One whole line per window the outage has lasted so far (a slow machine stretches it over more windows).
      const windows = 1 + Math.ceil((Date.now() - haltedAt) / 10_000);
      expect(whole, `${whole} whole lines for ${counted} failures in ${windows} windows`).toBeLessThanOrEqual(windows);
      expect(whole).toBeLessThan(counted);
    } finally {
      cluster.resume();
    }
    await expect
      .poll(async () => (await postModern(server.url, 'tasks/get', { taskId: runningId })).body.result?.status, { timeout: 20_000, interval: 250 })
      .toBe('working');
    writeFileSync(`${log}.release`, '');
    expect((await pollModernTask(server.url, runningId)).status).toBe('completed');
    const after = await create(server.url, 'slow_compute', { seconds: 0, label: 'back' });
    expect((await pollModernTask(server.url, after)).status).toBe('completed');
  });

  it('a process stopped during the outage writes the count of what its open log window held back before it exits', async () => {
    const server = await serve(['--store', withDatabase(cluster.url, 'postgres')]);
    const logBefore = server.log().length;
    const haltedAt = Date.now();
    cluster.halt();
    try {
      for (let i = 0; i < 5; i++) {
        const response = await postModern(server.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: `down ${i}` } });
        expect(response.body.error?.message).toBe('Task store unavailable');
      }
      await server.stop();
      // Well within the first 10 s window: without the flush at exit the repeats would never be written.
      const { whole, counted } = outageLog(server.log().slice(logBefore), 'task store failed');
      expect(Date.now() - haltedAt).toBeLessThan(10_000);
      expect(whole).toBeGreaterThanOrEqual(1);
      expect(counted, server.log().slice(logBefore)).toBeGreaterThanOrEqual(5);
    } finally {
      cluster.resume();
    }
  });
});
