import type { RequestStateCodec } from '@modelcontextprotocol/server';

import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { TaskServices } from '../service/services.js';
import type { GatherState } from './input-gathering.js';
import type { V1SessionNotifier } from './v1-notifications.js';

/** What the adapters of one tasks server share: the task service, and what only the wire needs. */
export interface HandlerDeps {
  service: TaskServices;
  /** The push notifier of each v1-generation (2025-11-25) session's SDK server (so tasks created on the fast path are pushed too). */
  sessionNotifiers: WeakMap<object, V1SessionNotifier>;
  /** Signs and verifies MRTR `requestState` (also passed to every SDK server as its `requestState.verify`). */
  requestStates: RequestStateCodec<GatherState>;
  clock: Clock;
  logger: Logger;
  /** Whether requestors are authenticated (enables v1 `tasks/list`, spec R51). */
  authEnabled: boolean;
  serverInfo: { name: string; version: string };
}
