import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

import Database from 'better-sqlite3';

/** Blocks the thread for `ms` (opening is synchronous; a store is opened once at startup). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/**
 * Switch the file to WAL. SQLite answers `SQLITE_BUSY` at once, without consulting busy_timeout, when another
 * connection holds a lock during the switch, which happens whenever two processes open the same NEW file
 * together. So retry with a short back-off until `busyTimeoutMs` is spent. A file already in WAL mode (every
 * open after the first) returns on the first try.
 */
function enableWal(db: Database.Database, busyTimeoutMs: number): void {
  const deadline = Date.now() + busyTimeoutMs;
  for (let delay = 1; ; delay = Math.min(delay * 2, 50)) {
    try {
      const mode = db.pragma('journal_mode = WAL', { simple: true });
      if (mode !== 'wal') throw new Error(`journal_mode is ${String(mode)}; WAL needs a database file`);
      return;
    } catch (error) {
      if (!isBusy(error) || Date.now() >= deadline) throw error;
      sleepSync(delay);
    }
  }
}

/**
 * Open `path` (creating parent directories) with the settings every connection of the store needs:
 * `busy_timeout` (first, so the steps after it wait for other openers), `auto_vacuum = INCREMENTAL` (takes effect
 * only on a file that has no table yet: freed pages can then be given back with `incremental_vacuum`), WAL,
 * `synchronous=NORMAL` (a commit is written to the log without an fsync on this thread; the store fsyncs the log off
 * the event loop before it acknowledges a write, see `wal-sync.ts`, so "resolves after the commit" still means
 * durable) and foreign keys (the child-row cascades depend on them).
 * @throws the driver error; the connection is closed again.
 */
export function openConnection(path: string, busyTimeoutMs: number): Database.Database {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  // Task arguments and results may be confidential: create the file owner-only before SQLite does (its -wal and
  // -shm files inherit the database file's permissions). An existing file keeps its mode.
  closeSync(openSync(path, 'a', 0o600));
  const db = new Database(path);
  try {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    db.pragma('auto_vacuum = INCREMENTAL');
    enableWal(db, busyTimeoutMs);
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** Connection settings as SQLite reports them (see `SqliteTaskStore.pragmas`). */
export interface SqlitePragmas {
  /** `wal` for every store. */
  journalMode: string;
  /** `1` = NORMAL: commits are not fsynced by SQLite; the store fsyncs the log itself (`wal-sync.ts`). */
  synchronous: number;
  foreignKeys: boolean;
  /** Ms. */
  busyTimeout: number;
  /** `2` = INCREMENTAL for files this version created; `0` = NONE for older files (until `VACUUM`ed, see docs/operations/retention.md). */
  autoVacuum: number;
}

/** Read back the settings {@link openConnection} applied. */
export function readPragmas(db: Database.Database): SqlitePragmas {
  return {
    journalMode: String(db.pragma('journal_mode', { simple: true })),
    synchronous: Number(db.pragma('synchronous', { simple: true })),
    foreignKeys: Number(db.pragma('foreign_keys', { simple: true })) === 1,
    busyTimeout: Number(db.pragma('busy_timeout', { simple: true })),
    autoVacuum: Number(db.pragma('auto_vacuum', { simple: true })),
  };
}
