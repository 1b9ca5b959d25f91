import { methodNotFound, taskNotFound, TasksError } from '../core/errors.js';
import { isTerminal } from '../core/state-machine.js';
import type { JsonObject, TaskGeneration, TaskRecord } from '../core/task.js';
import { ErrorCode } from '../protocol/constants.js';
import { toV1Task, v1TaskPayloadResult } from '../protocol/v1/codec.js';
import { v2GetTaskResult } from '../protocol/v2/codec.js';
import type { Caller } from './caller.js';
import type { HandlerDeps } from './deps.js';
import { detailedTask } from './detailed-task.js';
import { clampPollHintMs, withPollHint } from './poll-hint.js';
import { holdBack } from './poll-throttle.js';

/**
 * The task reads behind `tasks/get` (both generations) and v1 `tasks/result`, shared by the SDK handlers and the
 * fast path so both answer identically.
 */

/** The caller's task of `generation`, or the unknown-task error (R45, E39; foreign/expired look the same, R49). */
export async function scopedTask(deps: Pick<HandlerDeps, 'reads'>, caller: Caller, generation: TaskGeneration, taskId: string): Promise<TaskRecord> {
  const record = await deps.reads.get(taskId, { ownerKey: caller.ownerKey, generation });
  if (!record) throw taskNotFound();
  return record;
}

/**
 * {@link scopedTask}, but a task whose run has already finished in this process and whose outcome is being
 * committed is read after that commit (at most one group commit later), so a poll never answers `working` for
 * work that is done.
 */
export async function currentTask(deps: Pick<HandlerDeps, 'reads' | 'runtime'>, caller: Caller, generation: TaskGeneration, taskId: string): Promise<TaskRecord> {
  const record = await scopedTask(deps, caller, generation, taskId);
  const pending = isTerminal(record.status) ? undefined : deps.runtime.pendingOutcome(taskId);
  if (!pending) return record;
  await pending.catch(() => undefined);
  return scopedTask(deps, caller, generation, taskId);
}

/** The abort signal of a request, or a way to make one only when it is needed (most requests never wait). */
export type SignalSource = AbortSignal | (() => AbortSignal);

/**
 * Read a task for `tasks/get` with the adaptive poll hint, under the polling protection: a repeated too-fast poll of
 * a non-terminal task is held back and answered with a raised hint (still within its generation's range), then read
 * again so the answer is current.
 */
async function polledTask(deps: HandlerDeps, caller: Caller, generation: TaskGeneration, taskId: string, signal: SignalSource): Promise<TaskRecord> {
  const record = withPollHint(await currentTask(deps, caller, generation, taskId), deps.clock.now());
  const advice = deps.polls.observe(caller.ownerKey, taskId, record.pollIntervalMs, isTerminal(record.status), deps.clock.now());
  if (advice.delayMs === 0 && advice.pollIntervalMs === record.pollIntervalMs) return record;
  if (advice.delayMs > 0) await holdBack(advice.delayMs, typeof signal === 'function' ? signal() : signal);
  const current = advice.delayMs > 0 ? withPollHint(await scopedTask(deps, caller, generation, taskId), deps.clock.now()) : record;
  return isTerminal(current.status) ? current : { ...current, pollIntervalMs: clampPollHintMs(generation, advice.pollIntervalMs) };
}

/** v2 `GetTaskResult` (E19): `resultType: "complete"` and the detailed task. */
export async function readTaskV2(deps: HandlerDeps, caller: Caller, taskId: string, signal: SignalSource): Promise<JsonObject> {
  return v2GetTaskResult(await detailedTask(deps, await polledTask(deps, caller, 'v2', taskId, signal))) as unknown as JsonObject;
}

/** v1 `GetTaskResult`: the flat task, no related-task `_meta` (R33). `-32601` outside 2025-11-25 sessions. */
export async function readTaskV1(deps: HandlerDeps, caller: Caller, taskId: string, signal: SignalSource): Promise<JsonObject> {
  if (caller.generation !== 'v1') throw methodNotFound('tasks/get');
  return toV1Task(await polledTask(deps, caller, 'v1', taskId, signal)) as unknown as JsonObject;
}

/**
 * What v1 `tasks/result` answers for a terminal task (R23, R25, R26, D4): the original `CallToolResult` with the
 * related-task `_meta`, or the original JSON-RPC error thrown; a cancelled task answers `-32603` "Task was cancelled".
 */
export async function terminalPayloadV1(deps: Pick<HandlerDeps, 'reads'>, record: TaskRecord): Promise<JsonObject> {
  if (record.status === 'cancelled') throw new TasksError(ErrorCode.InternalError, 'Task was cancelled');
  const outcome = await deps.reads.outcome(record.taskId);
  if (!outcome) throw new TasksError(ErrorCode.InternalError, 'Task ended without a stored outcome');
  if (outcome.kind === 'error') throw new TasksError(outcome.error.code, outcome.error.message, outcome.error.data);
  return v1TaskPayloadResult(record.taskId, outcome.result);
}
