import { TasksError } from '../core/errors.js';
import type { TaskStore } from '../core/store.js';
import type { TaskRecord, TaskStatus } from '../core/task.js';
import { ErrorCode } from '../protocol/constants.js';

/**
 * Resolve once the task has one of `statuses`, woken by the store's committed events (no polling loop).
 * @param timeoutMs - real milliseconds before giving up. @defaultValue 10000
 * @throws TasksError `-32603` on timeout, or `-32602` when the task disappears (expired or deleted).
 */
export async function waitForTaskStatus(store: TaskStore, taskId: string, statuses: readonly TaskStatus[], timeoutMs = 10_000): Promise<TaskRecord> {
  let wake: () => void = () => {};
  const unsubscribe = store.onEvent((event) => {
    if (event.taskId === taskId) wake();
  });
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const woken = new Promise<void>((resolve) => (wake = resolve));
      const record = await store.getUnscoped(taskId);
      if (!record) throw new TasksError(ErrorCode.InvalidParams, `task ${taskId} no longer exists`);
      if (statuses.includes(record.status)) return record;
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new TasksError(ErrorCode.InternalError, `task ${taskId} is still ${record.status} after ${timeoutMs} ms`);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([woken, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.min(remaining, 250))))]);
      clearTimeout(timer);
    }
  } finally {
    unsubscribe();
  }
}
