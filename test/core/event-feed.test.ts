/**
 * Issue 25: the per-process event feed takes a commit's events from the push when they continue its cursor, and
 * reads the feed otherwise (a gap, a push without events, a push while a read is under way). The feed port here is
 * an in-memory log whose pushes the test sends by hand, so every interleaving is exact; the PostgreSQL end to end is
 * in test/store/postgres-wakeups.test.ts.
 */
import { describe, expect, it } from 'vitest';

import { TaskEventFeed } from '../../src/core/event-feed.js';
import { silentLogger } from '../../src/core/logger.js';
import type { CommitWatcher, TaskEvent, TaskEventListener, TaskFeed } from '../../src/core/ports/feed.js';
import { parseNotification } from '../../src/store/postgres/feed-listener.js';

/** An in-memory feed: `commit` appends events (another process's), `push` sends a commit notification. */
class MemoryFeed implements TaskFeed {
  readonly log: TaskEvent[] = [];
  reads = 0;
  /** Holds `readEventsAfter` until released, to interleave a push with a read. */
  gate: Promise<void> | undefined;
  private wake: CommitWatcher | undefined;
  private readonly local = new Set<TaskEventListener>();

  commit(count: number, taskId = 't'): TaskEvent[] {
    const events = Array.from({ length: count }, (_, i) => ({
      seq: this.log.length + i + 1,
      taskId,
      kind: 'message' as const,
      status: 'working' as const,
      at: 0,
      payload: null,
    }));
    this.log.push(...events);
    return events;
  }

  /** A commit of this process: its events go to `onEvent` listeners at once. */
  commitLocal(count: number): TaskEvent[] {
    const events = this.commit(count, 'mine');
    for (const event of events) for (const listener of this.local) listener(event);
    return events;
  }

  push(events: readonly TaskEvent[] | undefined, lastSeq = this.log.length): void {
    this.wake?.(lastSeq, events);
  }

  async readEventsAfter(afterSeq: number, limit: number): Promise<TaskEvent[]> {
    this.reads += 1;
    await this.gate;
    return this.log.filter((event) => event.seq > afterSeq).slice(0, limit);
  }
  async lastEventSeq(): Promise<number> {
    return this.log.length;
  }
  async listTaskEvents(): Promise<TaskEvent[]> {
    return [];
  }
  onEvent(listener: TaskEventListener): () => void {
    this.local.add(listener);
    return () => this.local.delete(listener);
  }
  watchCommits(wake: CommitWatcher): () => Promise<void> {
    this.wake = wake;
    return async () => {};
  }
}

async function started(): Promise<{ store: MemoryFeed; feed: TaskEventFeed; seen: number[] }> {
  const store = new MemoryFeed();
  store.commit(3);
  const feed = new TaskEventFeed(store, silentLogger);
  const seen: number[] = [];
  feed.subscribeAll((event) => seen.push(event.seq));
  await feed.start(60_000);
  return { store, feed, seen };
}

const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 5));

describe('TaskEventFeed: events carried by the push (issue 25)', () => {
  it('events that continue the cursor are delivered from the push, with no read', async () => {
    const { store, feed, seen } = await started();
    store.push(store.commit(2));
    store.push(store.commit(1));
    await settle();
    expect(seen).toEqual([4, 5, 6]);
    expect(store.reads).toBe(0);
    feed.close();
  });

  it('negative control: a push without events (too large for a notification) is read from the feed', async () => {
    const { store, feed, seen } = await started();
    store.commit(2);
    store.push(undefined);
    await settle();
    expect(seen).toEqual([4, 5]);
    expect(store.reads).toBe(1);
    feed.close();
  });

  it('a gap (a notification missed while the listener reconnected) is read, never skipped', async () => {
    const { store, feed, seen } = await started();
    store.commit(2); // its notification is lost
    store.push(store.commit(1));
    await settle();
    expect(seen).toEqual([4, 5, 6]);
    expect(store.reads).toBe(1);
    feed.close();
  });

  it('a push that arrives while a read is under way is not delivered twice nor out of order', async () => {
    const { store, feed, seen } = await started();
    let release = (): void => {};
    store.gate = new Promise<void>((resolve) => (release = resolve));
    store.commit(1);
    store.push(undefined); // starts a read, held at the gate
    await settle();
    store.push(store.commit(1)); // arrives during the read
    release();
    await settle();
    expect(seen).toEqual([4, 5]);
    feed.close();
  });

  it("the process's own events (delivered by onEvent) are passed, so the next push from another process needs no read", async () => {
    const { store, feed, seen } = await started();
    const mine = store.commitLocal(2);
    store.push(mine); // the notification of our own commit
    store.push(store.commit(1));
    await settle();
    expect(seen).toEqual([4, 5, 6]);
    expect(store.reads).toBe(0);
    feed.close();
  });
});

describe('parseNotification (the payload of mcp_tasks_feed)', () => {
  const event = [7, 'task-1', 'status', 'completed', 1_700_000_000_000, '{"from":"working","to":"completed"}'];

  it('events and the counter, as migration 13 sends them', () => {
    const parsed = parseNotification(JSON.stringify({ s: 7, e: [event] }));
    expect(parsed.lastSeq).toBe(7);
    expect(parsed.events).toEqual([
      { seq: 7, taskId: 'task-1', kind: 'status', status: 'completed', at: 1_700_000_000_000, payload: { from: 'working', to: 'completed' } },
    ]);
  });

  it.each([
    ['the counter alone (a large commit, or a server before migration 13)', '7', 7],
    ['events that do not end at the counter', JSON.stringify({ s: 8, e: [event] }), 8],
    ['events out of order', JSON.stringify({ s: 8, e: [[8, 't', 'message', 'working', 0, null], event] }), 8],
    ['malformed JSON', '{"s":', undefined],
    ['no counter', JSON.stringify({ e: [event] }), undefined],
  ])('%s: no events, so the reader reads the feed', (_what, payload, lastSeq) => {
    const parsed = parseNotification(payload);
    expect(parsed.lastSeq).toBe(lastSeq);
    expect(parsed.events).toBeUndefined();
  });
});
