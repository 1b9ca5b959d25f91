import { isTerminal } from '../../core/state-machine.js';
import type { TaskStore } from '../../core/store.js';
import { visibleAt } from '../../core/store-rules.js';
import type { TaskRecord, TaskStatus } from '../../core/task.js';
import { seesEveryOwner } from '../access.js';
import type { Viewer } from './viewer.js';

/** The window the overview covers (ms). */
export const OVERVIEW_WINDOW_MS = 60 * 60 * 1000;
/** Width of one chart bucket (ms): twelve five-minute buckets per hour. */
export const OVERVIEW_BUCKET_MS = 5 * 60 * 1000;
/** Most tasks of the window the overview reads (newest first); past it the figures say `sampled`. */
export const OVERVIEW_MAX_TASKS = 1000;
/** Most tasks whose events are read for queue wait (the newest of the window). */
const TIMED_MAX_TASKS = 300;
/** The first run's `attempt` event is among a task's first few events. */
const EVENTS_FOR_FIRST_ATTEMPT = 20;

/** One five-minute bucket of the overview's charts (times in ms; `null` where no task of the bucket had one). */
export interface OverviewBucket {
  /** Start of the bucket, epoch ms. */
  from: number;
  created: number;
  /** Median and max of created → first run started. */
  queueWaitMedianMs: number | null;
  queueWaitMaxMs: number | null;
  /** Median and max of first run started → terminal (tasks that ended). */
  runTimeMedianMs: number | null;
  runTimeMaxMs: number | null;
}

/** The overview of the tasks a viewer sees, created in the last hour. */
export interface TaskOverview {
  /** Epoch ms of the window's start and end. */
  from: number;
  to: number;
  total: number;
  /** Whether more tasks than {@link OVERVIEW_MAX_TASKS} were created in the window (the figures cover the newest). */
  sampled: boolean;
  byStatus: Record<TaskStatus, number>;
  /** Tool name → count, largest first. */
  byTool: Array<{ tool: string; count: number }>;
  buckets: OverviewBucket[];
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : Math.round(((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2);
}

/** Epoch ms of the first run's start (its `attempt` event), or `undefined` while queued. */
async function firstRunAt(store: Pick<TaskStore, 'listTaskEvents'>, task: TaskRecord): Promise<number | undefined> {
  if (task.attempt === 0) return undefined;
  const events = await store.listTaskEvents(task.taskId, EVENTS_FOR_FIRST_ATTEMPT);
  return events.find((event) => event.kind === 'attempt')?.at;
}

/**
 * Counts by status and tool and, per five-minute bucket, queue wait (created → first run) and run time (first run
 * → terminal: its last update) of the tasks the viewer sees that were created in the last hour (issue 16).
 * Owner scoping is the store query's (`viewerSees`), so figures never include another owner's tasks.
 *
 * The buckets lie on whole five minutes of the clock (epoch multiples of {@link OVERVIEW_BUCKET_MS}: :00, :05, …),
 * the last one holding `now`, so a bucket keeps its start and its tasks from one refresh to the next instead of
 * shifting with "now" (issue 26 item 16). The window is those twelve buckets: it starts 55 to 60 minutes ago.
 */
export async function overviewSeenBy(store: Pick<TaskStore, 'browse' | 'listTaskEvents'>, viewer: Viewer, now: number): Promise<TaskOverview> {
  const from = Math.floor(now / OVERVIEW_BUCKET_MS) * OVERVIEW_BUCKET_MS + OVERVIEW_BUCKET_MS - OVERVIEW_WINDOW_MS;
  const ownerScope = seesEveryOwner(viewer) ? {} : { ownerKey: viewer.ownerKey };
  const rows = await store.browse({ ...ownerScope, createdFrom: from, limit: OVERVIEW_MAX_TASKS + 1 });
  const tasks = rows.slice(0, OVERVIEW_MAX_TASKS).filter((task) => visibleAt(task, now));
  const byStatus: Record<TaskStatus, number> = { working: 0, input_required: 0, completed: 0, failed: 0, cancelled: 0 };
  const tools = new Map<string, number>();
  for (const task of tasks) {
    byStatus[task.status] += 1;
    tools.set(task.toolName, (tools.get(task.toolName) ?? 0) + 1);
  }
  const firstRuns = await Promise.all(tasks.slice(0, TIMED_MAX_TASKS).map((task) => firstRunAt(store, task)));
  const count = Math.ceil(OVERVIEW_WINDOW_MS / OVERVIEW_BUCKET_MS);
  const waits = Array.from({ length: count }, () => [] as number[]);
  const runs = Array.from({ length: count }, () => [] as number[]);
  const created = new Array<number>(count).fill(0);
  tasks.forEach((task, index) => {
    const bucket = Math.min(count - 1, Math.max(0, Math.floor((task.createdAt - from) / OVERVIEW_BUCKET_MS)));
    created[bucket] = (created[bucket] as number) + 1;
    const started = firstRuns[index];
    if (started === undefined) return;
    (waits[bucket] as number[]).push(Math.max(0, started - task.createdAt));
    if (isTerminal(task.status)) (runs[bucket] as number[]).push(Math.max(0, task.lastUpdatedAt - started));
  });
  const maxOf = (values: number[]): number | null => (values.length === 0 ? null : Math.max(...values));
  return {
    from,
    to: now,
    total: tasks.length,
    sampled: rows.length > OVERVIEW_MAX_TASKS,
    byStatus,
    byTool: [...tools].map(([tool, n]) => ({ tool, count: n })).sort((a, b) => b.count - a.count || a.tool.localeCompare(b.tool)),
    buckets: created.map((n, index) => ({
      from: from + index * OVERVIEW_BUCKET_MS,
      created: n,
      queueWaitMedianMs: median(waits[index] as number[]),
      queueWaitMaxMs: maxOf(waits[index] as number[]),
      runTimeMedianMs: median(runs[index] as number[]),
      runTimeMaxMs: maxOf(runs[index] as number[]),
    })),
  };
}
