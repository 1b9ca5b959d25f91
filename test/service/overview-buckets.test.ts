/**
 * The overview's time buckets (issue 26 item 16) lie on whole five minutes of the clock, so a bucket keeps its start
 * and its tasks from one refresh to the next; before, they were counted back from "now" and shifted every refresh.
 */
import { describe, expect, it } from 'vitest';

import type { TaskBrowseQuery, TaskStore } from '../../src/core/store.js';
import type { TaskRecord } from '../../src/core/task.js';
import { OVERVIEW_BUCKET_MS, overviewSeenBy } from '../../src/service/viewer/overview.js';

const MINUTE = 60_000;
/** 2026-12-06 10:00:00 UTC, a whole five minutes. */
const TEN = Date.UTC(2026, 11, 6, 10, 0, 0);

const task = (taskId: string, createdAt: number): TaskRecord =>
  ({ taskId, ownerKey: 'anonymous', status: 'working', toolName: 'scan', createdAt, lastUpdatedAt: createdAt, attempt: 0, expiresAt: null }) as TaskRecord;

/** Tasks created at 09:31:10, 09:58:20 and 10:03:40. */
const TASKS = [task('c', TEN + 3 * MINUTE + 40_000), task('b', TEN - 2 * MINUTE + 20_000), task('a', TEN - 29 * MINUTE + 10_000)];

const store: Pick<TaskStore, 'browse' | 'listTaskEvents'> = {
  browse: async (query: TaskBrowseQuery) => TASKS.filter((row) => row.createdAt >= (query.createdFrom ?? 0)),
  listTaskEvents: async () => [],
};
const viewer = { ownerKey: 'anonymous', scopes: [] };

describe('overview buckets', () => {
  it('start on whole five minutes, the last one holding now; a minute later the same buckets hold the same tasks', async () => {
    const first = await overviewSeenBy(store, viewer, TEN + 3 * MINUTE + 50_000); // 10:03:50
    const later = await overviewSeenBy(store, viewer, TEN + 4 * MINUTE + 50_000); // 10:04:50
    expect(first.buckets).toHaveLength(12);
    for (const bucket of first.buckets) expect(bucket.from % OVERVIEW_BUCKET_MS).toBe(0);
    expect(first.buckets.at(-1)?.from).toBe(TEN);
    expect(first.buckets[0]?.from).toBe(TEN - 55 * MINUTE);
    expect(later.buckets.map((bucket) => [bucket.from, bucket.created])).toEqual(first.buckets.map((bucket) => [bucket.from, bucket.created]));
    const created = (at: number) => first.buckets.find((bucket) => bucket.from === at)?.created;
    expect([created(TEN), created(TEN - 5 * MINUTE), created(TEN - 30 * MINUTE)]).toEqual([1, 1, 1]);
    expect(first.total).toBe(3);
  });

  it('move on at a bucket boundary: at 10:05 a new bucket starts and the oldest leaves', async () => {
    const next = await overviewSeenBy(store, viewer, TEN + 5 * MINUTE); // 10:05:00
    expect(next.buckets.at(-1)?.from).toBe(TEN + 5 * MINUTE);
    expect(next.buckets[0]?.from).toBe(TEN - 50 * MINUTE);
  });
});
