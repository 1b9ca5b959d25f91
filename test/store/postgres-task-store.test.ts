import type pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { StoreError } from '../../src/core/store-error.js';
import type { JsonObject } from '../../src/core/task.js';
import { openPostgresTaskStore, type PostgresTaskStore, type PostgresTaskStoreOptions } from '../../src/store/postgres/index.js';
import { migrate, POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { expectStoreError } from '../../src/testing/store-contract.js';
import { newTaskInput } from '../helpers/new-task.js';
import { createTestDatabase, emptyTaskStore, rawClients, type TestDatabase, testPostgresUrl, withDatabase } from '../helpers/postgres.js';

// Behaviour only PostgreSQL has: several instances (pools) on one database, row locks, the database clock,
// migrations under an advisory lock. Every race runs many rounds between two stores, each with its own pool.

let database: TestDatabase;
const stores: PostgresTaskStore[] = [];
const clients = rawClients();

beforeAll(async () => {
  database = await createTestDatabase();
});
beforeEach(async () => {
  await emptyTaskStore(database.url);
});
afterEach(async () => {
  await clients.endAll();
  await Promise.all(stores.splice(0).map((store) => store.close()));
});
afterAll(async () => {
  await database?.drop();
});

async function open(options: Partial<PostgresTaskStoreOptions> = {}): Promise<PostgresTaskStore> {
  const store = await openPostgresTaskStore({ url: database.url, ...options });
  stores.push(store);
  return store;
}

const raw = (url = database.url): Promise<pg.Client> => clients.connect(url);

const RESULT: JsonObject = { content: [{ type: 'text', text: 'done' }] };

describe('two instances on one database: races settled by the database', () => {
  it('the same idempotency key created at once by two instances: exactly one task, the other a conflict', async () => {
    const [a, b] = await Promise.all([open(), open()]);
    for (let round = 0; round < 25; round += 1) {
      const key = `key-${round}`;
      const settled = await Promise.allSettled([a.create(newTaskInput({ idempotencyKey: key })), b.create(newTaskInput({ idempotencyKey: key }))]);
      const fulfilled = settled.filter((s) => s.status === 'fulfilled');
      expect(fulfilled, `round ${round}`).toHaveLength(1);
      const rejected = settled.find((s) => s.status === 'rejected') as PromiseRejectedResult;
      expect(rejected.reason).toBeInstanceOf(StoreError);
      expect((rejected.reason as StoreError).code).toBe('conflict');
    }
    const { rows } = await (await raw()).query('SELECT count(*)::int AS n FROM mcp_tasks.tasks');
    expect(rows[0].n).toBe(25);
  });

  it('a create that loses the key race to another instance rejects alone; the rest of its batch commits', async () => {
    const [a, b] = await Promise.all([open(), open()]);
    // b's batch holds the key uncommitted while a's batch (with other creates) inserts the same key.
    const holder = await raw();
    await holder.query('BEGIN');
    await holder.query(
      `INSERT INTO mcp_tasks.tasks (task_id, owner_key, generation, protocol_version, tool_name, arguments, client_capabilities,
         status, created_at, last_updated_at, poll_interval_ms, idempotency_key)
       VALUES ('held-by-another-instance', 'anonymous', 'v2', 'x', 't', '{}', '{}', 'working', 0, 0, 100, 'contested')`,
    );
    const batch = Promise.allSettled([a.create(newTaskInput()), a.create(newTaskInput({ idempotencyKey: 'contested' })), a.create(newTaskInput())]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await holder.query('COMMIT');
    const settled = await batch;
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(((settled[1] as PromiseRejectedResult).reason as StoreError).code).toBe('conflict');
    const created = settled.filter((s) => s.status === 'fulfilled').map((s) => (s as PromiseFulfilledResult<{ taskId: string }>).value.taskId);
    for (const id of created) expect(await b.getUnscoped(id)).toBeDefined();
    expect((await b.readEventsAfter(0, 100)).map((e) => e.taskId)).toEqual(created);
  });

  it('a create whose task id exists rejects alone as a fault (the batch runs again isolated); the others commit', async () => {
    const store = await open();
    const existing = await store.create(newTaskInput());
    const start = await store.lastEventSeq();
    const inputs = [newTaskInput(), newTaskInput({ taskId: existing.taskId }), newTaskInput()];
    const settled = await Promise.allSettled(inputs.map((input) => store.create(input)));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const error = (settled[1] as PromiseRejectedResult).reason as StoreError;
    expect(error).toBeInstanceOf(StoreError);
    expect(error.code).toBe('fault');
    expect((error.cause as { code?: string }).code).toBe('23505');
    expect((await store.readEventsAfter(start, 10)).map((e) => [e.seq, e.taskId])).toEqual([
      [start + 1, inputs[0]!.taskId],
      [start + 2, inputs[2]!.taskId],
    ]);
  });

  it('cancel on one instance and completion on another: exactly one wins, every round', async () => {
    const [a, b] = await Promise.all([open(), open()]);
    for (let round = 0; round < 30; round += 1) {
      const { taskId } = await a.create(newTaskInput({ leaseOwner: 'runner', leaseMs: 60_000 }));
      const cancel = a.transition(taskId, { to: 'cancelled', releaseLease: true, now: Date.now() });
      const complete = b.transition(taskId, {
        to: 'completed',
        outcome: { kind: 'result', result: RESULT },
        leaseOwner: 'runner',
        releaseLease: true,
        now: Date.now(),
      });
      const [cancelled, completed] = round % 2 === 0 ? await Promise.all([cancel, complete]) : (await Promise.all([complete, cancel])).reverse();
      expect(
        [cancelled, completed].filter((r) => r !== undefined),
        `round ${round}`,
      ).toHaveLength(1);
      const final = await a.getUnscoped(taskId);
      expect(final?.status).toBe(cancelled ? 'cancelled' : 'completed');
      expect(await b.getOutcome(taskId)).toEqual(cancelled ? undefined : { kind: 'result', result: RESULT });
      const events = (await a.readEventsAfter(0, 10_000)).filter((e) => e.taskId === taskId && e.kind === 'status');
      expect(events).toHaveLength(1);
    }
  });

  it('two instances answering the same input request: the first answer wins, the task resumes once', async () => {
    const [a, b] = await Promise.all([open(), open()]);
    for (let round = 0; round < 20; round += 1) {
      const { taskId } = await a.create(newTaskInput({ leaseOwner: 'runner', leaseMs: 60_000 }));
      await a.requestInput(taskId, [{ key: 'q', request: { method: 'elicitation/create', params: { message: 'ok?' } } }], {
        leaseOwner: 'runner',
        statusMessage: null,
        now: Date.now(),
      });
      const answer = (store: PostgresTaskStore, ok: boolean) =>
        store.answerInput(taskId, { answers: [{ key: 'q', response: { action: 'accept', content: { ok } } }], retire: [], add: [], now: Date.now() });
      const [fromA, fromB] = await Promise.all([answer(a, true), answer(b, false)]);
      expect([fromA.accepted, fromB.accepted].map((k) => k.length).sort(), `round ${round}`).toEqual([0, 1]);
      const [request] = await b.listInputRequests(taskId);
      expect(request?.response).toEqual({ action: 'accept', content: { ok: fromA.accepted.length === 1 } });
      const resumes = (await a.readEventsAfter(0, 10_000)).filter((e) => e.taskId === taskId && e.kind === 'status' && e.status === 'working');
      expect(resumes).toHaveLength(1);
    }
  });
});

describe('claiming with FOR UPDATE SKIP LOCKED', () => {
  it('two instances claiming at once get disjoint tasks that together are all of them', async () => {
    const [a, b] = await Promise.all([open(), open()]);
    for (let round = 0; round < 5; round += 1) {
      const ids = (await Promise.all(Array.from({ length: 40 }, () => a.create(newTaskInput())))).map((t) => t.taskId);
      const claims = await Promise.all([a.claimLapsed('i-a', 60_000, 25), b.claimLapsed('i-b', 60_000, 25), a.claimLapsed('i-c', 60_000, 25)]);
      const claimed = claims.flat().map((t) => t.taskId);
      expect(new Set(claimed).size, `round ${round}`).toBe(claimed.length);
      expect(new Set(claimed)).toEqual(new Set(ids));
      for (const [owner, claim] of [
        ['i-a', claims[0]],
        ['i-b', claims[1]],
        ['i-c', claims[2]],
      ] as const) {
        for (const task of claim!) expect((await b.getUnscoped(task.taskId))?.leaseOwner).toBe(owner);
      }
    }
  });

  it('rows another transaction holds are skipped, not waited for (negative control: NOWAIT on them fails)', async () => {
    const store = await open();
    const ids = (await Promise.all(Array.from({ length: 6 }, () => store.create(newTaskInput())))).map((t) => t.taskId);
    const held = ids.slice(0, 3);
    const holder = await raw();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = ANY($1) FOR UPDATE', [held]);
    // The rows really are locked: a claimer that waits (here: refuses to wait) cannot have them.
    const probe = await raw();
    const locked = await probe.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = ANY($1) FOR UPDATE NOWAIT', [held]).catch((e: { code?: string }) => e.code);
    expect(locked).toBe('55P03');
    const claimed = await Promise.race([
      store.claimLapsed('i-a', 60_000, 10),
      new Promise<'blocked'>((resolve) => setTimeout(() => resolve('blocked'), 5_000)),
    ]);
    expect(claimed).not.toBe('blocked');
    expect((claimed as Array<{ taskId: string }>).map((t) => t.taskId).sort()).toEqual(ids.slice(3).sort());
    await holder.query('COMMIT');
    expect((await store.claimLapsed('i-b', 60_000, 10)).map((t) => t.taskId).sort()).toEqual([...held].sort());
  });
});

describe('the database clock judges leases', () => {
  it('leases start at the database clock, and a host whose own clock runs an hour ahead cannot take a live one', async () => {
    const store = await open();
    const clock = await raw();
    const dbNow = async () => Number((await clock.query('SELECT mcp_tasks.now_ms() AS now')).rows[0].now);
    const before = await dbNow();
    const task = await store.create(newTaskInput({ leaseOwner: 'i-a', leaseMs: 60_000 }));
    const after = await dbNow();
    expect(task.leaseExpiresAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(task.leaseExpiresAt).toBeLessThanOrEqual(after + 60_000);
    expect(await store.now()).toBeGreaterThanOrEqual(after);

    // Another instance on a host with a fast clock: the database clock decides, so nothing lapsed.
    const realNow = Date.now;
    Date.now = () => realNow() + 3_600_000;
    try {
      const other = await open();
      expect(await other.claimLapsed('i-b', 60_000, 10)).toEqual([]);
      expect(await other.startAttempt(task.taskId, 'i-b', 60_000)).toBeUndefined();
    } finally {
      Date.now = realNow;
    }
    // Negative control: judged on that host's clock instead, the live lease is stolen.
    const skewed = await open({ clock: { now: () => Date.now() + 3_600_000 } });
    expect((await skewed.claimLapsed('i-b', 60_000, 10)).map((t) => t.taskId)).toEqual([task.taskId]);
  });

  it('a lease renewed with 0 ms lapses at once on the database clock; claiming then takes it', async () => {
    const store = await open();
    const { taskId } = await store.create(newTaskInput({ leaseOwner: 'i-a', leaseMs: 60_000 }));
    expect(await store.claimLapsed('i-b', 60_000, 10)).toEqual([]);
    expect(await store.renewLeases('i-a', [taskId], 0)).toEqual([taskId]);
    expect((await store.claimLapsed('i-b', 60_000, 10)).map((t) => [t.taskId, t.leaseOwner])).toEqual([[taskId, 'i-b']]);
  });

  it('expiry sweeps judge on the database clock: a task whose TTL ran out is deleted, with its expired event', async () => {
    const store = await open();
    const createdAt = Date.now() - 10_000;
    const expired = await store.create(newTaskInput({ createdAt, ttlMs: 1_000 }));
    const alive = await store.create(newTaskInput({ ttlMs: 3_600_000 }));
    expect(await store.expireDue(10)).toEqual([expired.taskId]);
    expect(await store.getUnscoped(alive.taskId)).toBeDefined();
    const [event] = (await store.readEventsAfter(0, 100)).filter((e) => e.kind === 'expired');
    expect(event).toMatchObject({ taskId: expired.taskId, status: 'working' });
    expect(event!.at).toBeGreaterThanOrEqual(createdAt + 10_000);
  });
});

describe('migrations', () => {
  it('instances starting at once on an empty database migrate it exactly once (advisory lock)', async () => {
    const fresh = await createTestDatabase();
    try {
      const opened = await Promise.all(Array.from({ length: 4 }, () => openPostgresTaskStore({ url: fresh.url })));
      try {
        expect(opened.map((s) => s.appliedMigrations.length).sort()).toEqual([0, 0, 0, POSTGRES_MIGRATIONS.length]);
        const { rows } = await (await raw(fresh.url)).query('SELECT version, name FROM mcp_tasks.schema_migrations ORDER BY version');
        expect(rows).toEqual(POSTGRES_MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
      } finally {
        await Promise.all(opened.map((s) => s.close()));
      }
    } finally {
      await fresh.drop();
    }
  });

  it('a newer schema version or a foreign migration history is refused with schema_mismatch, writing nothing', async () => {
    await (await open()).close();
    const client = await raw();
    await client.query("INSERT INTO mcp_tasks.schema_migrations (version, name) VALUES (999, 'from the future')");
    const newer = await expectStoreError(openPostgresTaskStore({ url: database.url }), 'schema_mismatch');
    expect(newer.message).toBe(
      `task store schema version 999 is newer than this mcp-tasks knows (${POSTGRES_MIGRATIONS.length}), and migration 999 ("from the future") is not marked compatible with older code: upgrade mcp-tasks`,
    );
    await client.query('DELETE FROM mcp_tasks.schema_migrations WHERE version = 999');
    await client.query("UPDATE mcp_tasks.schema_migrations SET name = 'someone else' WHERE version = 1");
    const foreign = await expectStoreError(openPostgresTaskStore({ url: database.url }), 'schema_mismatch');
    expect(foreign.message).toMatch(/version 1 is "someone else", expected "initial"/);
    await client.query("UPDATE mcp_tasks.schema_migrations SET name = 'initial' WHERE version = 1");
    await expect(open()).resolves.toBeDefined();
  });

  it('migration 2 (event retention) upgrades a version-1 database in place, keeping its events, and accepts released events', async () => {
    const fresh = await createTestDatabase();
    try {
      const client = await raw(fresh.url);
      expect(await migrate(client, POSTGRES_MIGRATIONS.slice(0, 1))).toEqual([1]);
      await client.query("INSERT INTO mcp_tasks.task_events (seq, task_id, kind, status, at) VALUES (1, 't', 'created', 'working', 1)");
      await client.query('UPDATE mcp_tasks.task_feed SET last_seq = 1');
      const store = await openPostgresTaskStore({ url: fresh.url });
      try {
        expect(store.appliedMigrations).toEqual(POSTGRES_MIGRATIONS.slice(1).map((m) => m.version));
        expect((await store.readEventsAfter(0, 10)).map((e) => [e.seq, e.kind])).toEqual([[1, 'created']]);
        const task = await store.create(newTaskInput({ leaseOwner: 'i-a', leaseMs: 30_000, startNow: true }));
        expect(await store.releaseLeases('i-a', [task.taskId])).toEqual([task.taskId]);
        expect((await store.readEventsAfter(1, 10)).map((e) => e.kind)).toEqual(['created', 'attempt', 'released']);
      } finally {
        await store.close();
      }
    } finally {
      await fresh.drop();
    }
  });

  it('migration 4 (timeline index) upgrades a version-3 database in place: one task’s events in seq order, retention still deletes them', async () => {
    const fresh = await createTestDatabase();
    try {
      const client = await raw(fresh.url);
      expect(await migrate(client, POSTGRES_MIGRATIONS.slice(0, 3))).toEqual([1, 2, 3]);
      for (const [seq, taskId] of [
        [1, 'a'],
        [2, 'b'],
        [3, 'a'],
      ] as const) {
        await client.query("INSERT INTO mcp_tasks.task_events (seq, task_id, kind, status, at) VALUES ($1, $2, 'created', 'working', 1)", [seq, taskId]);
      }
      await client.query('UPDATE mcp_tasks.task_feed SET last_seq = 3');
      const store = await openPostgresTaskStore({ url: fresh.url });
      try {
        expect(store.appliedMigrations).toEqual(POSTGRES_MIGRATIONS.slice(3).map((m) => m.version));
        expect((await store.listTaskEvents('a', 10)).map((e) => e.seq)).toEqual([1, 3]);
      } finally {
        await store.close();
      }
      const { rows } = await client.query("SELECT indexdef FROM pg_indexes WHERE schemaname = 'mcp_tasks' AND indexname = 'task_events_by_task'");
      expect(rows).toEqual([{ indexdef: expect.stringMatching(/\(task_id, seq\)$/) }]);
    } finally {
      await fresh.drop();
    }
  });

  it('migration 5 (idempotency keys, operation ledger, audit log) upgrades a version-4 database in place; the ledger starts empty', async () => {
    const fresh = await createTestDatabase();
    try {
      const client = await raw(fresh.url);
      expect(await migrate(client, POSTGRES_MIGRATIONS.slice(0, 4))).toEqual([1, 2, 3, 4]);
      const store = await openPostgresTaskStore({ url: fresh.url });
      try {
        expect(store.appliedMigrations).toEqual(POSTGRES_MIGRATIONS.slice(4).map((m) => m.version));
        expect(await store.listOperations({ limit: 10 })).toEqual([]);
        const task = await store.create(newTaskInput());
        expect((await store.getUnscoped(task.taskId))?.status).toBe('working');
      } finally {
        await store.close();
      }
    } finally {
      await fresh.drop();
    }
  });

  it('migration 9 (kill switches, issue 15) upgrades a version-8 database in place: no switch is on, a switch can be set', async () => {
    const fresh = await createTestDatabase();
    try {
      const client = await raw(fresh.url);
      expect(await migrate(client, POSTGRES_MIGRATIONS.slice(0, 8))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      const store = await openPostgresTaskStore({ url: fresh.url });
      try {
        expect(store.appliedMigrations).toEqual(POSTGRES_MIGRATIONS.slice(8).map((m) => m.version));
        expect(await store.listKillSwitches()).toEqual([]);
        await store.setKillSwitch({ scope: '*', fallback: null, reason: null, setBy: 'local', setAt: 1 });
        expect(await store.listKillSwitches()).toEqual([{ scope: '*', fallback: null, reason: null, setBy: 'local', setAt: 1 }]);
      } finally {
        await store.close();
      }
    } finally {
      await fresh.drop();
    }
  });

  it('migration 14 (draining processes) upgrades a version-13 database with a registered process in place; an older process on it keeps working', async () => {
    const fresh = await createTestDatabase();
    try {
      const client = await raw(fresh.url);
      expect(await migrate(client, POSTGRES_MIGRATIONS.slice(0, 13))).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
      // An older process registered and running: its registration, and its named statements over `processes` as
      // version 13's code prepared them on its connection (the listing reads `p.*`).
      await client.query(
        "INSERT INTO mcp_tasks.processes VALUES ('w-old', 'worker', 'token-old', 'h', 1, 'd', mcp_tasks.now_ms(), mcp_tasks.now_ms(), mcp_tasks.now_ms() + 600000)",
      );
      const olderList = {
        name: 'older_list_processes',
        text: 'WITH n AS (SELECT COALESCE($1::bigint, mcp_tasks.now_ms()) AS now) SELECT p.*, n.now AS store_now FROM n JOIN mcp_tasks.processes p ON true ORDER BY p.instance_id',
        values: [null],
      };
      const olderReplace = {
        name: 'older_replace_process',
        text: `UPDATE mcp_tasks.processes p SET token = $2, started_at = mcp_tasks.now_ms() WHERE p.instance_id = $1`,
      };
      expect((await client.query(olderList)).rows).toHaveLength(1);
      const store = await openPostgresTaskStore({ url: fresh.url });
      try {
        expect(store.appliedMigrations).toEqual(POSTGRES_MIGRATIONS.slice(13).map((m) => m.version));
        expect(await store.listProcesses()).toEqual([expect.objectContaining({ instanceId: 'w-old', live: true, drainingSince: null })]);
        expect(await store.markProcessDraining('w-old', 'token-old')).toBe(true);
        expect((await store.listProcesses())[0]?.drainingSince).toEqual(expect.any(Number));
        // The older process's statements still run after the upgrade, and what it writes over the row does not drain.
        expect((await client.query(olderList)).rows).toEqual([expect.objectContaining({ instance_id: 'w-old', token: 'token-old' })]);
        await client.query({ ...olderReplace, values: ['w-old', 'token-newer'] });
        expect(await store.listProcesses()).toEqual([expect.objectContaining({ token: 'token-newer', drainingSince: null })]);
        // Why a table and not a column of `processes`: a column changes `p.*`, and the older process's named statement
        // then fails on every execution (negative control).
        await client.query('ALTER TABLE mcp_tasks.processes ADD COLUMN draining_since bigint');
        await expect(client.query(olderList)).rejects.toThrow(/cached plan must not change result type/);
      } finally {
        await store.close();
      }
    } finally {
      await fresh.drop();
    }
  });

  it('a database that does not exist is a fault with the server message, not a hang', async () => {
    const error = await expectStoreError(openPostgresTaskStore({ url: withDatabase(testPostgresUrl(), 'mcp_tasks_no_such_db') }), 'fault');
    expect(error.message).toMatch(/database "mcp_tasks_no_such_db" does not exist/);
  });
});

describe('connections', () => {
  it('a connection killed while its batch waits rejects that batch as unavailable; the process and the store live on', async () => {
    const store = await open({ applicationName: 'mcp-tasks-killed-mid-batch' });
    const { taskId } = await store.create(newTaskInput());
    const holder = await raw();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR UPDATE', [taskId]);
    // The handler is attached at once: the rejection can arrive before the terminating query below has answered.
    const waiting = expectStoreError(store.transition(taskId, { to: 'cancelled', now: Date.now() }), 'unavailable');
    const admin = await raw();
    const blocked = "SELECT pid FROM pg_stat_activity WHERE application_name = 'mcp-tasks-killed-mid-batch' AND wait_event_type = 'Lock'";
    let pids: number[] = [];
    while (pids.length === 0) {
      pids = (await admin.query<{ pid: number }>(blocked)).rows.map((r) => r.pid);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // The server ends the connection under the checked-out client: an 'error' event nobody but the store handles.
    await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids]);
    await waiting;
    await holder.query('COMMIT');
    await expect(store.transition(taskId, { to: 'cancelled', now: Date.now() })).resolves.toMatchObject({ status: 'cancelled' });
  });

  it('connections killed by pg_terminate_backend are replaced: calls recover without a restart', async () => {
    const store = await open({ applicationName: 'mcp-tasks-terminated' });
    const { taskId } = await store.create(newTaskInput());
    const admin = await raw();
    const kill = async () =>
      (
        await admin.query(
          "SELECT count(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'mcp-tasks-terminated') k",
        )
      ).rows[0].n as number;
    expect(await kill()).toBeGreaterThan(0);
    // A call may meet a connection that died under it (unavailable); within a few tries the pool has fresh ones.
    let read: unknown;
    for (let attempt = 0; attempt < 5 && read === undefined; attempt += 1) {
      read = await store.getUnscoped(taskId).catch((e: unknown) => {
        expect(e).toBeInstanceOf(StoreError);
        expect((e as StoreError).code).toBe('unavailable');
        return undefined;
      });
    }
    expect(read).toMatchObject({ taskId });
    await expect(store.transition(taskId, { to: 'cancelled', now: Date.now() })).resolves.toMatchObject({ status: 'cancelled' });
  });
});
