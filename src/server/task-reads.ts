import { methodNotFound, TasksError } from '../core/errors.js';
import { isTerminal } from '../core/state-machine.js';
import type { JsonObject, TaskRecord } from '../core/task.js';
import { ErrorCode, OPERATIONS_META_KEY, type OperationMetaEntry } from '../protocol/constants.js';
import type { OperationRecord } from '../core/ledger.js';
import { toV1Task, v1TaskPayloadResult } from '../protocol/v1/codec.js';
import { v2GetTaskResult } from '../protocol/v2/codec.js';
import type { Caller, TaskCaller } from '../service/caller.js';
import type { HandlerDeps } from './deps.js';
import { detailedTask } from './detailed-task.js';
import { clampPollHintMs, withPollHint } from './poll-hint.js';
import { holdBack } from './poll-throttle.js';

/**
 * The task reads behind `tasks/get` (both generations) and v1 `tasks/result`, shared by the SDK handlers and the
 * fast path so both answer identically; the reads themselves are the service's.
 */

/** The abort signal of a request, or a way to make one only when it is needed (most requests never wait). */
export type SignalSource = AbortSignal | (() => AbortSignal);

/**
 * Read a task for `tasks/get` with the adaptive poll hint, under the polling protection: a repeated too-fast poll of
 * a non-terminal task is held back and answered with a raised hint (still within its generation's range), then read
 * again so the answer is current.
 */
async function polledTask(deps: HandlerDeps, caller: TaskCaller, taskId: string, signal: SignalSource): Promise<TaskRecord> {
  const record = withPollHint(await deps.service.get(caller, taskId), deps.clock.now());
  const advice = deps.polls.observe(caller.ownerKey, taskId, record.pollIntervalMs, isTerminal(record.status), deps.clock.now());
  if (advice.delayMs === 0 && advice.pollIntervalMs === record.pollIntervalMs) return record;
  if (advice.delayMs > 0) await holdBack(advice.delayMs, typeof signal === 'function' ? signal() : signal);
  const current = advice.delayMs > 0 ? withPollHint(await deps.service.get(caller, taskId), deps.clock.now()) : record;
  return isTerminal(current.status) ? current : { ...current, pollIntervalMs: clampPollHintMs(caller.generation, advice.pollIntervalMs) };
}

/** v2 `GetTaskResult` (E19): `resultType: "complete"` and the detailed task. */
export async function readTaskV2(deps: HandlerDeps, caller: TaskCaller, taskId: string, signal: SignalSource): Promise<JsonObject> {
  const record = await polledTask(deps, caller, taskId, signal);
  const result = v2GetTaskResult(detailedTask(record, await deps.service.details(caller, record))) as unknown as JsonObject;
  return withOperations(result, await deps.service.operations(caller, record));
}

/** `result` with `_meta["dev.mcp-tasks/operations"]` when the task has domain operations (any status, issue 12). */
function withOperations(result: JsonObject, operations: readonly OperationRecord[]): JsonObject {
  if (operations.length === 0) return result;
  const meta = typeof result._meta === 'object' && result._meta !== null && !Array.isArray(result._meta) ? result._meta : {};
  return { ...result, _meta: { ...meta, [OPERATIONS_META_KEY]: operations.map(operationMetaEntry) as unknown as JsonObject[] } };
}

/** The wire entry of an operation: id, effect, status, receipt (never target or detail). */
function operationMetaEntry(operation: OperationRecord): OperationMetaEntry {
  return { operationId: operation.operationId, effect: operation.effect, status: operation.status, receipt: operation.receipt };
}

/** The caller as a v1 task caller, or `-32601` for `method` outside 2025-11-25 sessions. */
export function v1Caller(caller: Caller, method: string): TaskCaller {
  if (caller.generation !== 'v1') throw methodNotFound(method);
  return caller as TaskCaller;
}

/** v1 `GetTaskResult`: the flat task, no related-task `_meta` (R33). `-32601` outside 2025-11-25 sessions. */
export async function readTaskV1(deps: HandlerDeps, caller: Caller, taskId: string, signal: SignalSource): Promise<JsonObject> {
  const v1 = v1Caller(caller, 'tasks/get');
  const record = await polledTask(deps, v1, taskId, signal);
  return withOperations(toV1Task(record) as unknown as JsonObject, await deps.service.operations(v1, record));
}

/**
 * What v1 `tasks/result` answers for a terminal task (R23, R25, R26, D4): the original `CallToolResult` with the
 * related-task `_meta`, or the original JSON-RPC error thrown; a cancelled task answers `-32603` "Task was cancelled".
 */
export async function terminalPayloadV1(deps: Pick<HandlerDeps, 'service'>, caller: TaskCaller, record: TaskRecord): Promise<JsonObject> {
  if (record.status === 'cancelled') throw new TasksError(ErrorCode.InternalError, 'Task was cancelled');
  const { outcome } = await deps.service.details(caller, record);
  if (!outcome) throw new TasksError(ErrorCode.InternalError, 'Task ended without a stored outcome');
  if (outcome.kind === 'error') throw new TasksError(outcome.error.code, outcome.error.message, outcome.error.data);
  return v1TaskPayloadResult(record.taskId, outcome.result);
}
