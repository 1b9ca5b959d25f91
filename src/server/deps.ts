import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { TaskStore } from '../core/store.js';
import type { TaskRuntime } from '../runtime/task-runtime.js';
import type { TaskReads } from '../service/task-reads.js';
import type { RequestStateCodec } from '@modelcontextprotocol/server';
import type { CursorCodec } from './cursor.js';
import type { GatherState } from './input-gathering.js';
import type { PollThrottle } from './poll-throttle.js';
import type { V1SessionNotifier } from './v1-notifications.js';
import type { TasksServerLimits } from '../core/limits.js';

/** What request handlers share within one tasks server. */
export interface HandlerDeps {
  runtime: TaskRuntime;
  store: TaskStore;
  /** Requestor reads: expiry visibility and the terminal-task cache applied above the store. */
  reads: TaskReads;
  limits: Readonly<TasksServerLimits>;
  cursors: CursorCodec;
  /** Remembers recent polls to slow down clients that poll faster than the hint. */
  polls: PollThrottle;
  /** The push notifier of each legacy session's SDK server (so tasks created on the fast path are pushed too). */
  sessionNotifiers: WeakMap<object, V1SessionNotifier>;
  /** Signs and verifies MRTR `requestState` (also passed to every SDK server as its `requestState.verify`). */
  requestStates: RequestStateCodec<GatherState>;
  clock: Clock;
  logger: Logger;
  /** Roots handed to tool preflight and gather checks. */
  roots: readonly string[];
  /** Paths no tool may touch whatever the roots, handed to preflight and gather checks with the roots. */
  deniedPaths: readonly string[];
  /** Whether requestors are authenticated (enables v1 `tasks/list`, spec R51). */
  authEnabled: boolean;
  serverInfo: { name: string; version: string };
}
