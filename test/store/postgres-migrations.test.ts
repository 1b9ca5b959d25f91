import type pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { silentLogger } from '../../src/core/logger.js';
import { checkReadiness } from '../../src/ops/probes.js';
import { KillSwitchCache } from '../../src/ops/rollout/kill-switch.js';
import { openPostgresTaskStore, type PostgresTaskStore } from '../../src/store/postgres/index.js';
import { migrate, POSTGRES_MIGRATIONS, type PostgresMigration } from '../../src/store/postgres/migrations.js';
import { expectStoreError } from '../../src/testing/store-contract.js';
import { newTaskInput } from '../helpers/new-task.js';
import { createTestDatabase, rawClients, type TestDatabase } from '../helpers/postgres.js';

// Migrations on PostgreSQL during a rolling deploy: older processes on a schema newer code migrated (compatibility
// marks, migration 15). The upgrade of each earlier version stays in postgres-task-store.test.ts; this file has the
// rules that are about several code versions on one database. Every test has a database of its own.

const KNOWN = POSTGRES_MIGRATIONS.length;
const databases: TestDatabase[] = [];
const stores: PostgresTaskStore[] = [];
const clients = rawClients();

afterEach(async () => {
  await clients.endAll();
  await Promise.all(stores.splice(0).map((store) => store.close()));
});
afterAll(async () => {
  await Promise.all(databases.splice(0).map((database) => database.drop()));
});

async function database(): Promise<TestDatabase> {
  const created = await createTestDatabase();
  databases.push(created);
  return created;
}

async function open(url: string): Promise<PostgresTaskStore> {
  const store = await openPostgresTaskStore({ url });
  stores.push(store);
  return store;
}

const marks = async (client: pg.Client): Promise<Array<{ version: number; breaking: boolean | null }>> =>
  (await client.query('SELECT version, breaking FROM mcp_tasks.schema_migrations ORDER BY version')).rows;

/** Migrations of a newer mcp-tasks, which this code does not know: one additive, one that breaks this code. */
const ADDITIVE: PostgresMigration = {
  version: KNOWN + 1,
  name: 'test: a table of newer code',
  sql: 'CREATE TABLE mcp_tasks.newer_feature (id bigint PRIMARY KEY);',
  breaking: false,
};
const BREAKING: PostgresMigration = {
  version: KNOWN + 2,
  name: 'test: renames what older code writes',
  sql: 'ALTER TABLE mcp_tasks.tool_state RENAME COLUMN value TO document;',
  breaking: true,
};

describe('migration 15 (compatibility marks)', () => {
  it('upgrades a version-14 database in place: every earlier version marked compatible; the older code’s statements over schema_migrations still run', async () => {
    const fresh = await database();
    const client = await clients.connect(fresh.url);
    expect(await migrate(client, POSTGRES_MIGRATIONS.slice(0, 14))).toEqual(Array.from({ length: 14 }, (_, i) => i + 1));
    // Version 14's code, as it read and recorded versions (its status probe prepared before the upgrade).
    const olderStatus = {
      name: 'older_schema_status',
      text: 'SELECT COALESCE(MAX(version), 0)::int AS v FROM mcp_tasks.schema_migrations WHERE $1::int IS NULL',
      values: [null],
    };
    expect((await client.query(olderStatus)).rows).toEqual([{ v: 14 }]);
    const store = await open(fresh.url);
    expect(store.appliedMigrations).toEqual([15]);
    expect(await marks(client)).toEqual(POSTGRES_MIGRATIONS.map((m) => ({ version: m.version, breaking: false })));
    expect((await client.query(olderStatus)).rows).toEqual([{ v: 15 }]);
    expect((await client.query('SELECT version, name FROM mcp_tasks.schema_migrations ORDER BY version')).rows).toHaveLength(15);
    await client.query("INSERT INTO mcp_tasks.schema_migrations (version, name) VALUES (99, 'by older code')");
    expect((await marks(client)).at(-1)).toEqual({ version: 99, breaking: null });
  });
});

describe('rolling deploy: an older process on a newer schema', () => {
  it('stays ready and keeps working while newer code applies a compatible migration, and starts again on it; a breaking one makes it unready and refuses its start (negative control)', async () => {
    const shared = await database();
    // The older process: this code, running before the newer code's first process migrates.
    const older = await open(shared.url);
    const readiness = () => checkReadiness({ role: 'api', store: older, draining: () => false, killSwitch: new KillSwitchCache(older, silentLogger) });
    expect((await readiness()).checks.migrations).toEqual({ ok: true, applied: KNOWN, expected: KNOWN });

    // The newer code's first process migrates (this code's migrate with the newer list, as that code would).
    const newer = await clients.connect(shared.url);
    expect(await migrate(newer, [...POSTGRES_MIGRATIONS, ADDITIVE])).toEqual([ADDITIVE.version]);
    const compatible = await readiness();
    expect(compatible.ready).toBe(true);
    expect(compatible.checks.migrations).toEqual({ ok: true, applied: ADDITIVE.version, expected: KNOWN, newer: 'compatible' });
    const task = await older.create(newTaskInput());
    expect((await older.getUnscoped(task.taskId))?.status).toBe('working');
    // A crashed older pod comes back, and a rollback starts: nothing applied, nothing refused.
    expect((await open(shared.url)).appliedMigrations).toEqual([]);

    expect(await migrate(newer, [...POSTGRES_MIGRATIONS, ADDITIVE, BREAKING])).toEqual([BREAKING.version]);
    expect((await marks(newer)).slice(-2)).toEqual([
      { version: ADDITIVE.version, breaking: false },
      { version: BREAKING.version, breaking: true },
    ]);
    const breaking = await readiness();
    expect(breaking.ready).toBe(false);
    const refusal = `schema version ${BREAKING.version} is newer than this mcp-tasks knows (${KNOWN}), and migration ${BREAKING.version} ("${BREAKING.name}") is breaking for older code: upgrade mcp-tasks`;
    expect(breaking.checks.migrations).toEqual({ ok: false, applied: BREAKING.version, expected: KNOWN, newer: 'breaking', reason: refusal });
    const refused = await expectStoreError(openPostgresTaskStore({ url: shared.url }), 'schema_mismatch');
    expect(refused.message).toBe(`task store ${refusal}`);
  });

  it('control: code that knows the breaking migration starts on the same rows; code one version short of it is refused', async () => {
    const shared = await database();
    const newer = await clients.connect(shared.url);
    await migrate(newer, [...POSTGRES_MIGRATIONS, ADDITIVE, BREAKING]);
    expect(await migrate(newer, [...POSTGRES_MIGRATIONS, ADDITIVE, BREAKING])).toEqual([]);
    await expectStoreError(migrate(newer, [...POSTGRES_MIGRATIONS, ADDITIVE]), 'schema_mismatch');
  });
});
