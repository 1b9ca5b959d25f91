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
import type { NewProcessEntry } from '../../src/core/process-record.js';
import { InstanceIdTaken, registerProcess } from '../../src/execution/process-registration.js';
import { openSqliteTaskStore, type SqliteTaskStore } from '../../src/store/sqlite/index.js';
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
