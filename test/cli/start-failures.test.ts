/**
 * Issue 11 acceptance 5 (bad input at start), the cases the PostgreSQL `serve` tests (serve-postgres.test.ts) do not
 * cover: both roles on both stores. A store that cannot be used at start — unreachable, of a newer schema, not a
 * database at all — makes `serve` and `worker` exit 1 with one line naming the store and the cause (no stack trace),
 * and migrates or creates nothing.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { ensureBuilt, MAIN } from './support.js';

const temp = makeTempDir();
beforeAll(() => ensureBuilt());
afterAll(() => temp.remove());

/** Run `role` against `store`, expecting it to fail at start: its exit status and every line of stderr. */
function startFailing(role: 'serve' | 'worker', store: string) {
  const args = [
    MAIN,
    role,
    '--store',
    store,
    '--data-dir',
    join(temp.dir, `data-${role}`),
    '--no-builtins',
    '--log-level',
    'warn',
    ...(role === 'serve' ? ['--port', '0'] : []),
  ];
  const result = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 30_000 });
  return { status: result.status, lines: result.stderr.trim().split('\n') };
}

describe.each(['serve', 'worker'] as const)('%s: an unusable store at start is one line and exit 1', (role) => {
  it('SQLite file of a newer schema: says to upgrade; the file is untouched', () => {
    const path = join(temp.dir, `${role}-newer.db`);
    const db = new Database(path);
    db.exec(
      "CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT; INSERT INTO schema_migrations VALUES (99, 'from a newer mcp-tasks', 0)",
    );
    db.close();
    const result = startFailing(role, path);
    expect(result.status).toBe(1);
    expect(result.lines).toEqual([
      `mcp-tasks: cannot open the task store ${path}: task store schema version 99 is newer than this mcp-tasks knows (${MIGRATIONS.at(-1)?.version}), and migration 99 ("from a newer mcp-tasks") is not marked compatible with older code: upgrade mcp-tasks`,
    ]);
    // Nothing migrated or created: the newer version's rows are all there is.
    const check = new Database(path, { readonly: true });
    try {
      expect(check.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()).toEqual([{ name: 'schema_migrations' }]);
      expect(check.prepare('SELECT version, name FROM schema_migrations').all()).toEqual([{ version: 99, name: 'from a newer mcp-tasks' }]);
    } finally {
      check.close();
    }
  });

  it('SQLite path that is not a database: names the file and the cause', () => {
    const path = join(temp.dir, `${role}-text.db`);
    writeFileSync(path, 'these are not the pages you are looking for\n'.repeat(200));
    const result = startFailing(role, path);
    expect(result.status).toBe(1);
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]).toMatch(new RegExp(`^mcp-tasks: cannot open the task store ${path}: .*not a database`));
    expect(readFileSync(path, 'utf8')).toMatch(/^these are not the pages/);
  });

  it('unreachable PostgreSQL: names the store (password masked) and the cause', () => {
    const result = startFailing(role, 'postgres://postgres:secret@127.0.0.1:1/nowhere');
    expect(result.status).toBe(1);
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]).toMatch(
      /^mcp-tasks: cannot open the task store postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/nowhere: Task store unavailable: cannot connect \(.*ECONNREFUSED.*\)$/,
    );
    expect(result.lines[0]).not.toContain('secret');
  });
});
