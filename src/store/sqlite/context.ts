import type Database from 'better-sqlite3';

import type { Clock } from '../../core/clock.js';
import type { TaskEvent } from '../../core/ports/feed.js';
import type { JsonObject } from '../../core/task.js';
import type { TaskEventListeners } from '../../core/task-event-listeners.js';
import type { RowCodec } from '../codec.js';
import { type GroupCommitter, storageFault } from './group-commit.js';
import type { BatchWriter } from './inputs.js';
import { LEDGER_SQL } from './ledger-sql.js';
import { SQL, type Statements } from './sql.js';
import type { WalSync } from './wal-sync.js';

/**
 * What every port of the SQLite store shares: one connection, its prepared statements, the group committer every
 * write goes through, the store's clock and row codec. Made once per store; the port objects hold it and add no
 * allocation per call.
 */
export class SqliteContext {
  /** The statements of `sql.ts`, prepared once. */
  readonly stmt: Statements;
  /** The statements of `ledger-sql.ts`, prepared once. */
  readonly ledger: Record<keyof typeof LEDGER_SQL, Database.Statement>;
  /** Set by the store's `close`: later reads and session queries fail instead of touching a closed connection. */
  closed = false;

  constructor(
    readonly db: Database.Database,
    readonly clock: Clock,
    readonly codec: RowCodec,
    readonly committer: GroupCommitter,
    readonly listeners: TaskEventListeners,
    readonly walSync: WalSync,
  ) {
    this.stmt = Object.fromEntries(Object.entries(SQL).map(([name, sql]) => [name, db.prepare(sql)])) as Statements;
    this.ledger = Object.fromEntries(Object.entries(LEDGER_SQL).map(([name, sql]) => [name, db.prepare(sql)])) as Record<
      keyof typeof LEDGER_SQL,
      Database.Statement
    >;
  }

  /** Insert one `task_events` row inside the current batch and collect it for publication after COMMIT. */
  append(events: TaskEvent[], taskId: string, kind: TaskEvent['kind'], status: TaskEvent['status'], at: number, payload: JsonObject | null): TaskEvent {
    const { lastInsertRowid } = this.stmt.appendEvent.run({ taskId, kind, status, at, payload: payload === null ? null : JSON.stringify(payload) });
    const event: TaskEvent = { seq: Number(lastInsertRowid), taskId, kind, status, at, payload };
    events.push(event);
    return event;
  }

  /** The current operation's view of the batch, for the functions in `inputs.ts`. */
  writer(events: TaskEvent[]): BatchWriter {
    return {
      stmt: this.stmt,
      codec: this.codec,
      append: (taskId, kind, status, at, payload) => {
        this.append(events, taskId, kind, status, at, payload);
      },
    };
  }

  /**
   * Run a synchronous read, then answer it once what it may have seen is on disk (see `WalSync.afterRead`): a commit
   * is visible on the connection, this process's or another's, a moment before its fsync returns, and a caller must
   * never see a state that a power loss could take back (a status that goes back, a result that disappears).
   * @throws {StoreError} `fault` as {@link read} does, or the failure that stopped the store.
   */
  async readDurable<T>(action: string, run: () => T): Promise<T> {
    const value = this.read(action, run);
    const wait = this.walSync.afterRead();
    if (wait) await wait;
    return value;
  }

  /**
   * Run one autocommit write outside the group commit (the sessions port), resolving once it is on disk.
   * @throws {StoreError} `fault` naming `action`, or the failure that stopped the store.
   */
  async writeAlone<T>(action: string, run: () => T): Promise<T> {
    const value = this.read(action, run);
    await this.walSync.committed();
    return value;
  }

  /** Run a synchronous statement, mapping a driver error to a `StoreError` `fault` naming `action`. */
  private read<T>(action: string, run: () => T): T {
    const failure = this.walSync.failure;
    if (failure) throw failure;
    try {
      return run();
    } catch (error) {
      throw storageFault(error, action);
    }
  }
}
