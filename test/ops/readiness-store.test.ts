import { join } from 'node:path';

import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { silentLogger } from '../../src/core/logger.js';
import { checkReadiness } from '../../src/ops/probes.js';
import { KillSwitchCache } from '../../src/ops/rollout/kill-switch.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { cliRunner, ensureBuilt, type RunningCli } from '../cli/support.js';
import { type PrivateCluster, startPrivateCluster } from '../helpers/postgres.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { fetchText, until } from './support.js';

// /readyz with the store down: a `serve` process on a PostgreSQL server of this file's own (never the shared one),
// which the test stops and starts again. Needs the PostgreSQL server binaries; fails (never skips) without them.

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
