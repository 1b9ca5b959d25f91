import type { TaskGeneration } from './task.js';
import type { TraceCarrier } from './trace-context.js';

/**
 * The tracing port of a worker: one trace per run, with child spans for `ctx.step` and `ctx.operation`. The
 * worker carries no tracing library (see `ops/tracing.ts` for the OpenTelemetry implementation). Every method must
 * not throw. Attributes are bounded (tool, generation, status, attempt, step name, effect); the task id is a span
 * attribute only.
 */
export interface RunTracer {
  /** A run started; `link` is the trace context stored with the task (the creating request's span). */
  startRun(run: { taskId: string; tool: string; generation: TaskGeneration; attempt: number; link: TraceCarrier | undefined }): RunTrace;
}

/** The spans of one run. */
export interface RunTrace {
  /** `ctx.step(name)` began; the returned function ends its span (`replayed`: the journal answered, `fn` did not run). */
  step(name: string): (ending: { replayed: boolean }) => void;
  /** `ctx.operation` opened ledger operation `key` of `effect`; the returned function ends its span with the operation's status. */
  operation(spec: { key: string; effect: string }): (status: string) => void;
  /**
   * The run ended: `outcome` is a terminal status (`completed`, `failed`) or why it stopped (`parked`,
   * `aborted_<reason>`). A `failed` task (or a runtime limit) sets the span's status to error. Spans of steps and
   * operations still open (the tool threw inside them) end here with an error.
   */
  end(outcome: string, message?: string): void;
}
