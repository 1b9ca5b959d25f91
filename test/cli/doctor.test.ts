/**
 * `mcp-tasks doctor` (issue 11 item 10), run as a process against real stores — one SQLite file and one PostgreSQL
 * database each — with every finding provoked through the store port or raw rows, and its negative (all ok, exit 0).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { findingsOf } from '../../src/cli/doctor.js';
import { newTaskId } from '../../src/core/ids.js';
import type { NewProcessEntry } from '../../src/core/process-record.js';
import type { TaskStore } from '../../src/core/store.js';
import { agreeOnServerSecret } from '../../src/server/signing-key.js';
import type { StoreDiagnosis } from '../../src/store/diagnosis.js';
import { AesGcmFieldCipher } from '../../src/store/field-cipher.js';
import { openPostgresTaskStore } from '../../src/store/postgres/index.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { migrate, MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { createTestDatabase, type TestDatabase, withClient } from '../helpers/postgres.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { ensureBuilt, MAIN } from './support.js';

const temp = makeTempDir();
beforeAll(() => ensureBuilt());
afterAll(() => temp.remove());

function doctor(store: string, extra: string[] = [], secret?: string, more: Record<string, string> = {}) {
  const env = { ...process.env, ...more };
  delete env.MCP_TASKS_SECRET;
  if (secret !== undefined) env.MCP_TASKS_SECRET = secret;
  const result = spawnSync(process.execPath, [MAIN, 'doctor', '--store', store, ...extra], { encoding: 'utf8', timeout: 30_000, env });
  const lines = result.stdout.trim().split('\n');
  const line = (check: string) => lines.find((l) => new RegExp(`^(ok  |FAIL)  ${check}\\s`).test(l)) ?? '';
  return { status: result.status, lines, line, stderr: result.stderr };
}

const process1 = (instanceId: string, role: NewProcessEntry['role'], settingsDigest = 'aaaa'): NewProcessEntry => ({
  instanceId,
  role,
  token: `t-${instanceId}`,
  host: 'h',
  pid: 1,
  settingsDigest,
});
const queued = (store: TaskStore) =>
  store.create({
    taskId: newTaskId(),
    ownerKey: 'o',
    generation: 'v2',
    protocolVersion: '2026-07-28',
    toolName: 't',
    arguments: {},
    clientCapabilities: {},
    progressToken: null,
    statusMessage: null,
    createdAt: Date.now(),
    ttlMs: 600_000,
    pollIntervalMs: 1000,
    leaseOwner: null,
    leaseMs: null,
  });

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`mcp-tasks doctor on ${backend}`, () => {
    let database: TestDatabase | undefined;
    const databases: TestDatabase[] = [];
    let n = 0;
    /** A fresh, migrated store, its doctor argument, and a raw SQL runner. */
    const fresh = async () => {
      n += 1;
      if (backend === 'postgres') {
        database = await createTestDatabase();
        databases.push(database);
        const url = database.url;
        const store = await openPostgresTaskStore({ url });
        const sql = async (text: string) => {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          await client.query(text).finally(() => client.end());
        };
        return { store, arg: url, sql };
      }
      const path = join(temp.dir, `doctor-${n}.db`);
      const store = openSqliteTaskStore({ path });
      const sql = async (text: string) => {
        const db = new Database(path);
        db.exec(text);
        db.close();
      };
      return { store, arg: path, sql };
    };
    afterAll(async () => {
      for (const db of databases) await db.drop();
    });

    it('a healthy store: every line ok, exit 0', async () => {
      const { store, arg } = await fresh();
      await store.registerProcess(process1('api-1', 'api'), 60_000);
      await store.registerProcess(process1('w-1', 'worker'), 60_000);
      await queued(store);
      await store.close();
      const run = doctor(arg);
      expect(run.status, run.lines.join('\n')).toBe(0);
      expect(run.lines.every((l) => l.startsWith('ok  '))).toBe(true);
      expect(run.line('store')).toMatch(/is reachable$/);
      expect(run.line('schema')).toMatch(/as this mcp-tasks expects$/);
      expect(run.line('tasks')).toContain('1 working task waits for a worker; 1 live worker process (live: registration renewed');
      expect(run.line('processes')).toContain('2 live (api-1 api, w-1 worker)');
      expect(run.line('settings')).toContain('share one settings digest (aaaa)');
      expect(run.line('secret')).toMatch(/^ok/);
    });

    it('tasks stuck working with no live worker; orphaned events; settings digests that differ: FAIL each, exit 1', async () => {
      const { store, arg, sql } = await fresh();
      await queued(store);
      await store.registerProcess(process1('api-1', 'api', 'aaaa'), 60_000);
      await store.registerProcess(process1('api-2', 'api', 'bbbb'), 60_000);
      await store.registerProcess(process1('api-3', 'api', 'roots=11111111 checkTargets=22222222'), 60_000);
      await store.registerProcess(process1('api-4', 'api', 'roots=11111111 checkTargets=33333333'), 60_000);
      // A worker whose heartbeat lapsed does not count.
      await store.registerProcess(process1('w-gone', 'worker', 'aaaa'), 1);
      await store.close();
      await sql(
        backend === 'postgres'
          ? "INSERT INTO mcp_tasks.task_events (seq, task_id, kind, status, at, payload) VALUES (1000000, 'no-such-task', 'status', 'working', 1, NULL)"
          : "INSERT INTO task_events (task_id, kind, status, at, payload) VALUES ('no-such-task', 'status', 'working', 1, NULL)",
      );
      await new Promise((r) => setTimeout(r, 5));
      const run = doctor(arg);
      expect(run.status).toBe(1);
      expect(run.line('tasks')).toMatch(/^FAIL {2}tasks\s+1 working task waits with a lapsed or no lease and no live worker is registered/);
      expect(run.line('events')).toMatch(/^FAIL {2}events\s+1 events belong to tasks that no longer exist/);
      // Issue 26: the differing field is named (digests by field); an old single hash differs as a whole.
      expect(run.line('settings')).toMatch(
        /^FAIL {2}settings\s+settings differ in \(all settings: a process of another version\), checkTargets: api-1 \(aaaa\) vs api-2 \(bbbb\) vs api-3 \(roots=11111111 checkTargets=22222222\) vs api-4 /,
      );
      expect(run.line('processes')).toMatch(/1 lapsed, reaped by the next live process \(w-gone\)/);
      expect(run.line('schema')).toMatch(/^ok/);
    });

    it('draining workers (SIGTERMed: they finish or hand back their runs) do not count as taking tasks: FAIL tasks naming them, exit 1; a live worker that does not drain counts (control)', async () => {
      const { store, arg } = await fresh();
      await store.registerProcess(process1('api-1', 'api'), 60_000);
      await store.registerProcess(process1('w-1', 'worker'), 60_000);
      await store.registerProcess(process1('w-2', 'worker'), 60_000);
      await queued(store);
      const before = doctor(arg);
      expect(before.status, before.lines.join('\n')).toBe(0);
      expect(before.line('tasks')).toContain('1 working task waits for a worker; 2 live worker processes (live:');
      expect(await store.markProcessDraining('w-1', 't-w-1')).toBe(true);
      expect(await store.markProcessDraining('w-2', 't-w-2')).toBe(true);
      const drained = doctor(arg);
      expect(drained.status).toBe(1);
      expect(drained.line('tasks')).toMatch(
        /^FAIL {2}tasks\s+1 working task waits for a worker; no worker takes tasks \(2 draining: w-1 for \d+ s, w-2 for \d+ s\): start .* worker \(or serve without --no-worker\)$/,
      );
      expect(drained.line('processes')).toMatch(/^ok {4}processes 3 live \(api-1 api, w-1 worker draining for \d+ s, w-2 worker draining for \d+ s\)$/);
      // Control: a worker that takes tasks starts beside them; it counts, they are named apart.
      await store.registerProcess(process1('w-3', 'worker'), 60_000);
      await store.close();
      const joined = doctor(arg);
      expect(joined.status, joined.lines.join('\n')).toBe(0);
      expect(joined.line('tasks')).toMatch(
        /^ok {4}tasks\s+1 working task waits for a worker; 1 live worker process \(live: .*\); not counted: 2 draining: w-1 for \d+ s, w-2 for \d+ s \(a draining worker takes no new task\)$/,
      );
    });

    it('processes of two versions (a rolling update) that agree on every setting they share: the settings line is ok and names the fields not compared yet', async () => {
      const { store, arg } = await fresh();
      await store.registerProcess(process1('api-old', 'api', 'roots=11111111 tools=22222222'), 60_000);
      await store.registerProcess(process1('api-new', 'api', 'roots=11111111 tools=22222222 checkTargets=33333333'), 60_000);
      await store.close();
      const run = doctor(arg);
      expect(run.line('settings')).toMatch(
        /^ok {4}settings\s+live processes agree on every setting they share; they run different versions, so checkTargets is compared once all run the same one: /,
      );
    });

    it("the secret line: none recorded yet; this host's secret judged against the store's digest (FAIL when it differs); doctor writes no secret file", async () => {
      const { store, arg } = await fresh();
      const dataDir = join(temp.dir, `secret-dir-${n}`);
      const dir = ['--data-dir', dataDir];
      expect(doctor(arg, dir).line('secret')).toMatch(/^ok {4}secret\s+no server secret recorded yet: the first serve or worker start records it$/);
      // Recorded as a start with MCP_TASKS_SECRET records it: a salted digest.
      await agreeOnServerSecret(store.serverSecret, { dataDir, keptInStore: false, env: { MCP_TASKS_SECRET: 'the shared one of this store' } });
      await store.close();
      const same = doctor(arg, dir, 'the shared one of this store');
      expect(same.status, same.lines.join('\n')).toBe(0);
      expect(same.line('secret')).toMatch(/^ok {4}secret\s+this host's secret \(MCP_TASKS_SECRET\) is the one the store's instances use$/);
      const other = doctor(arg, dir, 'another one, long enough');
      expect(other.status).toBe(1);
      expect(other.line('secret')).toMatch(
        /^FAIL {2}secret\s+this host's secret \(MCP_TASKS_SECRET\) differs from the one the store's instances use: a serve or worker started here is refused/,
      );
      expect(other.lines.join('\n')).not.toContain('another one, long enough');
      // The secret (and the store) may come from the configuration file, as serve reads them.
      const config = join(dataDir, '..', `doctor-config-${n}.json`);
      writeFileSync(config, JSON.stringify({ store: arg, secret: 'the shared one of this store' }));
      const fromFile = spawnSync(process.execPath, [MAIN, 'doctor', '--config', config, ...dir], {
        encoding: 'utf8',
        timeout: 30_000,
        env: { ...process.env, MCP_TASKS_SECRET: '' },
      });
      expect(fromFile.status, fromFile.stdout + fromFile.stderr).toBe(0);
      expect(fromFile.stdout).toContain(`this host's secret (the secret of ${config}) is the one the store's instances use`);
      writeFileSync(config, JSON.stringify({ store: arg, secret: 'another one, long enough' }));
      const wrongInFile = spawnSync(process.execPath, [MAIN, 'doctor', '--config', config, ...dir], { encoding: 'utf8', timeout: 30_000 });
      expect(wrongInFile.status).toBe(1);
      expect(wrongInFile.stdout).toContain(`this host's secret (the secret of ${config}) differs`);
      expect(doctor(arg, dir).line('secret')).toMatch(
        /^ok {4}secret\s+instances bring their own secret .*This host has none .*: a serve or worker started here like this would be refused; set MCP_TASKS_SECRET here to check it$/,
      );
      expect(existsSync(join(dataDir, 'secret'))).toBe(false);
    });

    it(
      backend === 'sqlite'
        ? "the secret line on SQLite without MCP_TASKS_SECRET: the data directory's secret file is judged"
        : 'the secret line on PostgreSQL without MCP_TASKS_SECRET: the store keeps it',
      async () => {
        const { store, arg } = await fresh();
        const dataDir = join(temp.dir, `secret-kept-${n}`);
        await agreeOnServerSecret(store.serverSecret, { dataDir, keptInStore: backend === 'postgres', env: {} });
        await store.close();
        const run = doctor(arg, ['--data-dir', dataDir]);
        expect(run.status, run.lines.join('\n')).toBe(0);
        if (backend === 'postgres')
          expect(run.line('secret')).toMatch(/^ok {4}secret\s+kept in the store \(PostgreSQL without MCP_TASKS_SECRET\): every instance signs with it/);
        else expect(run.line('secret')).toMatch(/^ok {4}secret\s+this host's secret \(\S+secret\) is the one the store's instances use$/);
        // Another data directory's secret (a second host that does not share it) is refused by the store: FAIL.
        if (backend === 'sqlite') {
          const elsewhere = join(temp.dir, `secret-other-${n}`);
          await agreeOnServerSecret(
            { claimServerSecret: async (c) => (typeof c === 'function' ? c() : c) },
            { dataDir: elsewhere, keptInStore: false, env: {} },
          );
          expect(doctor(arg, ['--data-dir', elsewhere]).line('secret')).toMatch(/^FAIL {2}secret\s+this host's secret \(\S+secret\) differs/);
          // Without --data-dir, doctor finds the data directory as serve does: MCP_TASKS_DATA_DIR.
          expect(doctor(arg, [], undefined, { MCP_TASKS_DATA_DIR: elsewhere }).line('secret')).toContain(
            `this host's secret (${join(elsewhere, 'secret')}) differs`,
          );
        }
      },
    );

    it("keys (stop 41): unfinished tasks by at-rest key id against this host's keys — FAIL for a key it lacks, the ones it can drop named; finished tasks do not count", async () => {
      const { store, arg } = await fresh();
      await store.close();
      const [a, b, c] = [randomBytes(32), randomBytes(32), randomBytes(32)];
      const idOf = (key: Buffer) => new AesGcmFieldCipher(key).keyId;
      const under = async (key: Buffer) =>
        backend === 'postgres'
          ? openPostgresTaskStore({ url: arg, encryption: new AesGcmFieldCipher(key) })
          : openSqliteTaskStore({ path: arg, encryption: new AesGcmFieldCipher(key) });
      const x = randomBytes(32);
      const [first, second, third, gone] = [await under(a), await under(b), await under(c), await under(x)];
      try {
        await queued(first);
        const waiting = await queued(second);
        await second.transition(waiting.taskId, { to: 'input_required', now: Date.now() });
        await queued(second);
        // A finished task under key c: its data needs no key any more.
        const done = await queued(third);
        await third.transition(done.taskId, { to: 'cancelled', now: Date.now() });
        // A task past its TTL under key x: no one's to run (claims leave it to the sweeper), so it needs no key.
        const expired = await queued(gone);
        await gone.transition(expired.taskId, { to: 'input_required', now: Date.now() });
        await (backend === 'postgres'
          ? withClient(arg, (client) => client.query('UPDATE mcp_tasks.tasks SET expires_at = 1 WHERE task_id = $1', [expired.taskId]))
          : (() => {
              const db = new Database(arg);
              db.prepare('UPDATE tasks SET expires_at = 1 WHERE task_id = ?').run(expired.taskId);
              db.close();
            })());
      } finally {
        for (const store of [first, second, third, gone]) await store.close();
      }
      const env = (current: Buffer, old: Buffer[] = []) => ({
        MCP_TASKS_ENCRYPTION_KEY: current.toString('hex'),
        ...(old.length > 0 ? { MCP_TASKS_ENCRYPTION_KEYS_OLD: old.map((key) => key.toString('hex')).join(',') } : {}),
      });
      const lacking = doctor(arg, [], undefined, env(b));
      expect(lacking.status).toBe(1);
      expect(lacking.line('keys')).toMatch(/^FAIL {2}keys {6}key id /);
      expect(lacking.line('keys')).toContain(`key id ${idOf(a)} (NOT CONFIGURED here): 1 unfinished task`);
      expect(lacking.line('keys')).toContain(`key id ${idOf(b)} (current): 2 unfinished tasks`);
      expect(lacking.line('keys')).toContain("a serve or worker with this host's keys refuses to start");
      expect(lacking.line('keys')).not.toContain(idOf(x));
      const fine = doctor(arg, [], undefined, env(b, [a, c]));
      expect(fine.line('keys')).toMatch(/^ok {2}/);
      expect(fine.line('keys')).toContain(`key id ${idOf(a)} (read only): 1 unfinished task`);
      expect(fine.line('keys')).toContain(`read-only key id ${idOf(c)} holds no unfinished task's data: it can be dropped`);
      const d = randomBytes(32);
      const two = doctor(arg, [], undefined, env(b, [a, c, d]));
      expect(two.line('keys')).toContain(`read-only key ids ${[idOf(c), idOf(d)].sort().join(', ')} hold no unfinished task's data: they can be dropped`);
      // A host without any key (an operator's, a monitor's): ok, saying what a serve started there would do.
      const none = doctor(arg);
      expect(none.line('keys')).toMatch(/^ok {2}.*this host has no at-rest key: a serve or worker started like this refuses to start/);
      // A malformed key: one line naming the variable, never the value.
      const malformed = doctor(arg, [], undefined, { MCP_TASKS_ENCRYPTION_KEY: 'not-a-key-value' });
      expect(malformed.line('keys')).toMatch(/^FAIL {2}keys {6}MCP_TASKS_ENCRYPTION_KEY must be 32 bytes/);
      expect(malformed.lines.join('\n')).not.toContain('not-a-key-value');
    });

    it('a schema newer than the code: ok while every newer migration is marked compatible (a rolling deploy); FAIL, exit 1, once one is unmarked or breaking', async () => {
      const { store, arg, sql } = await fresh();
      await store.close();
      const [table, now, no] = backend === 'postgres' ? ['mcp_tasks.schema_migrations', 'now()', 'false'] : ['schema_migrations', '0', '0'];
      await sql(`INSERT INTO ${table} (version, name, applied_at, breaking) VALUES (98, 'test: additive', ${now}, ${no})`);
      const compatible = doctor(arg);
      expect(compatible.status, compatible.lines.join('\n')).toBe(0);
      expect(compatible.line('schema')).toMatch(
        /^ok {4}schema\s+schema version 98 is newer than this mcp-tasks knows \(\d+\); every newer migration \(98\) is marked compatible: this mcp-tasks starts and is ready on it/,
      );
      await sql(`INSERT INTO ${table} (version, name, applied_at) VALUES (99, 'from a newer mcp-tasks', ${now})`);
      const run = doctor(arg);
      expect(run.status).toBe(1);
      expect(run.line('schema')).toMatch(
        /^FAIL {2}schema\s+schema version 99 is newer than this mcp-tasks knows \(\d+\), and migration 99 \("from a newer mcp-tasks"\) is not marked compatible with older code: upgrade mcp-tasks$/,
      );
    });

    if (backend === 'postgres') {
      it('issue 26 item 8: a fresh, empty database is not a failure: "no schema yet", exit 0, nothing created', async () => {
        database = await createTestDatabase();
        databases.push(database);
        const run = doctor(database.url);
        expect(run.status, run.lines.join('\n')).toBe(0);
        expect(run.line('schema')).toMatch(/^ok {4}schema\s+no schema yet \(a fresh database\): the first serve or worker start creates it/);
        const client = new pg.Client({ connectionString: database.url });
        await client.connect();
        const tables = await client.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'").finally(() => client.end());
        expect(tables.rows[0].n).toBe(0);
      });
    }

    it('an unreachable store: one FAIL line, exit 1', () => {
      const run = doctor(backend === 'postgres' ? 'postgres://postgres:secret@127.0.0.1:1/nowhere' : join(temp.dir, 'missing', 'tasks.db'));
      expect(run.status).toBe(1);
      expect(run.lines).toHaveLength(1);
      expect(run.lines[0]).toMatch(/^FAIL {2}store\s+\S+ cannot be read: /);
      expect(run.lines[0]).not.toContain('secret');
      expect(run.stderr).toBe('');
    });
  });
}

describe('doctor findings that real stores here cannot show', () => {
  it('issue 26 item 8: a SQLite file not created yet is ok (the first start creates it), exit 0, and doctor creates nothing', () => {
    const path = join(temp.dir, 'not-yet.db');
    const run = doctor(path);
    expect(run.status).toBe(0);
    expect(run.lines).toEqual([expect.stringMatching(/^ok {4}store\s+\S+not-yet\.db does not exist yet: the first serve or worker start creates it/)]);
    expect(existsSync(path)).toBe(false);
  });

  it('an older schema (SQLite file of an earlier version): ok (the next start migrates it), and doctor does not migrate it', () => {
    const path = join(temp.dir, 'older.db');
    const db = new Database(path);
    migrate(db, 0, MIGRATIONS.slice(0, 2));
    db.close();
    const run = doctor(path);
    expect(run.status).toBe(0);
    expect(run.line('schema')).toMatch(/^ok {4}schema\s+schema version 2 is older than this mcp-tasks \(\d+\): the next serve or worker start migrates it$/);
    const check = new Database(path, { readonly: true });
    expect((check.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number }).v).toBe(2);
    check.close();
  });

  it('a SQLite file before draining was recorded (version 12) with a registered worker: doctor reads it, the worker live and taking tasks', () => {
    const path = join(temp.dir, 'before-draining.db');
    const db = new Database(path);
    migrate(db, 0, MIGRATIONS.slice(0, 12));
    db.prepare("INSERT INTO processes VALUES ('w-1', 'worker', 't', 'h', 1, 'd', ?, ?, ?)").run(Date.now(), Date.now(), Date.now() + 600_000);
    db.close();
    const run = doctor(path);
    expect(run.line('processes')).toMatch(/^ok {4}processes 1 live \(w-1 worker\)$/);
    expect(run.line('tasks')).toMatch(/^ok {4}tasks\s+0 working tasks wait for a worker; 1 live worker process/);
  });

  /** A diagnosis of a healthy store at host time 1,000,000 with `overrides`. */
  const diagnosis = (overrides: Partial<StoreDiagnosis> = {}): StoreDiagnosis => ({
    schema: { state: 'current', applied: 1, expected: 1, newer: [] },
    hostNow: 1_000_000,
    storeNow: 1_000_000,
    waitingForWorker: 0,
    orphanedEvents: 0,
    unfinishedByKeyId: [],
    processes: [],
    serverSecret: null,
    ...overrides,
  });

  it('the tasks rule: a live worker that drains does not take tasks, one that does not drain does (control); an API process never does', () => {
    const worker = (instanceId: string, drainingSince: number | null, role: 'worker' | 'serve' | 'api' = 'worker') => ({
      ...process1(instanceId, role),
      startedAt: 990_000,
      heartbeatAt: 999_000,
      expiresAt: 1_002_000,
      live: true,
      drainingSince,
    });
    const tasks = (processes: StoreDiagnosis['processes']) => findingsOf(diagnosis({ waitingForWorker: 1, processes }), 1_000).find((f) => f.check === 'tasks');
    expect(tasks([worker('api-1', null, 'api'), worker('w-1', 988_000), worker('s-1', 999_600, 'serve')])).toEqual({
      ok: false,
      check: 'tasks',
      message: expect.stringMatching(/^1 working task waits for a worker; no worker takes tasks \(2 draining: w-1 for 12 s, s-1 for 0 s\): start /),
    });
    expect(tasks([worker('api-1', null, 'api'), worker('w-1', null)])).toMatchObject({
      ok: true,
      message: expect.stringMatching(/^1 working task waits for a worker; 1 live worker process \(live: [^;]*\)$/),
    });
    // A draining API process (serve --no-worker SIGTERMed) takes no task either way: it is no draining worker.
    expect(tasks([worker('api-1', 999_000, 'api')])?.message).toMatch(/no live worker is registered/);
    // A draining worker whose registration lapsed is gone, not draining.
    expect(tasks([{ ...worker('w-1', 988_000), live: false }])?.message).toMatch(/no live worker is registered/);
  });

  it('a breaking migration this mcp-tasks would apply while processes are live: schema FAILs (the start refuses to migrate); with none live it is ok (control)', () => {
    const older = { state: 'older' as const, applied: 13, expected: 15, newer: [], pendingBreaking: { version: 15, name: 'drops a column', breaking: true } };
    const live = { ...process1('w-1', 'worker'), startedAt: 990_000, heartbeatAt: 999_000, expiresAt: 1_002_000, live: true, drainingSince: null };
    const schema = (processes: StoreDiagnosis['processes']) => findingsOf(diagnosis({ schema: older, processes }), 1_000).find((f) => f.check === 'schema');
    expect(schema([live])).toEqual({
      ok: false,
      check: 'schema',
      message:
        'schema version 13 is older than this mcp-tasks (15), and migration 15 ("drops a column") is breaking for older code while 1 process is live on the store: a serve or worker start of this mcp-tasks refuses to migrate until they stop (docs/operations/upgrades.md)',
    });
    expect(schema([{ ...live, live: false }])).toMatchObject({ ok: true, message: expect.stringContaining('the next serve or worker start migrates it') });
  });

  it('clock skew beyond --max-skew-ms fails; within it passes (the rule, on a diagnosis with a skewed database clock)', () => {
    const base = diagnosis();
    const skewed = findingsOf({ ...base, storeNow: 1_000_000 + 2_500 }, 1_000).find((f) => f.check === 'clock');
    expect(skewed).toMatchObject({ ok: false, message: expect.stringContaining('store clock +2500 ms from this host') });
    const fine = findingsOf({ ...base, storeNow: 1_000_000 - 300 }, 1_000).find((f) => f.check === 'clock');
    expect(fine).toMatchObject({ ok: true, message: expect.stringContaining('-300 ms') });
  });

  it("tasks waiting with no live worker while a worker with this host's at-rest keys would refuse to start: the tasks line says where to start one, not just to start it", () => {
    const base = diagnosis({ waitingForWorker: 2, unfinishedByKeyId: [{ keyId: 'k-old', taskIds: ['t1', 't2'] }] });
    const line = (keys: Parameters<typeof findingsOf>[3], check: 'tasks' | 'keys' = 'tasks') =>
      findingsOf(base, 1_000, undefined, keys).find((f) => f.check === check);
    // A key of the deployment missing here: the keys line fails, the tasks line names the way out.
    expect(line({ current: 'k-new', readOnly: [] }, 'keys')).toMatchObject({ ok: false });
    expect(line({ current: 'k-new', readOnly: [] })).toMatchObject({
      ok: false,
      message: expect.stringMatching(
        /\(or serve without --no-worker\) — with the at-rest keys the keys line names: one with this host's keys refuses to start unless given --fail-unreadable-tasks, which fails those tasks$/,
      ),
    });
    // A host with no key at all (an operator's): the keys line is ok, a worker started here would still refuse.
    expect(line({ current: null, readOnly: [] }, 'keys')).toMatchObject({ ok: true });
    expect(line({ current: null, readOnly: [] })?.message).toMatch(
      /— where the deployment's at-rest keys are set: one started here, without a key, refuses to start \(see the keys line\)$/,
    );
    // A malformed key here: the keys line fails with its reason, the tasks line points at it.
    expect(line('MCP_TASKS_ENCRYPTION_KEY: not 32 bytes of base64', 'keys')).toMatchObject({
      ok: false,
      message: 'MCP_TASKS_ENCRYPTION_KEY: not 32 bytes of base64',
    });
    expect(line('MCP_TASKS_ENCRYPTION_KEY: not 32 bytes of base64')?.message).toMatch(/this host's are unusable \(see the keys line\)$/);
    // Controls: with the key configured, or keys not checked, the plain advice to start a worker.
    expect(line({ current: 'k-new', readOnly: ['k-old'] })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/start .* worker \(or serve without --no-worker\)$/),
    });
    expect(line(undefined)?.message).toMatch(/\(or serve without --no-worker\)$/);
  });
});

describe("mcp-tasks doctor --check-threads (issue 22): the configured tools in the isolated executor's warm pool", () => {
  const THREAD_LOAD_TOOLS = join(import.meta.dirname, '../fixtures/thread-load-tools.mjs');
  const checkThreads = (env: Record<string, string> = {}) => {
    const store = join(temp.dir, 'threads.db');
    openSqliteTaskStore({ path: store }).close();
    const result = spawnSync(
      process.execPath,
      [MAIN, 'doctor', '--store', store, '--check-threads', '--no-builtins', '--tools', THREAD_LOAD_TOOLS, '--min-threads', '1'],
      { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } },
    );
    return {
      status: result.status,
      line:
        result.stdout
          .trim()
          .split('\n')
          .find((l) => /^(ok {2}|FAIL) {2}threads\s/.test(l)) ?? result.stdout,
    };
  };

  it('tools that load in a thread: ok, with the warm threads, their start time and memory', () => {
    const run = checkThreads();
    expect(run.status).toBe(0);
    expect(run.line).toMatch(
      /^ok {4}threads\s+1 tool loads in a worker thread: 1 warm thread, \d+ ms each to start and load them, about \d+ MB each \(heap limit 1024 MB\)$/,
    );
  });

  it('a tool module that fails to load in a thread: FAIL with the loader error, exit 1', () => {
    const run = checkThreads({ ISOLATION_TEST_LOAD_FAILS: '1' });
    expect(run.status).toBe(1);
    expect(run.line).toMatch(
      /^FAIL {2}threads\s+cannot start the isolated executor: the tool modules failed to load in a worker thread: Error: this tool module refuses to load in a worker thread$/,
    );
  });
});
