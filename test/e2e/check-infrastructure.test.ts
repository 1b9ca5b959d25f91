/**
 * check_infrastructure in a real server (issue 17): allowed by `serve --check-target`, the last run's snapshot kept
 * per owner in the task store (a real SQLite file) — never as a file of the data directory — so that the second
 * run reports the configuration file changed between the two.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';

import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';

import { startServerProcess } from '../helpers/server-process.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { pollModernTask, postModern } from '../helpers/wire.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

describe('check_infrastructure in a real server', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('compares with the snapshot the store keeps for the owner, and writes no file of its own', async () => {
    const temp = makeTempDir('check-infra-e2e-');
    cleanups.push(() => temp.remove());
    const root = join(realpathSync(temp.dir), 'etc');
    await mkdir(root);
    const config = join(root, 'app.conf');
    writeFileSync(config, 'listen 8080\nworkers 4\n');
    const http: Server = createServer((_q, r) => r.end('ok'));
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
    cleanups.push(() => new Promise<void>((r) => http.close(() => r())));
    const port = (http.address() as AddressInfo).port;

    const dataDir = join(temp.dir, 'data');
    const server = await startServerProcess(dataDir, ['--root', root, '--check-target', '127.0.0.1']);
    cleanups.push(() => server.stop());
    const call = async () => {
      const created = await postModern(server.url, 'tools/call', {
        name: 'check_infrastructure',
        arguments: { targets: [`http://127.0.0.1:${port}/`, config], detail: 'full' },
      });
      const taskId = created.body.result?.taskId as string;
      const task = await pollModernTask(server.url, taskId, { timeoutMs: 20_000 });
      expect(task.status).toBe('completed');
      return (task.result as { structuredContent: { results: { status: string; file: { changed: boolean | null; diff: string | null } | null }[] } })
        .structuredContent;
    };
    const filesBefore = readdirSync(dataDir).sort();
    const first = await call();
    expect(first.results.map((r) => r.status)).toEqual(['ok', 'ok']);
    expect(first.results[1]?.file?.changed).toBeNull();

    writeFileSync(config, 'listen 9090\nworkers 4\n');
    const second = await call();
    expect(second.results[1]).toMatchObject({ status: 'changed', file: { changed: true, diff: expect.stringContaining('+listen 9090') } });
    // The snapshot is a row of the store, for the anonymous owner; the data directory gained no file.
    expect(readdirSync(dataDir).sort()).toEqual(filesBefore);
    const db = new Database(join(dataDir, 'tasks.db'), { readonly: true });
    try {
      const rows = db.prepare('SELECT owner_key, tool, key FROM tool_state').all();
      expect(rows).toEqual([{ owner_key: 'anonymous', tool: 'check_infrastructure', key: 'baseline:default' }]);
    } finally {
      db.close();
    }
  }, 60_000);

  it('refuses a --check-target pattern that does not parse, with a usage error', () => {
    const temp = makeTempDir('check-infra-usage-');
    cleanups.push(() => temp.remove());
    const run = spawnSync(process.execPath, [MAIN, 'serve', '--port', '0', '--data-dir', join(temp.dir, 'data'), '--check-target', 'not a host'], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(run.status).toBe(64);
    expect(run.stderr).toContain('--check-target not a host');
  });
});
