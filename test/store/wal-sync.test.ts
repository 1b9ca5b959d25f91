import { fsync } from 'node:fs';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { TaskEvent } from '../../src/core/store.js';
import { StoreError } from '../../src/core/store-error.js';
import { openSqliteTaskStore, type SqliteTaskStore } from '../../src/store/sqlite/index.js';
import type { FsyncFn } from '../../src/store/sqlite/wal-sync.js';
import { newTaskInput as task } from '../helpers/new-task.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * Issue 25 (P1): the SQLite store runs at synchronous=NORMAL and fsyncs the write-ahead log itself, on the thread
 * pool. These tests hold that fsync (a real `fs.fsync`, released by the test) to show what waits for it. A power loss
 * cannot be caused here; what can be shown is that nothing is acknowledged, published or read before the fsync of
 * the log returned.
 */

/** An fsync the test holds: every call waits until `release()`; `fail` makes the released calls fail. */
function heldFsync() {
  const held: Array<() => void> = [];
  let calls = 0;
  let failWith: NodeJS.ErrnoException | null = null;
  let holding = true;
  const fn: FsyncFn = (fd, done) => {
    calls += 1;
    const go = (): void => {
      if (failWith) done(failWith);
      else fsync(fd, done);
    };
    if (holding) held.push(go);
    else go();
  };
  return {
    fn,
    get calls() {
      return calls;
    },
    get waiting() {
      return held.length;
    },
    release(): void {
      for (const go of held.splice(0)) go();
    },
    passThrough(): void {
      holding = false;
      this.release();
    },
    fail(error: NodeJS.ErrnoException | null): void {
      failWith = error;
    },
  };
}

/** Lets the event loop and the thread pool run for `ms`. */
const settle = (ms = 30) => new Promise((resolve) => setTimeout(resolve, ms));

let temp: ReturnType<typeof makeTempDir>;
const opened: SqliteTaskStore[] = [];

beforeEach(() => {
  temp = makeTempDir();
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
  temp.remove();
});

function open(fsyncFn: FsyncFn): SqliteTaskStore {
  const store = openSqliteTaskStore({ path: join(temp.dir, 'tasks.db'), fsync: fsyncFn });
  opened.push(store);
  return store;
}

describe('SQLite store: the write-ahead log is fsynced off the event loop before anything is acknowledged (issue 25, P1)', () => {
  it('a write resolves, and its events are published, only after the fsync of the log that followed its COMMIT', async () => {
    const disk = heldFsync();
    const store = open(disk.fn);
    const published: TaskEvent[] = [];
    store.onEvent((event) => published.push(event));
    let created = false;
    const creating = store.create(task()).then(() => (created = true));
    await settle();
    // Committed (SQLite returned from COMMIT), but the fsync is held: not acknowledged, not published.
    expect(disk.waiting).toBe(1);
    expect(created).toBe(false);
    expect(published).toEqual([]);
    disk.release();
    await creating;
    expect(published.map((event) => event.kind)).toEqual(['created']);
  });

  it('writes committed while an fsync runs share the next one (group commit at the disk), in commit order', async () => {
    const disk = heldFsync();
    const store = open(disk.fn);
    const first = store.create(task());
    await settle();
    expect(disk.calls).toBe(1);
    // Three batches commit while the first fsync is held (one per turn of the event loop).
    const order: number[] = [];
    const later = [1, 2, 3].map(async (n) => {
      await settle(n * 5);
      await store.create(task());
      order.push(n);
    });
    await settle(60);
    expect(disk.calls).toBe(1);
    disk.passThrough();
    await Promise.all([first, ...later]);
    // One more fsync covered all three (they waited for the first to end), and they resolved in commit order.
    expect(disk.calls).toBe(2);
    expect(order).toEqual([1, 2, 3]);
  });

  it('a read waits for the fsync in flight: a caller never sees a commit a power loss could take back', async () => {
    const disk = heldFsync();
    const store = open(disk.fn);
    const created = task();
    const creating = store.create(created);
    await settle();
    let read: unknown = 'not yet';
    const reading = store.getUnscoped(created.taskId).then((record) => (read = record));
    await settle();
    // The row is committed and the same connection would return it, but its fsync has not returned.
    expect(read).toBe('not yet');
    disk.release();
    await Promise.all([creating, reading]);
    expect(read).toMatchObject({ taskId: created.taskId, status: 'working' });
  });

  it('negative control: with no fsync in flight a read answers at once', async () => {
    const disk = heldFsync();
    disk.passThrough();
    const store = open(disk.fn);
    const created = task();
    await store.create(created);
    expect(await store.getUnscoped(created.taskId)).toMatchObject({ taskId: created.taskId });
  });

  it('a failed fsync rejects the writes it covered with a fault naming it, publishes their events (they are committed), and the store goes on', async () => {
    const disk = heldFsync();
    const store = open(disk.fn);
    const published: string[] = [];
    store.onEvent((event) => published.push(event.taskId));
    const failing = task();
    const creating = store.create(failing);
    await settle();
    disk.fail(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
    disk.release();
    const error = await creating.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe('fault');
    expect((error as StoreError).message).toBe('Task store failed to make a commit durable: EIO: i/o error, fsync');
    expect(published).toEqual([failing.taskId]);
    disk.fail(null);
    disk.passThrough();
    const next = task();
    await store.create(next);
    expect(await store.getUnscoped(next.taskId)).toMatchObject({ taskId: next.taskId });
  });

  it('close waits for the fsync of the last writes before it closes the connection', async () => {
    const disk = heldFsync();
    const store = open(disk.fn);
    const creating = store.create(task());
    await settle();
    let closed = false;
    const closing = store.close().then(() => (closed = true));
    await settle();
    expect(closed).toBe(false);
    disk.release();
    await Promise.all([creating, closing]);
    expect(closed).toBe(true);
  });
});
