import { invalidParams } from '../../core/errors.js';
import type { JsonObject, TaskOutcome, TaskRecord } from '../../core/task.js';
import type { AnyToolDefinition } from '../../core/tool.js';

/** How the service reads a task for a tool argument: with the caller's own scope (a foreign id reads as missing). */
export interface TaskInputReader {
  get(taskId: string): Promise<TaskRecord | undefined>;
  outcome(taskId: string): Promise<TaskOutcome | undefined>;
}

/**
 * The values of a tool's `resolvesTasks` arguments (see `ToolDefinition.resolvesTasks`): for each one present, the
 * caller's completed task and its result. `undefined` when the tool resolves none.
 * @throws TasksError `-32602` "<argument>: task not found" for a missing, foreign, expired or other-generation task
 *   (one message for all, so nothing leaks), and for a task that is not completed with a result.
 */
export async function resolveTaskInputs(tool: AnyToolDefinition, args: Record<string, unknown>, reader: TaskInputReader): Promise<JsonObject | undefined> {
  if (!tool.resolvesTasks?.length) return undefined;
  const resolved: JsonObject = {};
  for (const name of tool.resolvesTasks) {
    const taskId = args[name];
    if (typeof taskId !== 'string') continue;
    const task = await reader.get(taskId);
    if (!task) throw invalidParams(`${name}: task not found`);
    if (task.status !== 'completed') throw invalidParams(`${name}: task ${taskId} is ${task.status}, not completed`);
    const outcome = await reader.outcome(taskId);
    if (outcome?.kind !== 'result' || outcome.result.isError === true) throw invalidParams(`${name}: task ${taskId} has no successful result`);
    resolved[name] = { taskId, toolName: task.toolName, result: outcome.result };
  }
  return resolved;
}
