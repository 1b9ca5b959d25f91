import type { TaskEventFeed } from '../../core/event-feed.js';
import type { WorkerHandOff } from '../../core/hand-off.js';
import type { TaskEvent } from '../../core/store.js';
import type { TaskRecord } from '../../core/task.js';
import type { TaskDetails } from './tasks-door.js';

/** A change of a subscribed task: a committed event, or (for tasks running in this process) a progress report. */
export type TaskNotice = { kind: 'event'; event: TaskEvent } | { kind: 'progress'; taskId: string; done: number; total: number | undefined; message: string };

/** An open subscription to some of an actor's tasks. */
export interface TaskSubscription {
  /** The tasks accepted: those of the actor's own that were visible when it subscribed (E45). */
  readonly taskIds: readonly string[];
  /** The current state of an accepted task (`undefined` once gone or expired, and for any other id). */
  read(taskId: string): Promise<TaskRecord | undefined>;
  /** See `TasksDoor.details`. */
  details(record: TaskRecord): Promise<TaskDetails>;
  /** Stop delivering. */
  close(): void;
}

/** How a subscription reads its accepted tasks: as their owner, through the tasks door's rules. */
export interface SubscriptionReads {
  read(taskId: string): Promise<TaskRecord | undefined>;
  details(record: TaskRecord): Promise<TaskDetails>;
}

/**
 * Deliver every committed event of `taskIds` (already checked as the actor's) to `listener`, in commit order — one
 * feed subscription per task for a single task, one filtered subscription to the whole feed for several — and, with
 * `progress`, the progress reports of those running in this process.
 */
export function openSubscription(
  sources: { feed: TaskEventFeed; handOff?: WorkerHandOff },
  taskIds: string[],
  listener: (notice: TaskNotice) => void,
  progress: boolean,
  reads: SubscriptionReads,
): TaskSubscription {
  const accepted = new Set(taskIds);
  const { feed, handOff } = sources;
  const onEvent = (event: TaskEvent): void => listener({ kind: 'event', event });
  const stops: Array<() => void> =
    taskIds.length === 1
      ? [feed.subscribeTask(taskIds[0] as string, onEvent)]
      : [
          feed.subscribeAll((event) => {
            if (accepted.has(event.taskId)) onEvent(event);
          }),
        ];
  if (progress && handOff) {
    for (const taskId of taskIds)
      stops.push(handOff.onProgress(taskId, (done, total, message) => listener({ kind: 'progress', taskId, done, total, message })));
  }
  return {
    taskIds,
    read: async (taskId) => (accepted.has(taskId) ? reads.read(taskId) : undefined),
    details: (record) => reads.details(record),
    close: () => {
      for (const stop of stops.splice(0)) stop();
    },
  };
}
