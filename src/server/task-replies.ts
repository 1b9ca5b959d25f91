import { methodNotFound, TasksError } from '../core/errors.js';
import type { OperationRecord } from '../core/ledger.js';
import type { JsonObject, TaskRecord } from '../core/task.js';
import { attemptMeta, ErrorCode, type OperationMetaEntry, OPERATIONS_META_KEY } from '../protocol/constants.js';
import { toV1Task, v1TaskPayloadResult } from '../protocol/v1/codec.js';
import { v2GetTaskResult } from '../protocol/v2/codec.js';
import type { Caller, TaskCaller } from '../service/caller.js';
import type { SignalSource } from '../service/tasks/tasks-door.js';
import type { HandlerDeps } from './deps.js';
import { detailedTask } from './detailed-task.js';

/**
 * The wire answers of `tasks/get` (both generations) and v1 `tasks/result`, shared by the SDK handlers and the fast
 * path so both answer identically: each is one call of the service's tasks door, then encoding.
 */

/** v2 `GetTaskResult` (E19): `resultType: "complete"` and the detailed task, from one `tasks/get` of the service. */
export async function readTaskV2(deps: Pick<HandlerDeps, 'service'>, caller: TaskCaller, taskId: string, signal: SignalSource): Promise<JsonObject> {
  const { task, details, operations } = await deps.service.tasks.poll(caller, taskId, signal, { details: true });
  return withTaskMeta(v2GetTaskResult(detailedTask(task, details)) as unknown as JsonObject, task, operations);
}

/**
 * `result` with `_meta["dev.mcp-tasks/attempt"]` once a run started (issue 26), and `_meta["dev.mcp-tasks/operations"]`
 * when the task has domain operations (any status, issue 12).
 */
function withTaskMeta(result: JsonObject, task: TaskRecord, operations: readonly OperationRecord[]): JsonObject {
  const meta = typeof result._meta === 'object' && result._meta !== null && !Array.isArray(result._meta) ? result._meta : {};
  const added: JsonObject = { ...attemptMeta(task.attempt) };
  if (operations.length > 0) added[OPERATIONS_META_KEY] = operations.map(operationMetaEntry) as unknown as JsonObject[];
  return Object.keys(added).length === 0 ? result : { ...result, _meta: { ...meta, ...added } };
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
export async function readTaskV1(
  deps: Pick<HandlerDeps, 'service'>,
  caller: Caller,
  taskId: string,
  signal: SignalSource,
  requireSession?: string,
): Promise<JsonObject> {
  const { task, operations } = await deps.service.tasks.poll(v1Caller(caller, 'tasks/get'), taskId, signal, {}, requireSession);
  return withTaskMeta(toV1Task(task) as unknown as JsonObject, task, operations);
}

/**
 * What v1 `tasks/result` answers for a terminal task (R23, R25, R26, D4): the original `CallToolResult` with the
 * related-task `_meta`, or the original JSON-RPC error thrown; a cancelled task answers `-32603` "Task was cancelled".
 */
export async function terminalPayloadV1(deps: Pick<HandlerDeps, 'service'>, caller: TaskCaller, record: TaskRecord): Promise<JsonObject> {
  if (record.status === 'cancelled') throw new TasksError(ErrorCode.InternalError, 'Task was cancelled');
  const { outcome } = await deps.service.tasks.details(caller, record);
  if (!outcome) throw new TasksError(ErrorCode.InternalError, 'Task ended without a stored outcome');
  if (outcome.kind === 'error') throw new TasksError(outcome.error.code, outcome.error.message, outcome.error.data);
  return v1TaskPayloadResult(record.taskId, outcome.result);
}
