import { close, fsync, openSync } from 'node:fs';

/** `fs.fsync`'s shape: flushes `fd` to disk and calls back (on the libuv thread pool; the event loop goes on). */
export type FsyncFn = (fd: number, done: (error: NodeJS.ErrnoException | null) => void) => void;

/**
 * Makes commits of the SQLite store durable off the event loop (issue 25, P1).
 *
 * With `synchronous=FULL`, SQLite fsyncs the write-ahead log inside every COMMIT, on the calling thread: ~2 ms of
 * blocked event loop per commit on this project's machines (`fdatasync` of a 4 KiB append, ext4 on a virtual disk),
 * which bounded a `serve` on SQLite to about a third of what it did without it. The store now runs the connection
 * at `synchronous=NORMAL` (in WAL mode: a commit is written to the log but not fsynced; a checkpoint still fsyncs
 * the log before it copies it, so a power loss loses recent commits, never the file) and this class fsyncs the log
 * file itself, on the thread pool, before any commit is acknowledged: a write's promise resolves, and its events are
 * published, only after an fsync that started after its COMMIT returned. Commits that come while one fsync runs share
 * the next one (a second group commit, at the disk).
 *
 * On Linux `fsync(2)` flushes every dirty page of the file, whoever wrote it, so one descriptor of ours covers the
 * whole log; SQLite keeps the `-wal` file (the same inode: a checkpoint that resets or truncates it rewrites it in
 * place) while a connection is open, and the store's connection stays open as long as this object is used.
 */
export class WalSync {
  private fd: number | undefined;
  /** Waiting for the next fsync to start (their commits returned after the running one started). */
  private next: Array<(error?: Error) => void> = [];
  /** Covered by the fsync that runs now (empty when none runs). */
  private current: Array<(error?: Error) => void> = [];
  private running = false;
  private idleWaiters: Array<() => void> = [];

  /**
   * @param walPath - the `-wal` file of the store's database (opened on the first {@link afterCommit}: it exists
   *   once the connection has written).
   * @param flush - `fs.fsync`; a test passes its own to hold an fsync or fail it.
   */
  constructor(
    private readonly walPath: string,
    private readonly flush: FsyncFn = fsync,
  ) {}

  /** Whether a commit waits for its fsync (readers then wait too, see `SqliteContext.durable`). */
  get pending(): boolean {
    return this.running || this.next.length > 0;
  }

  /**
   * Call `done` once everything the process wrote to the log before this call is on disk; with the error of the
   * fsync (or of opening the log) when it failed. Callbacks run in the order they were registered.
   */
  afterCommit(done: (error?: Error) => void): void {
    this.next.push(done);
    if (!this.running) this.start();
  }

  /**
   * For a read: `undefined` when every commit of this process is durable, else a promise that resolves once the ones
   * made so far are (whether or not that fsync succeeded: the writers get its error). Starts no fsync of its own.
   */
  whenDurable(): Promise<void> | undefined {
    if (this.next.length > 0) return new Promise((resolve) => this.next.push(() => resolve()));
    if (this.running) return new Promise((resolve) => this.current.push(() => resolve()));
    return undefined;
  }

  /** Resolves once no fsync runs or waits (the store's `close` awaits it before closing the connection). */
  idle(): Promise<void> {
    if (!this.pending) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Close the log's descriptor; call after {@link idle}. */
  close(): void {
    if (this.fd !== undefined) close(this.fd, () => {});
    this.fd = undefined;
  }

  private start(): void {
    this.current = this.next;
    this.next = [];
    this.running = true;
    const finish = (error?: Error): void => {
      const covered = this.current;
      this.current = [];
      this.running = false;
      for (const done of covered) done(error);
      if (this.next.length > 0) this.start();
      else for (const resolve of this.idleWaiters.splice(0)) resolve();
    };
    let fd: number;
    try {
      // 'r+': fsync needs no write access on Linux, but other systems may refuse it on a read-only descriptor.
      fd = this.fd ??= openSync(this.walPath, 'r+');
    } catch (error) {
      queueMicrotask(() => finish(error as Error));
      return;
    }
    this.flush(fd, (error) => finish(error ?? undefined));
  }
}
