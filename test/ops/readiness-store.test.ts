import { join } from 'node:path';

import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { silentLogger } from '../../src/core/logger.js';
import { checkReadiness } from '../../src/ops/probes.js';
import { KillSwitchCache } from '../../src/ops/rollout/kill-switch.js';
import { migrate, POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { cliRunner, ensureBuilt, type RunningCli } from '../cli/support.js';
import { BREAKING_REFUSAL, KNOWN_POSTGRES_VERSION, NEWER_ADDITIVE, NEWER_BREAKING } from '../helpers/newer-postgres-migrations.js';
import { createTestDatabase, type PrivateCluster, startPrivateCluster, type TestDatabase, withClient } from '../helpers/postgres.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';
import { fetchText, until } from './support.js';

// /readyz with the store down: a `serve` process on a PostgreSQL server of this file's own (never the shared one),
// which the test stops and starts again. Needs the PostgreSQL server binaries; fails (never skips) without them.
// /readyz during a rolling deploy: real processes on a database of the shared test server that newer code migrates.

describe('/readyz follows the store', () => {
  const temp = makeTempDir('mcp-tasks-readyz-');
  let cluster: PrivateCluster;
  let serve: RunningCli;
  let base = '';

  beforeAll(async () => {
    ensureBuilt();
    cluster = startPrivateCluster();
    serve = cliRunner({ ...process.env }).start([
      'serve',
      '--port',
      '0',
      '--store',
      cluster.url,
      '--data-dir',
      join(temp.dir, 'data'),
      '--no-builtins',
      '--fixtures',
      'conformance',
      '--log-level',
      'error',
    ]);
    base = `http://127.0.0.1:${(await serve.stderrLine(/serving http:\/\/127\.0\.0\.1:(\d+)\/mcp/))[1]}`;
  }, 120_000);
  afterAll(() => {
    if (serve?.child.exitCode === null) serve.child.kill('SIGKILL');
    cluster?.destroy();
    temp.remove();
  });

  it('200 while PostgreSQL answers, 503 with store.ok false while it is stopped (healthz stays 200), 200 again once it is back', async () => {
    const up = await fetchText(`${base}/readyz`);
    expect(up.status, up.body).toBe(200);
    cluster.halt();
    try {
      await until(
        'readyz to report the store down',
        async () => {
          const probe = await fetchText(`${base}/readyz`);
          return probe.status === 503 && (JSON.parse(probe.body) as { checks: { store: { ok: boolean } } }).checks.store.ok === false;
        },
        20_000,
      );
      expect((await fetchText(`${base}/healthz`)).status).toBe(200);
    } finally {
      cluster.resume();
    }
    await until('readyz to recover', async () => (await fetchText(`${base}/readyz`)).status === 200, 30_000);
  }, 90_000);

  it('migrations not current (the schema version table is behind the code) → not ready', async () => {
    const path = join(temp.dir, 'behind.db');
    const store = await openSqliteTaskStore({ path });
    try {
      const ready = await checkReadiness({ role: 'api', store, draining: () => false, killSwitch: new KillSwitchCache(store, silentLogger) });
      expect(ready.ready).toBe(true);
      const raw = new Database(path);
      raw.prepare('DELETE FROM schema_migrations WHERE version = (SELECT MAX(version) FROM schema_migrations)').run();
      raw.close();
      const behind = await checkReadiness({ role: 'api', store, draining: () => false, killSwitch: new KillSwitchCache(store, silentLogger) });
      expect(behind.ready).toBe(false);
      expect(behind.checks.migrations.ok).toBe(false);
      expect(behind.checks.migrations.applied).toBeLessThan(behind.checks.migrations.expected as number);
    } finally {
      await store.close();
    }
  });
});

describe('/readyz during a rolling deploy on PostgreSQL: processes of this code on a schema newer code migrated', () => {
  const temp = makeTempDir('mcp-tasks-rolling-');
  const KNOWN = KNOWN_POSTGRES_VERSION;
  const ADDITIVE = NEWER_ADDITIVE;
  const BREAKING = NEWER_BREAKING;
  let database: TestDatabase;
  const running: RunningCli[] = [];
  const { start } = cliRunner({ ...process.env });
  const args = (role: 'serve' | 'worker', name: string) => [
    role,
    ...(role === 'serve' ? ['--port', '0', '--no-worker'] : ['--health-port', '0']),
    '--store',
    database.url,
    '--data-dir',
    join(temp.dir, name),
    '--no-builtins',
    '--fixtures',
    'conformance',
    '--log-level',
    'warn',
  ];
  /** Start `role`; the base URL of its probes. */
  const launch = async (role: 'serve' | 'worker', name: string): Promise<{ base: string; process: RunningCli }> => {
    const process = start(args(role, name));
    running.push(process);
    const port = (
      await process.stderrLine(role === 'serve' ? /serving http:\/\/127\.0\.0\.1:(\d+)\/mcp/ : /health:\s+http:\/\/127\.0\.0\.1:(\d+)\/healthz/)
    )[1];
    return { base: `http://127.0.0.1:${port}`, process };
  };
  const readyz = async (base: string) => {
    const probe = await fetchText(`${base}/readyz`);
    return { status: probe.status, migrations: (JSON.parse(probe.body) as { checks: { migrations: Record<string, unknown> } }).checks.migrations };
  };

  beforeAll(async () => {
    ensureBuilt();
    database = await createTestDatabase();
  });
  afterAll(async () => {
    for (const { child } of running) if (child.exitCode === null) child.kill('SIGKILL');
    await database?.drop();
    temp.remove();
  });

  it('an API process and a worker stay ready (200, newer: compatible) and keep serving when newer code applies a compatible migration, and a crashed one starts again; a breaking one turns them 503 and refuses a start (negative control)', async () => {
    const api = await launch('serve', 'api');
    let worker = await launch('worker', 'worker-1');
    for (const { base } of [api, worker]) expect(await readyz(base)).toEqual({ status: 200, migrations: { ok: true, applied: KNOWN, expected: KNOWN } });

    // The newer code's first process migrates the shared database (this code's migrate with the newer list).
    await withClient(database.url, (client) => migrate(client, [...POSTGRES_MIGRATIONS, ADDITIVE]));
    for (const { base } of [api, worker]) {
      expect(await readyz(base)).toEqual({ status: 200, migrations: { ok: true, applied: ADDITIVE.version, expected: KNOWN, newer: 'compatible' } });
    }
    const created = await postModern(`${api.base}/mcp`, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'on a newer schema' } });
    expect((await pollModernTask(`${api.base}/mcp`, created.body.result?.taskId as string)).status).toBe('completed');
    // A worker that crashes comes back on the newer schema (before the marks, it exited 1: schema_mismatch).
    worker.process.child.kill('SIGKILL');
    await worker.process.done;
    worker = await launch('worker', 'worker-2');
    expect((await readyz(worker.base)).status).toBe(200);

    // Newer code does not apply a breaking migration under live older processes (reviewer F8 of stop 45)…
    const guarded = await withClient(database.url, (client) => migrate(client, [...POSTGRES_MIGRATIONS, ADDITIVE, BREAKING])).catch((error: unknown) => error);
    expect(guarded).toMatchObject({
      code: 'unavailable',
      message: expect.stringContaining('is breaking for older code, and 2 processes are live on the store'),
    });
    // …but applied all the same (by hand, or while their registrations had lapsed), it turns them unready.
    await withClient(database.url, async (client) => {
      await client.query('BEGIN');
      await client.query(BREAKING.sql);
      await client.query('INSERT INTO mcp_tasks.schema_migrations (version, name, breaking) VALUES ($1, $2, true)', [BREAKING.version, BREAKING.name]);
      await client.query('COMMIT');
    });
    const reason = BREAKING_REFUSAL;
    for (const { base } of [api, worker]) {
      expect(await readyz(base)).toEqual({ status: 503, migrations: { ok: false, applied: BREAKING.version, expected: KNOWN, newer: 'breaking', reason } });
    }
    const refused = await start(args('worker', 'worker-3')).done;
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toMatch(new RegExp(`^mcp-tasks: cannot open the task store postgres:\\S+: task store ${escape(reason)}$`));
  }, 90_000);
});

/** `text` as a literal in a RegExp. */
function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('kill switch cache (what /readyz and the gate read)', () => {
  const temp = makeTempDir();
  afterAll(() => temp.remove());

  it('a failed read keeps the last known switches and reports the error; before any read the state is unknown', async () => {
    const store = await openSqliteTaskStore({ path: join(temp.dir, 'switch.db') });
    const cache = new KillSwitchCache(store, silentLogger);
    expect(cache.state()).toMatchObject({ state: 'unknown', readAt: null });
    await store.setKillSwitch({ scope: 'export_job', fallback: 'sync', reason: null, setBy: 'local', setAt: 1 });
    await cache.refresh();
    expect(cache.state()).toMatchObject({ state: 'partial', switches: [{ scope: 'export_job' }] });
    expect(cache.switchFor('export_job')?.fallback).toBe('sync');
    expect(cache.switchFor('other')).toBeUndefined();
    await store.close();
    await cache.refresh();
    // The store is gone: the switch stays in force (an outage neither turns it off nor on), and the error shows.
    expect(cache.state()).toMatchObject({ state: 'partial', error: expect.any(String) });
    expect(cache.switchFor('export_job')?.fallback).toBe('sync');
  });
});
