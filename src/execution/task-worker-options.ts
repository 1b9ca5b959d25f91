/** What a {@link TaskWorker} is built from: its collaborators and its timing and capacity settings. */
import type { Clock } from '../core/clock.js';
import type { PathConfinement } from '../core/confinement.js';
import type { TaskEventFeed } from '../core/event-feed.js';
import type { Executor } from '../core/executor.js';
import type { Logger } from '../core/logger.js';
import type { RunTracer } from '../core/run-tracer.js';
import type { TaskStore } from '../core/store.js';
import type { ToolRegistry } from '../core/tool-registry.js';
import type { WorkerObserver } from '../core/worker-observer.js';
import type { ResultSizeLimits } from './large-result.js';
import type { ShadowSettings } from './shadow-watch.js';

/** Timing and capacity of a {@link TaskWorker}. Every duration is in milliseconds. */
export interface TaskWorkerSettings {
  /** Identifies this worker in leases (`leaseOwner`). */
  instanceId: string;
  /** Runs at once (slots). */
  concurrency: number;
  /** Lease length on the store's clock; renewed every `leaseMs / 3` while a run holds it. */
  leaseMs: number;
  /** How often lapsed leases are looked for (recovery); also right away when another worker releases leases. */
  recoveryIntervalMs: number;
  /** How often runnable tasks are claimed although no event said so (the fallback of the event-driven claim). */
  claimIntervalMs: number;
  /** Coalescing window of statusMessage-only writes. */
  statusFlushIntervalMs: number;
  /** Longest single run; the task then fails with `data.reason: "runtime_limit"`. */
  runtimeLimitMs: number;
  /** Runs per task, first included, before it fails with `data.reason: "attempts_exhausted"`. */
  maxAttempts: number;
  /** Where tools may touch the file system, handed to every run. */
  confinement: PathConfinement;
  /** Shadow mode: which tools' jobs are compared with their tasks (see `ShadowWatch`). @defaultValue none */
  shadow?: ShadowSettings;
  /** Result-size limits (bytes of JSON): above `maxResultBytes` the result is stored in chunks, above `maxStoredResultBytes` the task fails. */
  resultLimits: ResultSizeLimits;
  /** How long a drain waits for aborted runs (the isolated executor terminates a run's thread after it). */
  abortGraceMs: number;
}

/** What a {@link TaskWorker} is built from. */
export interface TaskWorkerOptions {
  store: TaskStore;
  tools: ToolRegistry;
  executor: Executor;
  /** This process's event feed: cancellations, expiry and wake-ups arrive here. */
  feed: TaskEventFeed;
  settings: TaskWorkerSettings;
  clock: Clock;
  logger: Logger;
  /** Told about runs, takeovers and cancellations (metrics). @defaultValue none */
  observer?: WorkerObserver;
  /** Traces each run (linked to the creating request's span) with its steps and operations. @defaultValue none */
  tracer?: RunTracer;
}
