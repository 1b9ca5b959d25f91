/**
 * `StoreError.outOfSpace` (a contract-tier file, named postgres-*, for its PostgreSQL half): which store faults mean
 * "no room for the write" — the ones a re-run meets again until an operator frees space, so a run whose result hits
 * one fails its task (`result_not_stored`) rather than being run again. SQLite's full database is caused for real
 * (`max_page_count`); PostgreSQL's disk_full (53100) cannot be caused here without filling its volume, so its driver
 * error is built; the transient fault beside it is real.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';

import { toStoreError } from '../../src/store/postgres/connection.js';
import { storageFault } from '../../src/store/sqlite/group-commit.js';
import { createTestDatabase, rawClients } from '../helpers/postgres.js';

describe('StoreError.outOfSpace', () => {
  it('SQLite: SQLITE_FULL is out of space; control: a constraint error is a fault that is not', () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)');
    db.pragma('max_page_count = 4');
    const full = (() => {
      try {
        db.prepare('INSERT INTO t (body) VALUES (?)').run(Buffer.alloc(64 * 1024));
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect((full as { code?: string }).code).toBe('SQLITE_FULL');
    expect(storageFault(full, 'write')).toMatchObject({ code: 'fault', outOfSpace: true });
    const constraint = (() => {
      try {
        db.prepare('INSERT INTO t (id) VALUES (1), (1)').run();
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect((constraint as { code?: string }).code).toMatch(/^SQLITE_CONSTRAINT/);
    expect(storageFault(constraint, 'write')).toMatchObject({ code: 'fault', outOfSpace: false });
    db.close();
  });

  it('PostgreSQL: 53100 disk_full is out of space; control: a lock timeout (55P03, real) is a fault that passes', async () => {
    const database = await createTestDatabase();
    const clients = rawClients();
    try {
      const holder = await clients.connect(database.url);
      const waiter = await clients.connect(database.url);
      await holder.query('CREATE TABLE t (id int)');
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE t IN ACCESS EXCLUSIVE MODE');
      await waiter.query("SET lock_timeout = '50ms'");
      const timedOut = await waiter.query('SELECT * FROM t').then(
        () => undefined,
        (error: unknown) => error,
      );
      await holder.query('ROLLBACK');
      expect((timedOut as { code?: string }).code).toBe('55P03');
      expect(toStoreError(timedOut, 'store result chunks')).toMatchObject({ code: 'fault', outOfSpace: false });
      const diskFull = Object.assign(new Error('could not extend file "base/16384/16385": No space left on device'), { code: '53100', severity: 'ERROR' });
      expect(toStoreError(diskFull, 'store result chunks')).toMatchObject({
        code: 'fault',
        outOfSpace: true,
        requestorMessage: 'Task store failed to store result chunks',
      });
    } finally {
      await clients.endAll();
      await database.drop();
    }
  });
});
