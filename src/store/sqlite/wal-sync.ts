import { closeSync, fsync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

import { StoreError } from '../../core/store-error.js';

/** `fs.fsync`'s shape: flushes `fd` to disk and calls back (on the libuv thread pool; the event loop goes on). */
export type FsyncFn = (fd: number, done: (error: NodeJS.ErrnoException | null) => void) => void;

type Waiter = (error?: Error) => void;

/**
 * Makes commits of the SQLite store durable off the event loop (issue 25, P1).
 *
 * With `synchronous=FULL`, SQLite fsyncs the write-ahead log inside every COMMIT, on the calling thread: ~2 ms of
 * blocked event loop per commit on this project's machines (`fdatasync` of a 4 KiB append, ext4 on a virtual disk),
 * which bounded a `serve` on SQLite to about a third of what it did without it. The store now runs the connection
 * at `synchronous=NORMAL` (in WAL mode: a commit is written to the log but not fsynced; a checkpoint still fsyncs
 * the log before it copies it, so a power loss loses recent commits, never the file) and this class fsyncs the log
 * file itself, on the thread pool:
 * - **writes** ({@link afterCommit}): a write's promise resolves, and its events are published, only after an fsync
 *   that started after its COMMIT returned; commits made while one fsync runs share the next one;
 * - **reads** ({@link afterRead}): a read that may have seen a commit not yet on disk — this process's own, or
 *   another process's (SQLite's `data_version` moved since the last fsync started) — answers only after an fsync
 *   that covers it. On Linux `fsync(2)` flushes every dirty page of the file whoever wrote it, so one descriptor of
 *   ours covers the whole log, other processes' frames included;
 * - **a failed fsync stops the store** ({@link failure}): Linux may drop the pages of a failed fsync and report the
 *   next one as successful, and a log whose checksum chain breaks there loses every later commit at recovery, so
 *   nothing is acknowledged after one (as PostgreSQL stops on a failed fsync). The process must be restarted.
 *
 * The log's descriptor is opened when the store opens, from the path SQLite itself resolved (`PRAGMA database_list`:
 * absolute, symbolic links followed), and SQLite keeps that file (the same inode: a checkpoint that resets or
 * truncates it rewrites it in place) while the store's connection is open.
 */
export class WalSync {
  private readonly fd: number;
  /** Waiting for the next fsync to start (they need one that starts after now). */
  private next: Waiter[] = [];
  /** Covered by the fsync that runs now (`undefined` when none runs). */
  private current: Waiter[] | undefined;
  /** `data_version` when the last fsync started (or when this opened): other processes' commits up to it are covered. */
  private startedAtVersion: number;
  private failed: StoreError | undefined;
  private idleWaiters: Array<() => void> = [];

  /**
   * Opens the log, fsyncs it and its directory once (the migrations just made, and a log file that may be new).
   * @param walPath - the absolute path of the database's `-wal` file.
   * @param dataVersion - reads `PRAGMA data_version` on the store's connection.
   * @param flush - `fs.fsync`; a test passes its own to hold an fsync or fail it.
   * @throws the `open`/`fsync` error (the store then fails to open).
   */
  constructor(
    walPath: string,
    private readonly dataVersion: () => number,
    private readonly flush: FsyncFn = fsync,
  ) {
    // 'r+': fsync needs no write access on Linux, but other systems may refuse it on a read-only descriptor.
    this.fd = openSync(walPath, 'r+');
    try {
      this.startedAtVersion = dataVersion();
      fsyncSync(this.fd);
      const directory = openSync(dirname(walPath), 'r');
      try {
        fsyncSync(directory);
      } finally {
        closeSync(directory);
      }
    } catch (error) {
      closeSync(this.fd);
      throw error;
    }
  }

  /** The error that stopped the store, if an fsync failed. */
  get failure(): StoreError | undefined {
    return this.failed;
  }

  /**
   * Call `done` once everything this process wrote to the log before this call is on disk; with the error that
   * stopped the store when an fsync failed (now or before). Callbacks run in the order they were registered.
   */
  afterCommit(done: Waiter): void {
    if (this.failed) {
      const failed = this.failed;
      queueMicrotask(() => done(failed));
      return;
    }
    this.next.push(done);
    if (!this.current) this.start();
  }

  /**
   * For a read that already ran: `undefined` when nothing it may have seen can still be lost, else a promise that
   * resolves once it is on disk (rejects with the store's failure). A read is covered by the fsync that runs now
   * unless commits wait for the next one or another process committed since it started (then it needs one that
   * starts after it).
   */
  afterRead(): Promise<void> | undefined {
    if (this.failed) return Promise.reject(this.failed);
    const waiting = this.next.length > 0 || this.dataVersion() !== this.startedAtVersion;
    const list = waiting ? this.next : this.current;
    if (!list) return undefined;
    const wait = new Promise<void>((resolve, reject) => list.push((error) => (error ? reject(error) : resolve())));
    if (waiting && !this.current) this.start();
    return wait;
  }

  /** {@link afterCommit} as a promise: resolves once on disk, rejects with the failure that stopped the store. */
  committed(): Promise<void> {
    return new Promise((resolve, reject) => this.afterCommit((error) => (error ? reject(error) : resolve())));
  }

  /** Resolves once no fsync runs or waits (the store's `close` awaits it before closing the connection). */
  idle(): Promise<void> {
    if (!this.current && this.next.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Close the log's descriptor; call after {@link idle}. */
  close(): void {
    closeSync(this.fd);
  }

  private start(): void {
    // Each fsync settles exactly the list it took when it started: a commit made while it runs (even from one of its
    // own callbacks) goes to `next` and waits for the fsync after it.
    const covered = this.next;
    this.next = [];
    this.current = covered;
    this.startedAtVersion = this.dataVersion();
    const finish = (error: NodeJS.ErrnoException | null): void => {
      if (error && !this.failed)
        this.failed = new StoreError(
          'fault',
          `Task store stopped: an fsync of its write-ahead log failed (${error.message}); the server process must be restarted`,
          {
            cause: error,
          },
        );
      this.current = undefined;
      for (const done of covered) done(this.failed);
      if (this.failed) for (const done of this.next.splice(0)) done(this.failed);
      if (!this.current && this.next.length > 0) this.start();
      else if (!this.current) for (const resolve of this.idleWaiters.splice(0)) resolve();
    };
    try {
      this.flush(this.fd, finish);
    } catch (error) {
      queueMicrotask(() => finish(error as NodeJS.ErrnoException));
    }
  }
}
