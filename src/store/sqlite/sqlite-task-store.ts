import type Database from 'better-sqlite3';

import { type Clock, systemClock } from '../../core/clock.js';
import { type Logger, silentLogger } from '../../core/logger.js';
import { NEWER_COMPATIBLE_SCHEMA } from '../../core/schema-compatibility.js';
import { TaskEventListeners } from '../../core/task-event-listeners.js';
import { RowCodec } from '../codec.js';
import { ComposedTaskStore } from '../composed-task-store.js';
import type { FieldCipher } from '../field-cipher.js';
import { SqliteAdmission } from './admission.js';
import { openConnection, readPragmas, type SqlitePragmas } from './connection.js';
import { SqliteContext } from './context.js';
import { SqliteFeed } from './feed.js';
import { type GroupCommitStats, GroupCommitter, storageFault } from './group-commit.js';
import { SqliteInputs } from './inputs.js';
import { SqliteLeases } from './leases.js';
import { SqliteLedger } from './ledger.js';
import { SqliteMaintenance } from './maintenance.js';
import { migrateSchema } from './migrations.js';
import { SqliteProcesses } from './processes.js';
import { SqliteResults } from './results.js';
import { SqliteRollout } from './rollout.js';
import { SqliteRows } from './rows.js';
import { sqliteSessionTables } from './sessions.js';
import { SqliteSteps } from './steps.js';
import { type FsyncFn, WalSync } from './wal-sync.js';

/** Options of {@link openSqliteTaskStore}. */
export interface SqliteTaskStoreOptions {
  /** Database file; parent directories are created. Must be a real file (WAL needs one). */
  path: string;
  logger?: Logger;
  /**
   * The store's clock: judges leases (`startAttempt`, `renewLeases`, `claimLapsed`, a created task's lease) and the
   * expiry sweep (`expireDue`), and stamps journaled steps and migrations. Default: wall clock. Tests pass the
   * fake clock their runtime uses.
   */
  clock?: Clock;
  /** How long a writer waits for another process's lock, in ms. Default 5000. */
  busyTimeoutMs?: number;
  /** Most writes per group commit; a full batch flushes at once. Default 256. */
  maxBatchSize?: number;
  /**
   * Encrypts tool arguments, input requests and answers and journaled steps at rest (`AesGcmFieldCipher`).
   * Default: none (plaintext; encrypted rows are then refused with a `fault` naming their key id).
   */
  encryption?: FieldCipher;
  /**
   * How the write-ahead log is fsynced before a commit is acknowledged (see {@link WalSync}). Default `fs.fsync` (on
   * the libuv thread pool); tests pass their own to hold or fail it.
   */
  fsync?: FsyncFn;
}

/**
 * The durable `TaskStore` on one SQLite file (better-sqlite3, WAL, the log fsynced off the event loop by
 * {@link WalSync}), composed of one object per port (`rows.ts`, `leases.ts`, … in this folder, the same file names
 * as `store/postgres/`) over one {@link SqliteContext}.
 *
 * Writes go through a {@link GroupCommitter}: concurrent writes share one transaction and every promise
 * resolves only after that transaction committed and its log was fsynced. Reads are synchronous statements on the
 * same connection, answered once what they saw is on disk ({@link SqliteContext.readDurable}). Several stores
 * (processes) may open one file; SQLite's write lock serialises their batches and the conditional statements in
 * `sql.ts` settle their races.
 *
 * Errors: a `StoreError` — `fault` for storage faults (driver error as `cause`), `unavailable` when another
 * process held the write lock past `busyTimeoutMs`, `conflict` for an idempotency key already taken, `invalid` for
 * a broken precondition of the port.
 */
export class SqliteTaskStore extends ComposedTaskStore {
  /** Schema versions this instance applied when it opened (empty when another opener already had). */
  readonly appliedMigrations: readonly number[];
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly ctx: SqliteContext,
    appliedMigrations: number[],
  ) {
    super({
      rows: new SqliteRows(ctx),
      admission: new SqliteAdmission(ctx),
      leases: new SqliteLeases(ctx),
      inputs: new SqliteInputs(ctx),
      results: new SqliteResults(ctx),
      steps: new SqliteSteps(ctx),
      processes: new SqliteProcesses(ctx),
      feed: new SqliteFeed(ctx),
      ledger: new SqliteLedger(ctx),
      rollout: new SqliteRollout(ctx),
      maintenance: new SqliteMaintenance(ctx),
      sessions: sqliteSessionTables(ctx),
    });
    this.appliedMigrations = Object.freeze(appliedMigrations);
  }

  /** See {@link openSqliteTaskStore}. */
  static open(options: SqliteTaskStoreOptions): SqliteTaskStore {
    const logger = (options.logger ?? silentLogger).child({ component: 'sqlite-task-store' });
    const clock = options.clock ?? systemClock;
    let db: Database.Database | undefined;
    try {
      db = openConnection(options.path, Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000)));
      const { applied, schema } = migrateSchema(db, clock.now());
      if (applied.length > 0) logger.info({ versions: applied }, 'task store schema migrated');
      if (schema.state === 'newer-compatible') logger.info({ ...schema }, NEWER_COMPATIBLE_SCHEMA);
      if (Number(db.pragma('auto_vacuum', { simple: true })) === 0) {
        logger.info(
          { path: options.path },
          'this store file was created without auto_vacuum: deleted tasks free pages for reuse, but the file never shrinks (see docs/operations/retention.md)',
        );
      }
      const listeners = new TaskEventListeners(logger);
      const dataVersion = db.prepare('PRAGMA data_version').pluck();
      const walSync = new WalSync(`${mainFile(db)}-wal`, () => dataVersion.get() as number, options.fsync);
      const committer = new GroupCommitter(db, Math.max(1, options.maxBatchSize ?? 256), (events) => listeners.publish(events), logger, walSync);
      return new SqliteTaskStore(new SqliteContext(db, clock, new RowCodec(options.encryption), committer, listeners, walSync), applied);
    } catch (error) {
      db?.close();
      throw storageFault(error, 'open');
    }
  }

  /** Connection settings as reported by SQLite (tests assert `wal` / `1`). */
  pragmas(): SqlitePragmas {
    return readPragmas(this.ctx.db);
  }

  /** Group-commit counters: `commits` = write transactions committed, `operations` = writes they carried. */
  stats(): GroupCommitStats {
    return { ...this.ctx.committer.stats };
  }

  /** Commit every queued write, then close the connection. Later calls return the same promise. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.ctx.closed = true;
      const { committer } = this.ctx;
      // Called from an event listener, the current batch is still on the stack: let it finish first.
      while (committer.busy) await new Promise((resolve) => setImmediate(resolve));
      committer.drain();
      committer.close();
      // The last batches' promises settle after their fsync; the log's descriptor and the connection close after.
      await this.ctx.walSync.idle();
      this.ctx.walSync.close();
      this.ctx.listeners.clear();
      this.ctx.db.close();
    })();
    return this.closing;
  }
}

/**
 * Open (creating if needed) a SQLite task store: WAL (fsynced by {@link WalSync}), `busy_timeout`, foreign keys on,
 * schema migrated under `BEGIN IMMEDIATE` (a newer schema whose newer migrations are all marked compatible opens as
 * it is: see `migrateSchema`).
 * @throws {StoreError} `schema_mismatch` when the file holds a newer migration marked breaking (or unmarked), or a
 *   known version under another name; `fault` when the file cannot be opened, WAL is unavailable or a migration fails.
 */
export function openSqliteTaskStore(options: SqliteTaskStoreOptions): SqliteTaskStore {
  return SqliteTaskStore.open(options);
}

/**
 * The database file as SQLite resolved it (absolute, symbolic links followed): its log is that path with `-wal`, not
 * the path the store was given (a link, or a relative path read later from another directory).
 */
function mainFile(db: Database.Database): string {
  const main = (db.pragma('database_list') as Array<{ name: string; file: string }>).find((entry) => entry.name === 'main');
  if (!main?.file) throw new Error('SQLite reports no file for the main database (an in-memory store has no log to fsync)');
  return main.file;
}
