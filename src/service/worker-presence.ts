import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { ProcessRegistry } from '../core/ports/processes.js';
import { drainingWorker, takesTasks } from '../core/process-record.js';
import type { TaskRecord } from '../core/task.js';

/** What `/readyz` of an API process says about the workers of its store (issue 26 item 6). */
export interface WorkerPresenceState {
  /** A worker that takes tasks (live, not draining) was seen within `absentAfterMs` (or the window since this process started has not passed yet). */
  ok: boolean;
  /**
   * Worker processes (`worker`, or `serve` with its embedded worker) that take tasks at the last look: a live
   * heartbeat and not draining.
   */
  live: number;
  /** Live worker processes that drain at the last look (they finish or hand back their runs, take no new task). */
  draining: number;
  /** When one was last seen live (ISO 8601), `null` when never since this process started. */
  lastSeenAt: string | null;
  /** The configured window (ms): no live worker for longer makes the process not ready. `0`: never. */
  absentAfterMs: number;
}

/**
 * Whether any process of the store runs tasks, for an API process without a worker (`serve --no-worker`): the
 * process registry is read every `refreshMs`, so a task nobody can run says so in its status ("waiting for a
 * worker") instead of looking like it runs, and `/readyz` turns not ready once no worker has been live for
 * `absentAfterMs`. Reads never throw: a failed look keeps the last state (the store's own check reports the store).
 */
export class WorkerPresence {
  private live = 0;
  private draining = 0;
  private lastSeenAt: number | undefined;
  private readonly startedAt: number;
  private timer: NodeJS.Timeout | undefined;
  private looked = false;

  constructor(
    private readonly registry: Pick<ProcessRegistry, 'listProcesses'>,
    private readonly clock: Clock,
    private readonly options: { absentAfterMs: number; refreshMs: number; logger?: Logger },
  ) {
    this.startedAt = clock.now();
  }

  /** Look now, then every `refreshMs` until {@link stop}. */
  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.options.refreshMs).unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Read the registry once (also what the timer does). */
  async refresh(): Promise<void> {
    try {
      const processes = await this.registry.listProcesses();
      // A draining worker still heartbeats but takes no new task: it does not make this process ready, nor a task
      // look like it runs (see `takesTasks`, the rule doctor counts by).
      this.live = processes.filter(takesTasks).length;
      this.draining = processes.filter(drainingWorker).length;
      if (this.live > 0) this.lastSeenAt = this.clock.now();
      this.looked = true;
    } catch (error) {
      this.options.logger?.debug({ err: error }, 'worker presence: the process registry could not be read');
    }
  }

  /** The state `/readyz` reports. */
  state(): WorkerPresenceState {
    const since = this.lastSeenAt ?? this.startedAt;
    const absent = this.live === 0 && this.options.absentAfterMs > 0 && this.clock.now() - since > this.options.absentAfterMs;
    return {
      ok: !absent,
      live: this.live,
      draining: this.draining,
      lastSeenAt: this.lastSeenAt === undefined ? null : new Date(this.lastSeenAt).toISOString(),
      absentAfterMs: this.options.absentAfterMs,
    };
  }

  /**
   * The task as a requestor should see it: a `working` task no run has started (`attempt` 0) while no worker takes
   * tasks (none live, or every live one draining) says "waiting for a worker" — whatever the tool's first message
   * announced, nothing runs it yet.
   */
  view(task: TaskRecord): TaskRecord {
    if (!this.looked || this.live > 0 || task.status !== 'working' || task.attempt > 0) return task;
    const seen = this.lastSeenAt === undefined ? 'none seen since this server started' : `last seen ${new Date(this.lastSeenAt).toISOString()}`;
    const none =
      this.draining > 0 ? `no worker process takes tasks: ${this.draining} draining, taking no new task; ${seen}` : `no worker process is running: ${seen}`;
    return { ...task, statusMessage: `waiting for a worker (${none}); the task starts when one runs` };
  }
}
