import type { Clock } from '../../core/clock.js';
import type { PathConfinement } from '../../core/confinement.js';
import { runtimeLimitMessage, TasksError } from '../../core/errors.js';
import type { ExecutionHost, ExecutionOutcome, Executor } from '../../core/executor.js';
import type { Logger } from '../../core/logger.js';
import type { TaskStore } from '../../core/store.js';
import type { JsonObject, JsonValue } from '../../core/task.js';
import type { ElicitRequest, ElicitResult } from '../../core/tool.js';
import { sanitizeModelText, toolErrorResult } from '../../core/tool-outcome.js';
import { ErrorCode } from '../../protocol/constants.js';
import type { Caller } from '../caller.js';
import type { CallPlan, RunPlan } from './call-plan.js';
import { InlineProgress, type InlineProgressChannel } from './inline-progress.js';
import { killSwitchError } from './task-mode-gate.js';

/**
 * Asks the requestor of one call; `parked` when an answer is missing and the call must end with a question. With
 * `inPlace` (a tool with `elicits: 'in-place'`, which cannot be re-run to reach its question again) the answer must
 * come within this call: where it cannot (2026-07-28 rounds), this throws `-32021` naming the Tasks Extension.
 */
export type CallAsk = (requests: readonly ElicitRequest[], options?: { inPlace?: boolean }) => Promise<{ answers: ElicitResult[] } | { parked: true }>;

/** What an inline run needs: the executor, and the per-owner tool state a tool may keep. */
export interface InlineRunOptions {
  store: Pick<TaskStore, 'getToolState' | 'putToolState'>;
  executor: Executor;
  confinement: PathConfinement;
  clock: Clock;
  logger: Logger;
}

/**
 * Run an `inline` plan (a sync tool, a caller that cannot take a task, a kill-switch `sync` fallback) through the
 * executor and answer with its `CallToolResult`; the tool's `isError` input errors are results, its protocol errors
 * one sanitised line (model-facing text). With a `progress` channel (the request carried a `progressToken`), the
 * tool's `ctx.progress` becomes `notifications/progress`, with keep-alives while it reports nothing.
 * @throws TasksError with the tool's protocol error code; `-32603` when the run crashed, was aborted by the client
 *   or parked on a question (the interaction then answers `input_required` instead).
 */
export async function runInline(
  options: InlineRunOptions,
  caller: Caller,
  plan: Extract<CallPlan, { kind: 'inline' }>,
  ask: CallAsk,
  gathered: JsonValue | undefined,
  signal: AbortSignal,
  progressChannel?: InlineProgressChannel,
): Promise<JsonObject> {
  const { tool } = plan;
  const progress = progressChannel ? new InlineProgress(progressChannel) : undefined;
  const { store, clock } = options;
  const logger = options.logger.child({ tool: tool.name });
  const host: ExecutionHost = {
    setStatus() {},
    progress: (done, total, message) => progress?.report(done, total, message),
    getStep: async () => undefined,
    putStep: async (_name, value) => value,
    // Per-owner tool state only: an inline call journals no steps (it has no task id).
    getOwnerState: (key) => store.getToolState(caller.ownerKey, tool.name, key),
    putOwnerState: (key, value) => store.putToolState(caller.ownerKey, tool.name, key, value, clock.now()),
    elicit: (requests) => ask(requests, { inPlace: tool.elicits === 'in-place' }),
    log: (entry) => logger[entry.level](entry.fields, entry.message),
    // Inline calls have no ledger (ctx.operation refuses before it gets here).
    openOperation: () => Promise.reject(new TasksError(ErrorCode.InternalError, `Internal error in tool ${tool.name}`)),
    settleOperation: () => Promise.reject(new TasksError(ErrorCode.InternalError, `Internal error in tool ${tool.name}`)),
  };
  const request = {
    taskId: null,
    toolName: tool.name,
    arguments: (plan.call.arguments ?? {}) as JsonObject,
    confinement: options.confinement,
    logFields: { tool: tool.name },
    ownerKey: caller.ownerKey,
  };
  progress?.start();
  let outcome: ExecutionOutcome;
  try {
    outcome = await options.executor.execute(gathered === undefined ? request : { ...request, gathered }, host, signal);
  } finally {
    progress?.stop();
  }
  switch (outcome.kind) {
    case 'returned':
      return outcome.result;
    case 'input_error':
      return toolErrorResult(outcome.message);
    case 'protocol_error':
      // Model-facing like a task's error (see settleExecution): one sanitised line.
      throw new TasksError(outcome.error.code, sanitizeModelText(outcome.error.message), outcome.error.data);
    case 'parked':
      // The interaction recorded the missing answers and answers `input_required` (see CallInteraction.withInput).
      throw new TasksError(ErrorCode.InternalError, `Internal error in tool ${tool.name}`);
    case 'aborted':
      // A client that went away aborts its inline call: expected, not an error worth a stack trace.
      logger.debug({}, 'inline call aborted by the client');
      throw new TasksError(ErrorCode.InternalError, `Internal error in tool ${tool.name}`);
    case 'crashed':
      throw new TasksError(ErrorCode.InternalError, outcome.message);
  }
}

/**
 * Run `run` with the request's signal (aborted when the client cancels the request or its connection closes),
 * bounded by `runtimeLimitMs` (`limits.runtimeLimitMs`, as a task's run is) and by the plan's `maxSyncMs` when the
 * inline run stands in for a task the gate refused, whichever is shorter. Past the bound the run is aborted — its
 * signal is what a forwarded upstream call is cancelled by — and the call fails: `-31003` `sync_timeout` for
 * `maxSyncMs`, `-32603` `runtime_limit` for the runtime limit (a tool that ignores its signal is not waited for).
 */
export async function bounded<T>(plan: RunPlan, signal: AbortSignal, run: (signal: AbortSignal) => Promise<T>, runtimeLimitMs = Infinity): Promise<T> {
  const { maxSyncMs } = plan;
  const name = plan.tool.name;
  const bound =
    maxSyncMs !== undefined && maxSyncMs <= runtimeLimitMs
      ? { ms: maxSyncMs, error: () => killSwitchError(name, 'sync_timeout', maxSyncMs) }
      : Number.isFinite(runtimeLimitMs)
        ? {
            ms: runtimeLimitMs,
            error: () => new TasksError(ErrorCode.InternalError, runtimeLimitMessage(name, runtimeLimitMs), { reason: 'runtime_limit' }),
          }
        : undefined;
  if (bound === undefined) return run(signal);
  const timeout = AbortSignal.timeout(bound.ms);
  const combined = AbortSignal.any([signal, timeout]);
  let onAbort: () => void = () => {};
  const timedOut = new Promise<never>((_, reject) => {
    onAbort = () => reject(bound.error());
    timeout.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const result = await Promise.race([run(combined), timedOut]);
    if (timeout.aborted) throw bound.error();
    return result;
  } finally {
    timeout.removeEventListener('abort', onAbort);
  }
}

/** One question through `ask` for a `gather` phase, which awaits the answer itself. */
export async function askOne(ask: CallAsk, request: ElicitRequest): Promise<ElicitResult> {
  const asked = await ask([request]);
  if ('answers' in asked) return asked.answers[0] as ElicitResult;
  throw new TasksError(ErrorCode.InternalError, 'input required');
}
