/**
 * A second process that asks for an instance id a process elsewhere holds (issue 11 item 6) is refused once that
 * holder is seen beating again — one heartbeat later — instead of after the holder's whole heartbeat lifetime; a
 * holder that does not beat is waited out and replaced. Real SQLite store, real timers, 100 ms heartbeats. The holder
 * registers with a 5 s lifetime, so the bound (2.5 s) sits far from both answers: one beat later (~0.35 s) and a
 * lifetime later (5.1 s, how long a refusal took before).
 */
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { silentLogger } from '../../src/core/logger.js';
import { type NewProcessEntry, settingsDifference, settingsVersionGap } from '../../src/core/process-record.js';
import { StoreError } from '../../src/core/store-error.js';
import { checkSettingsAgree, InstanceIdTaken, registerProcess, SettingsDiffer } from '../../src/execution/process-registration.js';
import { openSqliteTaskStore, type SqliteTaskStore } from '../../src/store/sqlite/index.js';
import { newTaskInput } from '../helpers/new-task.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const HEARTBEAT_MS = 100;
const HOLDER_LIFETIME_MS = 5_000;

const temp = makeTempDir('mcp-tasks-registration-');
afterAll(() => temp.remove());

/** `store` with its `registerProcess` calls counted. */
function counted(store: SqliteTaskStore): { store: SqliteTaskStore; calls: () => number } {
  let calls = 0;
  const registerProcess = store.registerProcess.bind(store);
  store.registerProcess = (...args: Parameters<SqliteTaskStore['registerProcess']>) => {
    calls += 1;
    return registerProcess(...args);
  };
  return { store, calls: () => calls };
}

/** A holder on another host (so neither its pid nor its host can tell this process it is dead). */
const elsewhere = (instanceId: string): NewProcessEntry => ({
  instanceId,
  role: 'worker',
  token: 'holder-token',
  host: 'another-host.example',
  pid: 424242,
  settingsDigest: 'x',
});

describe('registerProcess against a holder on another host', () => {
  it('the holder beats: the id is refused at the second look, one beat later (InstanceIdTaken)', async () => {
    const { store, calls } = counted(openSqliteTaskStore({ path: join(temp.dir, 'beating.db') }));
    try {
      await store.registerProcess(elsewhere('dup'), HOLDER_LIFETIME_MS);
      const beating = setInterval(() => void store.heartbeatProcess('dup', 'holder-token', HOLDER_LIFETIME_MS), HEARTBEAT_MS);
      const started = Date.now();
      try {
        const attempt = registerProcess({
          store,
          instanceId: 'dup',
          role: 'worker',
          settingsDigest: 'x',
          heartbeatMs: HEARTBEAT_MS,
          logger: silentLogger,
          onLost() {},
        });
        await expect(attempt).rejects.toBeInstanceOf(InstanceIdTaken);
      } finally {
        clearInterval(beating);
      }
      expect(Date.now() - started).toBeLessThan(HOLDER_LIFETIME_MS / 2);
      // The holder's own registration, then this process's first and second look.
      expect(calls()).toBe(3);
    } finally {
      await store.close();
    }
  });

  it('negative control: a holder that does not beat (lifetime 1 s) is waited out, then replaced (a third look registers)', async () => {
    const { store, calls } = counted(openSqliteTaskStore({ path: join(temp.dir, 'silent.db') }));
    try {
      await store.registerProcess(elsewhere('lapsing'), 1_000);
      const started = Date.now();
      const registration = await registerProcess({
        store,
        instanceId: 'lapsing',
        role: 'worker',
        settingsDigest: 'x',
        heartbeatMs: HEARTBEAT_MS,
        logger: silentLogger,
        onLost() {},
      });
      // The first look found the row unchanged; the third, after the row's lifetime, replaced it.
      expect(calls()).toBe(4);
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      await registration.close();
    } finally {
      await store.close();
    }
  });
});

describe('checkSettingsAgree across versions (a rolling update)', () => {
  const logged: Array<{ fields: unknown; message: string }> = [];
  const logger = { ...silentLogger, warn: (fields: unknown, message?: string) => void logged.push({ fields, message: message ?? '' }) } as typeof silentLogger;

  it('a field only the newer version has is not compared (logged once), while a field both have must agree; negative control: it differs', async () => {
    const store = openSqliteTaskStore({ path: join(temp.dir, 'versions.db') });
    try {
      // The older version's process: its digest has no checkTargets field.
      await store.registerProcess({ ...elsewhere('old-api'), role: 'api', settingsDigest: 'roots=11111111 tools=22222222' }, HOLDER_LIFETIME_MS);
      await checkSettingsAgree(store, 'roots=11111111 tools=22222222 checkTargets=33333333', 'worker', 'new-worker', logger);
      expect(logged).toEqual([{ fields: { otherInstanceId: 'old-api', fields: ['checkTargets'] }, message: expect.stringContaining('runs another version') }]);
      const refused = checkSettingsAgree(store, 'roots=11111111 tools=99999999 checkTargets=33333333', 'worker', 'new-worker', logger);
      await expect(refused).rejects.toBeInstanceOf(SettingsDiffer);
      await expect(refused).rejects.toThrow(/settings differ from live api process old-api in: tools /);
      // Both digests side by side, and the variables behind the key fields named (newcomer, stop 41).
      await expect(refused).rejects.toThrow(
        /\(its digest roots=11111111 tools=22222222; this one's roots=11111111 tools=99999999 checkTargets=33333333\);.*MCP_TASKS_ENCRYPTION_KEYS_OLD/,
      );
      // A digest of the shape before digests by field still differs as a whole.
      await store.registerProcess({ ...elsewhere('older-api'), role: 'api', settingsDigest: 'abcdef' }, HOLDER_LIFETIME_MS);
      await expect(checkSettingsAgree(store, 'roots=11111111 tools=22222222', 'worker', 'new-worker')).rejects.toThrow(
        /all settings: a process of another version/,
      );
    } finally {
      await store.close();
    }
  });

  it('settingsDifference compares only the fields both digests have; settingsVersionGap names the others', () => {
    expect(settingsDifference('a=1 b=2', 'a=1 b=2 c=3')).toEqual([]);
    expect(settingsVersionGap('a=1 b=2', 'a=1 b=2 c=3')).toEqual(['c']);
    expect(settingsDifference('a=1 b=2 d=4', 'a=9 b=2 c=3')).toEqual(['a']);
    expect(settingsVersionGap('a=1 b=2 d=4', 'a=9 b=2 c=3')).toEqual(['d', 'c']);
    expect(settingsVersionGap('abc', 'a=1')).toEqual([]);
  });
});

describe('close with a heartbeat in flight (issue 25 review: heartbeats are statements of their own on PostgreSQL)', () => {
  it('waits for the beat before deregistering, and a beat that finds the row gone while closing does not register again', async () => {
    const store = openSqliteTaskStore({ path: join(temp.dir, 'closing.db') });
    try {
      const order: string[] = [];
      let release: () => void = () => {};
      const register = store.registerProcess.bind(store);
      const deregister = store.deregisterProcess.bind(store);
      const registration = await registerProcess({
        store,
        instanceId: 'closing',
        role: 'worker',
        settingsDigest: 'x',
        heartbeatMs: 20,
        logger: silentLogger,
        onLost() {},
      });
      store.heartbeatProcess = async () => {
        order.push('beat sent');
        await new Promise<void>((resolve) => (release = resolve));
        order.push('beat answered');
        // The registration is found gone (as when the deregistration landed first).
        return false;
      };
      store.registerProcess = (...args: Parameters<SqliteTaskStore['registerProcess']>) => {
        order.push('registered again');
        return register(...args);
      };
      store.deregisterProcess = (...args: Parameters<SqliteTaskStore['deregisterProcess']>) => {
        order.push('deregistered');
        return deregister(...args);
      };
      while (!order.includes('beat sent')) await new Promise((resolve) => setTimeout(resolve, 5));
      const closing = registration.close();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(order).toEqual(['beat sent']);
      release();
      await closing;
      expect(order).toEqual(['beat sent', 'beat answered', 'deregistered']);
      expect((await store.listProcesses()).filter((p) => p.instanceId === 'closing')).toEqual([]);
    } finally {
      store.close();
    }
  });

  it('a beat that never settles holds close for one registration lifetime at most, then it deregisters', async () => {
    const store = openSqliteTaskStore({ path: join(temp.dir, 'closing-stuck.db') });
    try {
      const registration = await registerProcess({
        store,
        instanceId: 'stuck',
        role: 'worker',
        settingsDigest: 'x',
        heartbeatMs: 20,
        logger: silentLogger,
        onLost() {},
      });
      let sent = false;
      store.heartbeatProcess = () => {
        sent = true;
        return new Promise<boolean>(() => {});
      };
      while (!sent) await new Promise((resolve) => setTimeout(resolve, 5));
      await registration.close();
      expect((await store.listProcesses()).filter((p) => p.instanceId === 'stuck')).toEqual([]);
    } finally {
      store.close();
    }
  });
});

/** `registerProcess` of a worker under `instanceId`, 100 ms heartbeats, nothing logged. */
function registerWorker(store: SqliteTaskStore, instanceId: string): ReturnType<typeof registerProcess> {
  return registerProcess({ store, instanceId, role: 'worker', settingsDigest: 'x', heartbeatMs: HEARTBEAT_MS, logger: silentLogger, onLost() {} });
}

describe('the reap of lapsed processes (stop 40 review: it runs apart from the heartbeat)', () => {
  it('never while its own heartbeat fails — the process would reap itself and release its running leases; it resumes after a good beat (control)', async () => {
    const store = openSqliteTaskStore({ path: join(temp.dir, 'self-reap.db') });
    try {
      const task = await store.create(newTaskInput());
      const registration = await registerWorker(store, 'self');
      try {
        expect(await store.claimRunnable('self', 60_000, 1)).toHaveLength(1);
        // Another process that stopped beating: reaped by the next reap this process sends.
        await store.registerProcess(elsewhere('gone'), 200);
        const heartbeat = store.heartbeatProcess.bind(store);
        store.heartbeatProcess = () => Promise.reject(new Error('heartbeat connection unavailable'));
        // Eight beats fail: the registration (three beats) lapses meanwhile.
        await new Promise((resolve) => setTimeout(resolve, 8 * HEARTBEAT_MS));
        // Still this process's, and not released (a release makes the lease lapse at once).
        const held = async (): Promise<boolean> => {
          const record = await store.getUnscoped(task.taskId);
          return record?.leaseOwner === 'self' && (record.leaseExpiresAt ?? 0) > Date.now() + 30_000;
        };
        expect(await held()).toBe(true);
        expect((await store.listProcesses()).map((p) => p.instanceId).sort()).toEqual(['gone', 'self']);
        // Control: once a beat succeeds, the reap runs again and takes the process that stopped.
        store.heartbeatProcess = heartbeat;
        for (let i = 0; i < 100 && (await store.listProcesses()).some((p) => p.instanceId === 'gone'); i++)
          await new Promise((resolve) => setTimeout(resolve, 20));
        expect((await store.listProcesses()).map((p) => p.instanceId)).toEqual(['self']);
        expect(await held()).toBe(true);
      } finally {
        await registration.close();
      }
    } finally {
      store.close();
    }
  });

  it('a reap held up (a stalled batch) past its own registration, whose heartbeats failed meanwhile, does not reap this process', async () => {
    const store = openSqliteTaskStore({ path: join(temp.dir, 'late-reap.db') });
    try {
      const task = await store.create(newTaskInput());
      const reap = store.reapLapsedProcesses.bind(store);
      const heartbeat = store.heartbeatProcess.bind(store);
      let stalled = false;
      store.reapLapsedProcesses = async (exceptInstanceId) => {
        if (!stalled) {
          stalled = true;
          // From here the batch stalls, and the heartbeats fail (their connections refused, the pool saturated).
          store.heartbeatProcess = () => Promise.reject(new Error('no connection'));
          await new Promise((resolve) => setTimeout(resolve, 8 * HEARTBEAT_MS));
        }
        return reap(exceptInstanceId);
      };
      const registration = await registerWorker(store, 'self');
      try {
        expect((await store.claimRunnable('self', 60_000, 1)).map((claimed) => claimed.taskId)).toEqual([task.taskId]);
        await new Promise((resolve) => setTimeout(resolve, 12 * HEARTBEAT_MS));
        expect(stalled).toBe(true);
        const record = await store.getUnscoped(task.taskId);
        expect(record?.leaseOwner === 'self' && (record.leaseExpiresAt ?? 0) > Date.now() + 30_000).toBe(true);
        store.heartbeatProcess = heartbeat;
      } finally {
        await registration.close();
      }
    } finally {
      store.close();
    }
  });
});

describe('markDraining (a SIGTERMed process tells the registry it takes no new task)', () => {
  it('marks its registration; a registration made again after a lapse is marked again; close removes both (control: not marked before)', async () => {
    const store = openSqliteTaskStore({ path: join(temp.dir, 'draining.db') });
    try {
      const registration = await registerDrainingWorker(store);
      expect(await store.listProcesses()).toEqual([expect.objectContaining({ instanceId: 'w-drain', drainingSince: null })]);
      await registration.markDraining();
      const [marked] = await store.listProcesses();
      expect(marked?.drainingSince).toEqual(expect.any(Number));
      // Its registration lapses and is reaped (a stall; the mark goes with the row): the beat that registers it again
      // marks the new registration too.
      await store.deregisterProcess('w-drain', marked?.token as string);
      const again = await eventuallyListed(store, (p) => p.startedAt > (marked?.startedAt ?? 0) && p.drainingSince !== null);
      expect(again).toMatchObject({ instanceId: 'w-drain', live: true });
      await registration.close();
      expect(await store.listProcesses()).toEqual([]);
    } finally {
      await store.close();
    }
  });
});

describe('markDraining when the store fails the mark', () => {
  it('a mark that failed once is written by a later beat (the drain is not counted as taking tasks for long); control: it failed first', async () => {
    const store = openSqliteTaskStore({ path: join(temp.dir, 'draining-retry.db') });
    const markProcessDraining = store.markProcessDraining.bind(store);
    let attempts = 0;
    store.markProcessDraining = async (...args: Parameters<SqliteTaskStore['markProcessDraining']>) => {
      attempts += 1;
      // The store blips once at SIGTERM (a statement timeout, a failover): a fault the test cannot cause otherwise.
      if (attempts === 1) throw new StoreError('unavailable', 'Task store unavailable: cannot write (test)');
      return markProcessDraining(...args);
    };
    try {
      const registration = await registerDrainingWorker(store);
      await registration.markDraining();
      expect(attempts).toBe(1);
      expect((await store.listProcesses())[0]?.drainingSince).toBeNull();
      const marked = await eventuallyListed(store, (p) => p.drainingSince !== null);
      expect(marked.live).toBe(true);
      expect(attempts).toBe(2);
      await registration.close();
    } finally {
      await store.close();
    }
  });
});

/** Worker `w-drain` registered on `store` with 100 ms beats (the draining tests' process). */
function registerDrainingWorker(store: SqliteTaskStore) {
  return registerProcess({ store, instanceId: 'w-drain', role: 'worker', settingsDigest: 'x', heartbeatMs: HEARTBEAT_MS, logger: silentLogger, onLost() {} });
}

/** The registration of `w-drain` once `matches` holds for it (2 s at most). */
async function eventuallyListed(store: SqliteTaskStore, matches: (p: Awaited<ReturnType<SqliteTaskStore['listProcesses']>>[number]) => boolean) {
  const deadline = Date.now() + 2_000;
  for (;;) {
    const found = (await store.listProcesses()).find((p) => p.instanceId === 'w-drain' && matches(p));
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`not within 2 s: ${JSON.stringify(await store.listProcesses())}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
