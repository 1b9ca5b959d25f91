import { z } from 'zod';

import { ATTEMPT_META_KEY, IMMEDIATE_RESPONSE_META_KEY, OPERATIONS_META_KEY } from '../protocol/constants.js';
import { TaskIdSchema } from './server-fields.js';
import type { CallToolResult, TaskSnapshot } from './types.js';

/**
 * Validation of what servers send back, for both generations. Where the spec tells clients to be lenient the
 * schemas are: a missing `resultType` inside a v2 `result` (X12), unknown extra keys. Where it does not, they are
 * strict: integer, non-negative times (X10), `result` on `completed` and `error` on `failed` (E19). And where this
 * client prints a field as it is, stricter than the spec: a task id it could not print is refused (`server-fields.ts`).
 * The SDK client strips the top-level `resultType` before these schemas run, so none of them reads it.
 */

const Status = z.enum(['working', 'input_required', 'completed', 'failed', 'cancelled']);
const Milliseconds = z.number().int().min(0);

/** `CallToolResult`: `content` is required in both revisions. */
export const CallToolResultSchema = z.looseObject({
  content: z.array(z.looseObject({ type: z.string() })),
  structuredContent: z.record(z.string(), z.unknown()).optional(),
  isError: z.boolean().optional(),
  _meta: z.record(z.string(), z.unknown()).optional(),
});

const JsonRpcErrorSchema = z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() });
const InputRequestsSchema = z.record(z.string(), z.looseObject({ method: z.string(), params: z.record(z.string(), z.unknown()).optional() }));

const V1TaskSchema = z.looseObject({
  taskId: TaskIdSchema,
  status: Status,
  statusMessage: z.string().optional(),
  createdAt: z.string(),
  lastUpdatedAt: z.string(),
  ttl: Milliseconds.nullable(),
  pollInterval: Milliseconds.optional(),
});

/** 2025-11-25 `tasks/get` / `tasks/cancel` result (flat `Task`). */
export const V1GetTaskResultSchema = V1TaskSchema;

const V1CreateTaskAnswerSchema = z.looseObject({ task: V1TaskSchema, _meta: z.record(z.string(), z.unknown()).optional() }).transform((created) => {
  const immediate = created._meta?.[IMMEDIATE_RESPONSE_META_KEY];
  return { kind: 'task' as const, task: fromV1Task(created.task), ...(typeof immediate === 'string' ? { immediateResponse: immediate } : {}) };
});
const V1InlineAnswerSchema = CallToolResultSchema.transform((result) => ({ kind: 'result' as const, result: toCallToolResult(result) }));

/**
 * 2025-11-25 `tools/call` answer: a nested `CreateTaskResult` (an answer with `task`), or the plain result when the
 * server ran it inline. The `task` key picks the schema, so a refused task says what is wrong with it (a union of
 * both would only say "Invalid input").
 */
export const V1ToolsCallResultSchema = z.unknown().transform((answer, context) => {
  const created = typeof answer === 'object' && answer !== null && 'task' in answer;
  const parsed = (created ? V1CreateTaskAnswerSchema : V1InlineAnswerSchema).safeParse(answer);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) context.addIssue({ code: 'custom', message: issue.message, path: issue.path });
  return z.NEVER;
});

/** 2025-11-25 `tasks/list` result. */
export const V1ListTasksResultSchema = z.looseObject({ tasks: z.array(V1TaskSchema), nextCursor: z.string().optional() });

const V2TaskFields = {
  taskId: TaskIdSchema,
  status: Status,
  statusMessage: z.string().optional(),
  createdAt: z.string(),
  lastUpdatedAt: z.string(),
  ttlMs: Milliseconds.nullable(),
  pollIntervalMs: Milliseconds.optional(),
};

/** 2026-07-28 `CreateTaskResult`: flat, `resultType: "task"` (read from the raw reply, which keeps it). */
export const V2CreateTaskResultSchema = z.looseObject({ resultType: z.literal('task'), ...V2TaskFields });

/**
 * 2026-07-28 `DetailedTask` as `tasks/get` returns it and `notifications/tasks` pushes it, with the variant rules
 * of E19 (`inputRequests` may be empty: answers can be acknowledged before the status moves on, E25).
 */
export const V2DetailedTaskSchema = z
  .looseObject({
    ...V2TaskFields,
    result: CallToolResultSchema.optional(),
    error: JsonRpcErrorSchema.optional(),
    inputRequests: InputRequestsSchema.optional(),
  })
  .superRefine((task, context) => {
    if (task.status === 'completed' && !task.result) context.addIssue({ code: 'custom', message: 'a completed task must carry result' });
    if (task.status === 'failed' && !task.error) context.addIssue({ code: 'custom', message: 'a failed task must carry error' });
    if (task.status === 'input_required' && !task.inputRequests)
      context.addIssue({ code: 'custom', message: 'an input_required task must carry inputRequests' });
  });

/** The result without the 2026-07-28 `resultType` envelope key, so both generations hand back the same shape. */
export function toCallToolResult(result: z.output<typeof CallToolResultSchema>): CallToolResult {
  const { resultType: _envelope, ...rest } = result as typeof result & { resultType?: unknown };
  return rest as CallToolResult;
}

/** A v1 `Task` as a {@link TaskSnapshot}. */
export function fromV1Task(task: z.output<typeof V1TaskSchema>): TaskSnapshot {
  return withOptional(
    { taskId: task.taskId, status: task.status, createdAt: task.createdAt, lastUpdatedAt: task.lastUpdatedAt, ttlMs: task.ttl },
    {
      statusMessage: task.statusMessage,
      pollIntervalMs: task.pollInterval,
      operations: operationsOf(task as { _meta?: unknown }),
      attempt: attemptOf(task as { _meta?: unknown }),
    },
  );
}

const OperationsSchema = z.array(
  z.looseObject({
    operationId: z.string(),
    effect: z.string(),
    status: z.enum(['pending', 'confirmed', 'failed', 'unknown']),
    receipt: z.record(z.string(), z.unknown()).nullable(),
  }),
);

/** `_meta["dev.mcp-tasks/operations"]` of a task result, when present and well-formed (else left out, never fatal). */
function operationsOf(task: { _meta?: unknown }): TaskSnapshot['operations'] {
  const meta = task._meta;
  if (typeof meta !== 'object' || meta === null) return undefined;
  const parsed = OperationsSchema.safeParse((meta as Record<string, unknown>)[OPERATIONS_META_KEY]);
  return parsed.success ? parsed.data.map(({ operationId, effect, status, receipt }) => ({ operationId, effect, status, receipt })) : undefined;
}

/** A v2 `Task` / `DetailedTask` as a {@link TaskSnapshot}, keeping an inline result, error or input requests. */
export function fromV2Task(task: z.output<typeof V2DetailedTaskSchema> | z.output<typeof V2CreateTaskResultSchema>): TaskSnapshot {
  const detailed = task as z.output<typeof V2DetailedTaskSchema>;
  return withOptional(
    { taskId: task.taskId, status: task.status, createdAt: task.createdAt, lastUpdatedAt: task.lastUpdatedAt, ttlMs: task.ttlMs },
    {
      statusMessage: task.statusMessage,
      pollIntervalMs: task.pollIntervalMs,
      result: detailed.result ? toCallToolResult(detailed.result) : undefined,
      error: detailed.error ? (detailed.error as TaskSnapshot['error']) : undefined,
      inputRequests: task.status === 'input_required' ? detailed.inputRequests : undefined,
      operations: operationsOf(task as { _meta?: unknown }),
      attempt: attemptOf(task as { _meta?: unknown }),
    },
  );
}

/** `_meta["dev.mcp-tasks/attempt"]`, when present and a positive integer (else left out, never fatal). */
function attemptOf(task: { _meta?: unknown }): number | undefined {
  const meta = task._meta;
  const attempt = typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>)[ATTEMPT_META_KEY] : undefined;
  return typeof attempt === 'number' && Number.isInteger(attempt) && attempt > 0 ? attempt : undefined;
}

// Optional keys are left out rather than set to `undefined`, so snapshots print and compare cleanly.
function withOptional(base: TaskSnapshot, optional: Partial<TaskSnapshot>): TaskSnapshot {
  const snapshot = { ...base } as Record<string, unknown>;
  for (const [key, value] of Object.entries(optional)) if (value !== undefined) snapshot[key] = value;
  return snapshot as unknown as TaskSnapshot;
}
