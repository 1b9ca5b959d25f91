/**
 * Issue 25 (after the one-batch-in-flight review): a process's heartbeat and its lease renewals do not wait for a
 * connection of the store's pool. The pool can be held for seconds — result chunks written while their task row is
 * locked, large reads, a stalled batch — and a heartbeat that waited past the registration's TTL (3 s at the
 * defaults) got the process reaped by the others, and its running tasks claimed while they still ran.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { openPostgresTaskStore } from '../../src/store/postgres/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { createTestDatabase, lockWaiter, lockWaitersOf, type TestDatabase, testPostgresUrl } from '../helpers/postgres.js';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

/** Whether `promise` has settled within `ms`. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let waited = 0; waited < ms && !settled; waited += 25) await new Promise((resolve) => setTimeout(resolve, 25));
  return settled;
}

/**
 * A TCP proxy in front of the test server: `mode()` at each new connection says whether to forward it at once, after
 * a delay (ms: a slow connect, as to a server far away with TLS and SCRAM), or never (`'freeze'`: a path that accepts
 * and never answers). Returns the URL through it and a `close`.
 */
async function tcpProxy(mode: () => 'forward' | 'freeze' | number): Promise<{ url: string; close(): void }> {
  const target = new URL(database.url);
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((client) => {
    sockets.add(client);
    const how = mode();
    if (how === 'freeze') return;
    client.pause();
    setTimeout(
      () => {
        const upstream = net.connect(Number(target.port), target.hostname);
        sockets.add(upstream);
        client.pipe(upstream).pipe(client);
        client.on('error', () => upstream.destroy());
        upstream.on('error', () => client.destroy());
      },
      how === 'forward' ? 0 : how,
    );
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const url = new URL(database.url);
  url.port = String((proxy.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    close() {
      for (const socket of sockets) socket.destroy();
      proxy.close();
    },
  };
}

/** Backends of `applicationName` on the test database. */
async function backends(admin: pg.Client, applicationName: string): Promise<number> {
  await admin.query('SELECT pg_stat_clear_snapshot()');
  return (await admin.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [applicationName])).rowCount ?? 0;
}

describe('liveness writes with the pool held (issue 25)', () => {
  it('every connection of the pool held: the heartbeat and a lease renewal are answered, a read waits for the pool (control)', async () => {
    const poolSize = 2;
    const store = await openPostgresTaskStore({ url: database.url, poolSize, applicationName: 'mcp-tasks-pool-held' });
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      const locked = await Promise.all(Array.from({ length: poolSize }, () => store.create(newTaskInput())));
      const running = await store.create(newTaskInput());
      expect(await store.claimRunnable('w-p', 30_000, 10)).toHaveLength(poolSize + 1);
      const entry = { instanceId: 'w-p', role: 'worker' as const, token: 't-p', host: 'h', pid: 1, settingsDigest: 'd' };
      expect(await store.registerProcess(entry, 3_000)).toMatchObject({ registered: true });

      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = ANY($1) FOR UPDATE', [locked.map((task) => task.taskId)]);
      // Each chunk write holds a pooled connection in its own transaction while it waits for its task's row lock.
      const chunkWrites = locked.map((task) =>
        store.putResultChunks(task.taskId, [new Uint8Array([1])]).then(
          (stored) => stored,
          (error: unknown) => error,
        ),
      );
      expect(await lockWaitersOf(holder, 'mcp-tasks-pool-held', poolSize)).toBe(poolSize);

      const read = store.getUnscoped(running.taskId);
      const heartbeat = store.heartbeatProcess('w-p', 't-p', 3_000);
      const renewal = store.renewLeases('w-p', [running.taskId], 30_000);
      expect(await settledWithin(heartbeat, 1_000)).toBe(true);
      expect(await settledWithin(renewal, 1_000)).toBe(true);
      expect(await heartbeat).toBe(true);
      expect(await renewal).toEqual([running.taskId]);
      // Control: the pool was held the whole time.
      expect(await settledWithin(read, 0)).toBe(false);

      await holder.query('ROLLBACK');
      expect(await Promise.all(chunkWrites)).toEqual([true, true]);
      expect((await read)?.taskId).toBe(running.taskId);
      // The liveness connections the writes used are the store's: its close ends them.
      expect(await backends(holder, 'mcp-tasks-pool-held-liveness')).toBeGreaterThan(0);
      await store.close();
      for (let i = 0; i < 100 && (await backends(holder, 'mcp-tasks-pool-held-liveness')) > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await backends(holder, 'mcp-tasks-pool-held-liveness')).toBe(0);
    } finally {
      await holder.end();
      await store.close();
    }
  });

  it('no liveness connection can be opened (the role at its CONNECTION LIMIT): the heartbeat goes out on a connection of the pool', async () => {
    // A role of its own (superusers are exempt from connection limits) owning a database of its own.
    const role = `mcp_tasks_r_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: testPostgresUrl() });
    await admin.connect();
    const own = await createTestDatabase();
    try {
      await admin.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 3`);
      await admin.query(`ALTER DATABASE ${own.name} OWNER TO ${role}`);
      const url = new URL(own.url);
      url.username = role;
      url.password = '';
      const store = await openPostgresTaskStore({ url: url.toString(), poolSize: 1 });
      try {
        const entry = { instanceId: 'w-limit', role: 'worker' as const, token: 't-l', host: 'h', pid: 1, settingsDigest: 'd' };
        expect(await store.registerProcess(entry, 3_000)).toMatchObject({ registered: true });
        // The pool's one connection is open; the role may open no other.
        await admin.query(`ALTER ROLE ${role} CONNECTION LIMIT 1`);
        expect(await store.heartbeatProcess('w-limit', 't-l', 3_000)).toBe(true);
        // Control: the limit holds (a new connection of the role is refused).
        const another = new pg.Client({ connectionString: url.toString() });
        await expect(another.connect()).rejects.toMatchObject({ code: '53300' });
        await another.end().catch(() => undefined);
      } finally {
        await store.close();
      }
    } finally {
      await own.drop();
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
  });

  it('a liveness connect that hangs (a path that accepts and never answers): the heartbeat goes on the pool after 1 s, not after connectTimeoutMs', async () => {
    // Once frozen, the proxy accepts new connections and forwards nothing.
    let frozen = false;
    const proxy = await tcpProxy(() => (frozen ? 'freeze' : 'forward'));
    // A connect timeout far above the registration's lifetime: only the liveness wait answers in time.
    const store = await openPostgresTaskStore({ url: proxy.url, poolSize: 2, connectTimeoutMs: 10_000, applicationName: 'mcp-tasks-hung-connect' });
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      const entry = { instanceId: 'w-h', role: 'worker' as const, token: 't-h', host: 'h', pid: 1, settingsDigest: 'd' };
      expect(await store.registerProcess(entry, 3_000)).toMatchObject({ registered: true });
      expect(await store.heartbeatProcess('w-h', 't-h', 3_000)).toBe(true);
      await store.listProcesses();
      frozen = true;
      // The heartbeat's connection ends; the pool's stays open.
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'mcp-tasks-hung-connect-liveness'");
      for (let i = 0; i < 100 && (await backends(admin, 'mcp-tasks-hung-connect-liveness')) > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      // Until the driver has seen the loss, a heartbeat may meet the dead connection: a failed beat (`unavailable`,
      // "terminating connection" or "Connection terminated"), sent again at the next one. The first that does not needs a new connection.
      let answeredInMs: number | undefined;
      for (let attempt = 0; attempt < 5 && answeredInMs === undefined; attempt++) {
        const started = Date.now();
        const answer = await store.heartbeatProcess('w-h', 't-h', 3_000).then(
          (live) => live,
          (error: unknown) => error,
        );
        if (answer === true) answeredInMs = Date.now() - started;
        else {
          expect(answer).toMatchObject({ code: 'unavailable' });
          expect((answer as Error).message).toMatch(/terminat(ed|ing connection)/i);
        }
      }
      // Answered well inside the 10 s connect timeout, and inside the registration's 3 s lifetime.
      expect(answeredInMs).toBeDefined();
      expect(answeredInMs!).toBeLessThan(2_900);
      // The connect it gave up on still hangs: the store's close waits for it 3 s at most, not the 10 s timeout.
      const closing = Date.now();
      await store.close();
      expect(Date.now() - closing).toBeLessThan(6_000);
    } finally {
      proxy.close();
      await admin.end();
      await store.close().catch(() => undefined);
    }
  });

  it('a server slow to connect to (1.2 s): the first heartbeat goes on the pool, the liveness connection opens all the same and later heartbeats use it with the pool held', async () => {
    const proxy = await tcpProxy(() => 1_200);
    const store = await openPostgresTaskStore({ url: proxy.url, poolSize: 2, connectTimeoutMs: 10_000, applicationName: 'mcp-tasks-slow-connect' });
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      const entry = { instanceId: 'w-s', role: 'worker' as const, token: 't-s', host: 'h', pid: 1, settingsDigest: 'd' };
      expect(await store.registerProcess(entry, 3_000)).toMatchObject({ registered: true });
      const locked = await Promise.all([store.create(newTaskInput()), store.create(newTaskInput())]);
      expect(await store.heartbeatProcess('w-s', 't-s', 3_000)).toBe(true);
      // The connect given up on after 1 s went on, and its connection joined the heartbeat's pool.
      for (let i = 0; i < 300 && (await backends(admin, 'mcp-tasks-slow-connect-liveness')) === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await backends(admin, 'mcp-tasks-slow-connect-liveness')).toBe(1);
      // Now the pool is held (two chunk writes waiting on row locks): the heartbeat does not need it.
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM mcp_tasks.tasks WHERE task_id = ANY($1) FOR UPDATE', [locked.map((task) => task.taskId)]);
      const writes = locked.map((task) =>
        store.putResultChunks(task.taskId, [new Uint8Array([1])]).then(
          (stored) => stored,
          (error: unknown) => error,
        ),
      );
      await lockWaiter(holder, 'the chunk writes');
      const beat = store.heartbeatProcess('w-s', 't-s', 3_000);
      expect(await settledWithin(beat, 900)).toBe(true);
      expect(await beat).toBe(true);
      await holder.query('ROLLBACK');
      expect(await Promise.all(writes)).toEqual([true, true]);
    } finally {
      await holder.end();
      await admin.end();
      await store.close().catch(() => undefined);
      proxy.close();
    }
  });
});
