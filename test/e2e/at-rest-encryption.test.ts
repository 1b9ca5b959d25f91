/**
 * At rest (issue 10 §3): with `MCP_TASKS_ENCRYPTION_KEY` set, a planted tool argument and a planted input answer
 * appear nowhere in the SQLite file, its WAL and SHM, nor in any column of any PostgreSQL table (read raw); without
 * the key they do (negative control). A wrong key gives a clear error and no crash; the old key as
 * `MCP_TASKS_ENCRYPTION_KEYS_OLD` reads the old rows again (rotation).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { IDEMPOTENCY_KEY_META_KEY } from '../../src/protocol/constants.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

const TOOLS = resolve(import.meta.dirname, '../fixtures/at-rest-tools.mjs');
const ELICITING = { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } };
const TABLES = ['tasks', 'task_outcomes', 'input_requests', 'task_steps', 'task_events', 'idempotency_keys', 'operations', 'audit_log'];

/**
 * Run the vault tool to completion with a planted argument and a planted answer; returns the task id. With an
 * idempotency key the task is written by the key's claim (its own insert path), which must encrypt as well.
 */
async function plant(url: string, secret: string, code: string, idempotencyKey?: string): Promise<string> {
  const meta = idempotencyKey === undefined ? {} : { _meta: { [IDEMPOTENCY_KEY_META_KEY]: idempotencyKey } };
  const created = await postModern(url, 'tools/call', { name: 'vault', arguments: { secret }, ...meta }, { capabilities: ELICITING });
  const taskId = String(created.body.result?.taskId);
  expect(created.body.result?.resultType, JSON.stringify(created.body)).toBe('task');
  await pollModernTask(url, taskId, { until: (status) => status === 'input_required' });
  const answered = await postModern(
    url,
    'tasks/update',
    { taskId, inputResponses: { 'input-1': { action: 'accept', content: { code } } } },
    { capabilities: ELICITING },
  );
  expect(answered.body.error).toBeUndefined();
  expect((await pollModernTask(url, taskId)).status).toBe('completed');
  return taskId;
}

/** Every byte of the SQLite database, WAL and SHM files that exist now. */
function sqliteBytes(dbPath: string): Buffer {
  return Buffer.concat(
    ['', '-wal', '-shm']
      .map((suffix) => `${dbPath}${suffix}`)
      .filter(existsSync)
      .map((file) => readFileSync(file)),
  );
}

/** Every row of every table of the store, as text (a raw query, as someone with a database copy would read it). */
async function postgresText(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const parts: string[] = [];
    for (const table of TABLES) parts.push(...(await client.query<{ row: string }>(`SELECT t::text AS row FROM mcp_tasks.${table} t`)).rows.map((r) => r.row));
    return parts.join('\n');
  } finally {
    await client.end();
  }
}

const key = () => randomBytes(32).toString('base64');

describe.each([{ backend: 'SQLite' as const }, { backend: 'PostgreSQL' as const }])('at-rest encryption on $backend', ({ backend }) => {
  const temp = makeTempDir('mcp-tasks-at-rest-');
  let database: TestDatabase | undefined;
  const servers: ServerProcess[] = [];
  const storeFor = (name: string) => (backend === 'SQLite' ? join(temp.dir, `${name}.db`) : (database as TestDatabase).url);
  /** What a copy of the store reveals, while the server runs and after it stopped. */
  async function storeContents(name: string): Promise<string> {
    return backend === 'SQLite' ? sqliteBytes(storeFor(name)).toString('latin1') : postgresText(storeFor(name));
  }
  async function start(name: string, env: Record<string, string>, port?: number, extra: string[] = []): Promise<ServerProcess> {
    const server = await startServerProcess(
      join(temp.dir, `data-${name}`),
      ['--store', storeFor(name), '--tools', TOOLS, '--fixtures', 'conformance', ...extra],
      env,
      port,
    );
    servers.push(server);
    return server;
  }

  beforeAll(async () => {
    if (backend === 'PostgreSQL') database = await createTestDatabase();
  });
  /** On PostgreSQL the tests share one database: each that needs an empty store drops the schema first. */
  async function freshStore(name: string): Promise<void> {
    if (backend !== 'PostgreSQL') return;
    const client = new pg.Client({ connectionString: storeFor(name) });
    await client.connect();
    await client.query('DROP SCHEMA IF EXISTS mcp_tasks CASCADE').finally(() => client.end());
  }
  // Each test's processes end with it: on PostgreSQL the tests share one database, and a process left running (with
  // other keys) would register again in the next test's schema and refuse its processes as settings that differ.
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.stop();
  });
  afterAll(async () => {
    await database?.drop();
    temp.remove();
  });

  it('without a key the planted argument and answer are in the store (negative control); with one they are nowhere', async () => {
    for (const [name, env] of [
      ['plain', {}],
      ['sealed', { MCP_TASKS_ENCRYPTION_KEY: key() }],
    ] as const) {
      await freshStore(name);
      const secret = `planted-argument-${randomBytes(8).toString('hex')}`;
      const code = `planted-answer-${randomBytes(8).toString('hex')}`;
      const keyed = `planted-keyed-argument-${randomBytes(8).toString('hex')}`;
      const server = await start(name, env);
      await plant(server.url, secret, code);
      await plant(server.url, keyed, code, `at-rest-${name}`);
      const running = await storeContents(name);
      await server.stop();
      const stopped = await storeContents(name);
      for (const contents of [running, stopped]) {
        if (name === 'plain') {
          expect(contents).toContain(secret);
          expect(contents).toContain(keyed);
          expect(contents).toContain(code);
        } else {
          expect(contents).not.toContain(secret);
          expect(contents).not.toContain(keyed);
          expect(contents).not.toContain(code);
          expect(contents).toContain('enc1:');
        }
      }
      if (name === 'sealed') expect(server.log()).not.toContain(env.MCP_TASKS_ENCRYPTION_KEY);
    }
  });

  it('a wrong key: a process that runs tasks refuses to start while a queued task needs the old key, an API process starts and reads the old task; the old key in MCP_TASKS_ENCRYPTION_KEYS_OLD reads it again', async () => {
    await freshStore('rotate');
    const [first, second] = [key(), key()];
    let server = await start('rotate', { MCP_TASKS_ENCRYPTION_KEY: first });
    const port = Number(new URL(server.url).port);
    const old = await plant(server.url, 'old-secret', 'old-code');
    await server.stop();
    // A task queued under the first key and never run (an API process alone takes the call).
    server = await start('rotate', { MCP_TASKS_ENCRYPTION_KEY: first }, port, ['--no-worker']);
    const queued = await postModern(server.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } });
    const queuedId = String(queued.body.result?.taskId);
    expect(queued.body.result?.resultType, JSON.stringify(queued.body)).toBe('task');
    await server.stop();

    // A process that runs tasks and lacks the first key refuses to start: it would fail the queued task for good
    // (stop 41: a newcomer's serve, started in a shell without the key, did).
    const refused = await start('rotate', { MCP_TASKS_ENCRYPTION_KEY: second }, port).then(
      () => 'started',
      (error: unknown) => String((error as Error).message),
    );
    expect(refused).toMatch(
      /unfinished tasks hold data under at-rest key id this process is not configured with \([0-9a-f]{16}: 1 task\): it would fail it for good \(task_unreadable\), so it does not start/,
    );
    expect(refused).not.toContain(first);
    // An API process starts: the old task reads as any other (nothing of its status or result is encrypted), and the
    // queued one can be given up.
    server = await start('rotate', { MCP_TASKS_ENCRYPTION_KEY: second }, port, ['--no-worker']);
    expect((await postModern(server.url, 'tasks/get', { taskId: old })).body.result?.status).toBe('completed');
    const cancelled = await postModern(server.url, 'tasks/cancel', { taskId: queuedId });
    expect(cancelled.body.error, JSON.stringify(cancelled.body)).toBeUndefined();
    await server.stop();
    // Nothing unfinished needs the first key now: the whole process starts and serves.
    server = await start('rotate', { MCP_TASKS_ENCRYPTION_KEY: second }, port);
    const fresh = await postModern(server.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } });
    expect((await pollModernTask(server.url, String(fresh.body.result?.taskId))).status).toBe('completed');
    expect(server.child.exitCode).toBeNull();
    await server.stop();

    server = await start('rotate', { MCP_TASKS_ENCRYPTION_KEY: second, MCP_TASKS_ENCRYPTION_KEYS_OLD: first }, port);
    // The banner lists the ids of the keys it only reads, as the settings digest compares them (newcomer, stop 41).
    expect(server.log()).toMatch(/at rest: {2}AES-256-GCM, key id [0-9a-f]{16} \(also reads key ids [0-9a-f]{16}\)\n/);
    expect((await postModern(server.url, 'tasks/get', { taskId: old })).body.result?.status).toBe('completed');
    expect((await postModern(server.url, 'tasks/get', { taskId: String(fresh.body.result?.taskId) })).body.result?.status).toBe('completed');
    await server.stop();

    // No key at all for encrypted rows: the task reads as any other.
    server = await start('rotate', {}, port);
    expect((await postModern(server.url, 'tasks/get', { taskId: old })).body.result?.status).toBe('completed');
  });

  it('--fail-unreadable-tasks: the process that would refuse starts, fails every task with data under the lost key at start (queued, waiting for input) and runs the others', async () => {
    await freshStore('give-up');
    const [lost, current] = [key(), key()];
    // A task waiting for input, its question sealed under the lost key; then one queued, its arguments sealed too.
    let server = await start('give-up', { MCP_TASKS_ENCRYPTION_KEY: lost }, undefined, ['--drain-ms', '500']);
    const port = Number(new URL(server.url).port);
    const asking = await postModern(server.url, 'tools/call', { name: 'vault', arguments: { secret: 's' } }, { capabilities: ELICITING });
    const askingId = String(asking.body.result?.taskId);
    await pollModernTask(server.url, askingId, { until: (status) => status === 'input_required' });
    await server.stop();
    server = await start('give-up', { MCP_TASKS_ENCRYPTION_KEY: lost }, port, ['--no-worker']);
    const queued = await postModern(server.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } });
    const queuedId = String(queued.body.result?.taskId);
    await server.stop();
    // Without the flag it refuses (the test above); with it, it starts, says what it did, and both tasks failed.
    server = await start('give-up', { MCP_TASKS_ENCRYPTION_KEY: current }, port, ['--fail-unreadable-tasks']);
    const log = await server.logLine('it fails those tasks now');
    expect(log).toMatch(/key id this process is not configured with \([0-9a-f]{16}: 2 tasks\); it fails those tasks now \(task_unreadable\)/);
    expect(log).not.toContain(lost);
    for (const taskId of [askingId, queuedId]) {
      const failed = await pollModernTask(server.url, taskId);
      expect(failed.status, taskId).toBe('failed');
      expect(JSON.stringify(failed)).toContain('task_unreadable');
    }
    const fresh = await postModern(server.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 } });
    expect((await pollModernTask(server.url, String(fresh.body.result?.taskId))).status).toBe('completed');
    await server.stop();
    // Nothing needs the lost key now: a process without the flag starts.
    server = await start('give-up', { MCP_TASKS_ENCRYPTION_KEY: current }, port);
    expect(server.child.exitCode).toBeNull();
  });

  it("a question this process cannot decrypt: its reader is told so in one line, without the key id or the operator's remedy; the log has both", async () => {
    await freshStore('question');
    const [first, second] = [key(), key()];
    let server = await start('question', { MCP_TASKS_ENCRYPTION_KEY: first }, undefined, ['--drain-ms', '500']);
    const port = Number(new URL(server.url).port);
    const created = await postModern(server.url, 'tools/call', { name: 'vault', arguments: { secret: 's' } }, { capabilities: ELICITING });
    const taskId = String(created.body.result?.taskId);
    await pollModernTask(server.url, taskId, { until: (status) => status === 'input_required' });
    await server.stop();

    // An API process with another key (a process that runs tasks would refuse to start): the question is sealed
    // under the first key.
    server = await start('question', { MCP_TASKS_ENCRYPTION_KEY: second }, port, ['--no-worker']);
    const read = await postModern(server.url, 'tasks/get', { taskId }, { capabilities: ELICITING });
    expect(read.body.error, JSON.stringify(read.body)).toEqual({
      code: -32603,
      message: "This server cannot decrypt this task's stored data",
      data: { reason: 'store_failed' },
    });
    // The operator's line, in the log only: which key id, and what to do.
    const log = await server.logLine('MCP_TASKS_ENCRYPTION_KEYS_OLD');
    expect(log).toMatch(/cannot decrypt task data: key id [0-9a-f]{16} is not configured/);
    expect(log).not.toContain(first);
    expect(server.child.exitCode).toBeNull();
  });
});

describe('encryption settings', () => {
  it('a malformed key is a usage error that never echoes the value', async () => {
    const { spawnSync } = await import('node:child_process');
    const temp = makeTempDir();
    try {
      const main = resolve(import.meta.dirname, '../../dist/cli/main.js');
      for (const env of [{ MCP_TASKS_ENCRYPTION_KEY: 'too-short-secret-value' }, { MCP_TASKS_ENCRYPTION_KEYS_OLD: key() }]) {
        const result = spawnSync(process.execPath, [main, 'serve', '--data-dir', temp.dir, '--port', '0'], {
          encoding: 'utf8',
          timeout: 20_000,
          env: { ...process.env, ...env },
        });
        expect(result.status).toBe(64);
        expect(result.stderr).toMatch(/MCP_TASKS_ENCRYPTION_KEY/);
        expect(result.stderr).not.toContain('too-short-secret-value');
      }
    } finally {
      temp.remove();
    }
  });
});
