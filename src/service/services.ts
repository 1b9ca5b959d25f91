import type { Clock } from '../core/clock.js';
import type { PathConfinement } from '../core/confinement.js';
import type { TaskEventFeed } from '../core/event-feed.js';
import type { Executor } from '../core/executor.js';
import type { WorkerHandOff } from '../core/hand-off.js';
import type { TasksServerLimits } from '../core/limits.js';
import type { Logger } from '../core/logger.js';
import type { TaskStore } from '../core/store.js';
import type { ToolRegistry } from '../core/tool-registry.js';
import { CallService } from './calls/call-service.js';
import { TaskCreator } from './calls/task-create.js';
import type { TaskModeGate } from './calls/task-mode-gate.js';
import { ServiceDoor } from './door.js';
import type { TaskServiceHook } from './hooks.js';
import { CursorCodec } from './paging.js';
import { type PollObserver, PollThrottle } from './poll-throttle.js';
import { TaskReads } from './task-reads.js';
import { FreshTasks } from './tasks/fresh-tasks.js';
import { TasksDoor } from './tasks/tasks-door.js';
import { ViewerService } from './viewer/viewer-service.js';
import type { WorkerPresence } from './worker-presence.js';

/** Longest a too-fast poll is held back (ms). */
const MAX_POLL_DELAY_MS = 5000;

/** What the {@link TaskServices} are built from. */
export interface TaskServicesOptions {
  store: TaskStore;
  tools: ToolRegistry;
  /** This process's event feed (shared with an embedded worker). */
  feed: TaskEventFeed;
  /** Runs inline calls (sync tools, callers that cannot take a task). */
  executor: Executor;
  /** The embedded worker, when this process has one; without it tasks wait, unleased, for a worker elsewhere. */
  handOff?: WorkerHandOff;
  limits: Readonly<TasksServerLimits>;
  /** Where tools may touch the file system (preflight, gather, inline runs). */
  confinement: PathConfinement;
  clock: Clock;
  logger: Logger;
  /** The server secret (≥ 16 bytes): `tasks/list` cursors are sealed with a key derived from it. */
  secret: Buffer;
  /** Run around every operation of every audience, first outermost (see {@link TaskServiceHook}). @defaultValue none */
  hooks?: readonly TaskServiceHook[];
  /** Told about held-back polls and polls to a task's end (metrics). */
  pollObserver?: PollObserver;
  /**
   * Offer hosts without task support in 2025-era sessions the task fallback tools (`get_task_status`,
   * `get_task_result`, `cancel_task`) and answer their calls of task-required tools with a task to follow through
   * them (`--task-fallback-tools`; see `CallPlanOptions`). @defaultValue false
   */
  taskFallbackTools?: boolean;
  /** The kill switch and canary (issue 15): who may use task mode for which tool now. @defaultValue every caller, every tool */
  gate?: TaskModeGate;
  /** Without an embedded worker: whether one runs elsewhere (`tasks/get` says "waiting for a worker" otherwise). */
  workers?: Pick<WorkerPresence, 'view'>;
}

/**
 * The task service: one door per audience over shared rules (`service/access.ts`, `paging.ts`, `door.ts`), all three
 * behind the same hooks and reads (one terminal cache):
 * - `tasks`: the tasks/* door for MCP requestors (get, list, cancel, answer input, wait, subscribe, result reads);
 * - `calls`: tools/call (tools/list, plan, create, inline run, MRTR rounds, fallback tools);
 * - `viewer`: the dashboard and admin API (browse, inspect, overview, operations, reconcile).
 * Every entry path (SDK handlers, the HTTP fast path, stdio, listen streams, v1 elicitation replies, the dashboard)
 * reaches tasks only through these.
 */
export interface TaskServices {
  readonly tasks: TasksDoor;
  readonly calls: CallService;
  readonly viewer: ViewerService;
}

/** Build the three doors of one server over one store, one set of hooks and one read cache. */
export function createTaskServices(options: TaskServicesOptions): TaskServices {
  const { store, tools, feed, executor, handOff, limits, confinement, clock, logger } = options;
  const reads = new TaskReads(store, clock, handOff);
  const door = new ServiceDoor(options.hooks ?? [], store, reads, clock, logger);
  const withHandOff = handOff ? { handOff } : {};
  const fresh = new FreshTasks(feed);
  const tasks = new TasksDoor({
    fresh,
    store,
    tools,
    feed,
    ...withHandOff,
    limits,
    clock,
    door,
    reads,
    polls: new PollThrottle(MAX_POLL_DELAY_MS, options.pollObserver),
    cursors: new CursorCodec(options.secret),
    ...(options.workers ? { workers: options.workers } : {}),
    logger,
  });
  const creator = new TaskCreator({ store, ...withHandOff, limits, clock, logger, reads, fresh });
  const calls = new CallService({
    store,
    executor,
    tools,
    limits,
    confinement,
    clock,
    logger,
    door,
    reads,
    creator,
    tasks,
    taskFallbackTools: options.taskFallbackTools === true,
    ...(options.gate ? { gate: options.gate } : {}),
  });
  const viewer = new ViewerService({ store, tools, clock, logger, feed, door, tasks });
  return { tasks, calls, viewer };
}
