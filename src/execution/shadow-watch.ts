import type { Logger } from '../core/logger.js';
import type { TaskRecord } from '../core/task.js';
import type { ShadowAdapter, ShadowJobState } from '../core/tool.js';

/**
 * Shadow mode (issue 15 item 8): while a task of a tool with a {@link ShadowAdapter} runs, the job the tool named
 * with `ctx.shadow.observe(jobId)` is polled in the existing job API, and every difference between the task's
 * state projection (`working`, `completed`, `failed`, `cancelled`) and the job's is reported once per run:
 * - while the task runs (`phase: "running"`): the job `failed` or was `cancelled` and the task still runs after
 *   `settleChecks` more polls (a job that ended first is what a tool waiting for its job sees last: a task that ends
 *   within those polls is judged by the final comparison alone, so one disagreement is one mismatch; a job that
 *   completed first is never a running difference);
 * - when the task ended (`phase: "final"`): the job's state differs from the task's terminal status, after up to
 *   `settleChecks` more polls while the job still says `working` (the two systems finish at slightly different
 *   instants).
 * Only `status` is called, never `submit`. An adapter error is logged and counted, never a mismatch.
 */

/** Which tools run in shadow mode, and how often their jobs are polled. Durations in ms. */
export interface ShadowSettings {
  /** Tools in shadow mode (names), or `*` for every tool with a `shadow` adapter. */
  tools: readonly string[];
  /** Interval of the job polls while a task runs, and between the settle polls at its end. */
  intervalMs: number;
  /**
   * Polls after the task ended while the job still says `working`, and polls while the task runs after its job
   * said `failed`/`cancelled`, before the difference is recorded.
   */
  settleChecks: number;
}

/** One recorded difference. */
export interface ShadowMismatch {
  phase: 'running' | 'final';
  taskState: ShadowJobState;
  jobState: ShadowJobState;
  jobId: string;
}

/** Where a watch reports (the worker: the audit trail and its observer). Must not throw. */
export interface ShadowSink {
  checked(result: 'match' | 'mismatch' | 'error'): void;
  mismatch(difference: ShadowMismatch): Promise<void>;
}

const JOB_STATES: ReadonlySet<string> = new Set(['working', 'completed', 'failed', 'cancelled']);

/** Whether `tool` runs in shadow mode under `settings`. */
export function inShadowMode(settings: ShadowSettings | undefined, tool: { name: string; shadow?: ShadowAdapter }): boolean {
  return tool.shadow !== undefined && settings !== undefined && (settings.tools.includes('*') || settings.tools.includes(tool.name));
}

/** The shadow comparison of one run. */
export class ShadowWatch {
  private jobId: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly controller = new AbortController();
  private readonly reported = new Set<string>();
  private polling: Promise<void> = Promise.resolve();
  private finished = false;
  /** {@link toolEnded}: the outcome is being written; only the final comparison is left. */
  private ended = false;
  /** Consecutive running polls that found the job `failed`/`cancelled` (the settle of the running phase). */
  private endedPolls = 0;

  constructor(
    private readonly adapter: ShadowAdapter,
    private readonly record: Pick<TaskRecord, 'taskId' | 'toolName'>,
    private readonly settings: ShadowSettings,
    private readonly sink: ShadowSink,
    private readonly logger: Logger,
  ) {}

  /** `ctx.shadow.observe(jobId)`: poll this job from now on, every `intervalMs`. */
  observe(jobId: string): void {
    if (this.finished || this.ended) return;
    this.jobId = jobId;
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.polling = this.polling.then(() => this.check('working'));
    }, this.settings.intervalMs);
    this.timer.unref();
    this.polling = this.polling.then(() => this.check('working'));
  }

  /**
   * The tool returned; its outcome is being written, and {@link finish} follows with what became of it. No `running`
   * check from now on: the task still reads `working` until that write lands, which is no difference from the job.
   */
  toolEnded(): void {
    this.ended = true;
    clearInterval(this.timer);
  }

  /**
   * The run ended: with the task's terminal state, compare once more (settling while the job says `working`);
   * without one (parked for input, aborted by a drain) just stop. Resolves when the last report is written.
   */
  async finish(taskState: ShadowJobState | undefined): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    clearInterval(this.timer);
    await this.polling;
    if (taskState && this.jobId !== undefined) {
      let jobState = await this.poll();
      for (let check = 0; jobState === 'working' && check < this.settings.settleChecks; check++) {
        await new Promise((resolve) => setTimeout(resolve, this.settings.intervalMs));
        jobState = await this.poll();
      }
      if (jobState !== undefined) await this.compare('final', taskState, jobState);
    }
    this.controller.abort('finished');
  }

  private async check(taskState: ShadowJobState): Promise<void> {
    if (this.finished || this.ended) return;
    const jobState = await this.poll();
    if (jobState === undefined || this.finished || this.ended) return;
    // A job that ended while the task still runs is a tool about to see it (see above): a job that completed is
    // no difference; one that failed or was cancelled is one once the task outlived `settleChecks` more polls.
    this.endedPolls = jobState === 'failed' || jobState === 'cancelled' ? this.endedPolls + 1 : 0;
    if (this.endedPolls > 0 && this.endedPolls <= this.settings.settleChecks) return;
    await this.compare('running', taskState, jobState === 'completed' ? 'working' : jobState);
  }

  private async compare(phase: ShadowMismatch['phase'], taskState: ShadowJobState, jobState: ShadowJobState): Promise<void> {
    if (taskState === jobState) {
      this.sink.checked('match');
      return;
    }
    this.sink.checked('mismatch');
    const key = `${phase}:${taskState}:${jobState}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    await this.sink.mismatch({ phase, taskState, jobState, jobId: this.jobId as string });
  }

  /** The job's state, or `undefined` after an adapter error (logged, counted). */
  private async poll(): Promise<ShadowJobState | undefined> {
    try {
      const state = await this.adapter.status(this.jobId as string, { signal: this.controller.signal });
      if (!JOB_STATES.has(state))
        throw new Error(`shadow adapter of ${this.record.toolName} answered ${JSON.stringify(state)}, not working|completed|failed|cancelled`);
      return state;
    } catch (error) {
      this.sink.checked('error');
      this.logger.warn({ err: error }, 'shadow job status failed');
      return undefined;
    }
  }
}
