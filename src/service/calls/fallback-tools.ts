import { z } from 'zod';

import { issuesLine } from '../../core/input-issues.js';
import type { ToolDescriptor } from '../../core/tool.js';

/**
 * The task fallback tools (`--task-fallback-tools`): the separate job API for hosts without task support, offered
 * to them only (see `declaresTaskSupport`). Each is an ordinary synchronous tool standing for one task operation,
 * run through that operation of the task service — owner-bound and hooked (scopes) exactly like `tasks/get`,
 * `tasks/result` and `tasks/cancel`.
 */

/** The task operation each fallback tool stands for. */
export type FallbackOperation = 'status' | 'result' | 'cancel';

/** Most characters of a task id taken by a fallback tool (Claude Code accepts task ids of at most 128; ours are 22). */
const MAX_TASK_ID_LENGTH = 128;

const inputSchema = z.object({
  taskId: z.string().min(1).max(MAX_TASK_ID_LENGTH).describe('The task id the tool that started the task answered with.'),
});

const DESCRIPTORS: ReadonlyArray<ToolDescriptor & { operation: FallbackOperation }> = [
  {
    name: 'get_task_status',
    operation: 'status',
    description:
      'Reports the status of a task started by another tool of this server (working, input_required, completed, failed, cancelled) and when to ask again.',
    inputSchema,
    execution: 'sync',
  },
  {
    name: 'get_task_result',
    operation: 'result',
    description: 'Returns the result of a finished task started by another tool of this server; while it still runs, says so without waiting.',
    inputSchema,
    execution: 'sync',
  },
  {
    name: 'cancel_task',
    operation: 'cancel',
    description: 'Cancels a task started by another tool of this server and reports how it ended (a task may still finish first).',
    inputSchema,
    execution: 'sync',
  },
];

/** The fallback tools as `tools/list` shows them, in a fixed order. */
export const FALLBACK_TOOLS: readonly ToolDescriptor[] = DESCRIPTORS;

/** The operation of fallback tool `name`, or `undefined` for any other name. */
export function fallbackOperationOf(name: string): FallbackOperation | undefined {
  return DESCRIPTORS.find((tool) => tool.name === name)?.operation;
}

/** The task id argument of a fallback tool call, or why it is not one. */
export function parseFallbackArguments(args: unknown): { taskId: string } | { error: string } {
  const parsed = inputSchema.safeParse(args ?? {});
  return parsed.success ? parsed.data : { error: issuesLine(parsed.error) };
}
