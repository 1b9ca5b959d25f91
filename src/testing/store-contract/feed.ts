import { beforeEach, describe, expect, it } from 'vitest';

import { newTaskId } from '../../core/ids.js';
import type { TaskEvent, TaskStore } from '../../core/store.js';
import type { StoreContractContext } from './harness.js';

/**
 * The feed part of the TaskStore contract (port `TaskFeed`, `core/ports/feed.ts`): the committed events: a task's
 * timeline, listeners after commit in commit order. Registered inside `describeTaskStoreContract`, which owns the
 * store's lifecycle.
 */
export function describeFeedContract(ctx: StoreContractContext): void {
  const { t0: T0, create, eventsSince, complete } = ctx;
  let store: TaskStore;
  beforeEach(() => {
    store = ctx.store();
  });

  describe('listTaskEvents', () => {
    it('returns one task’s events in commit order, bounded, and nothing for an unknown task', async () => {
      const task = await create();
      await create();
      await complete(task.taskId);
      const events = await store.listTaskEvents(task.taskId, 10);
      expect(events.map((e) => [e.kind, e.status])).toEqual([
        ['created', 'working'],
        ['status', 'completed'],
      ]);
      expect(events.every((e) => e.taskId === task.taskId)).toBe(true);
      expect(await store.listTaskEvents(task.taskId, 1)).toHaveLength(1);
      expect(await store.listTaskEvents(newTaskId(), 10)).toEqual([]);
    });
  });

  describe('events', () => {
    it('calls listeners after commit, in commit order, with the seq readEventsAfter reports', async () => {
      const start = await store.lastEventSeq();
      const heard: TaskEvent[] = [];
      const visible: Array<Promise<unknown>> = [];
      const stop = store.onEvent((event) => {
        heard.push(event);
        if (event.kind === 'created') visible.push(store.getUnscoped(event.taskId));
      });
      const tasks = await Promise.all([create(), create(), create()]);
      await complete(tasks[1]!.taskId);
      await store.writeStatusMessages([{ taskId: tasks[0]!.taskId, statusMessage: 'x', now: T0 }]);
      expect(heard).toEqual(await eventsSince(start));
      expect(heard.map((e) => e.seq)).toEqual(Array.from({ length: 5 }, (_, i) => start + 1 + i));
      for (const task of await Promise.all(visible)) expect(task).toBeDefined();
      expect(await store.lastEventSeq()).toBe(start + 5);
      expect((await store.readEventsAfter(start + 1, 2)).map((e) => e.seq)).toEqual([start + 2, start + 3]);
      stop();
      await create();
      expect(heard).toHaveLength(5);
    });
  });
}
