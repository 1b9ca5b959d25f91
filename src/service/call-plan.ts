import { z } from 'zod';
import { checkArgumentLimits, type ArgumentLimits } from '../core/argument-limits.js';
import { invalidParams, missingTasksExtension, TasksError } from '../core/errors.js';
import type { PathConfinement } from '../core/confinement.js';
import type { JsonObject } from '../core/task.js';
import { ToolInputError, type AnyToolDefinition } from '../core/tool.js';
import { toolErrorResult } from '../core/tool-outcome.js';
import type { ToolRegistry } from '../core/tool-registry.js';
import { ErrorCode } from '../protocol/constants.js';
import type { Caller } from './caller.js';

/** A `tools/call` as the adapters hand it over (params shape already checked: `name` is a non-empty string). */
export interface ToolCall {
  name: string;
  arguments?: Record<string, unknown>;
  /** v1 `params.task` exactly as sent (`TaskMetadata`); its presence asks for a task (2025-11-25 R8–R10). */
  task?: unknown;
  /** `_meta.progressToken` of the call (2025-11-25 R36), or `null`. */
  progressToken: string | number | null;
}

/**
 * What a `tools/call` will do, decided before anything runs or is written ({@link planCall}):
 * - `answer`: an `isError` tool result and no task (invalid arguments or a failed preflight, SEP-1303; a
 *   task-required tool in a session that has no tasks);
 * - `task`: create a durable task (after the tool's `gather` phase, if it has one);
 * - `inline`: run the tool within the request.
 */
export type CallPlan = { kind: 'answer'; toolName: string; result: JsonObject } | ({ kind: 'task' } & RunPlan) | ({ kind: 'inline' } & RunPlan);

/** What a `task` or `inline` plan carries. */
export interface RunPlan {
  tool: AnyToolDefinition;
  call: ToolCall;
  /** The arguments as the tool's `inputSchema` parsed them. */
  args: unknown;
  /** The v1 `task.ttl` asked for (ms), before the TTL policy clamps it. */
  requestedTtlMs: number | undefined;
}

/**
 * v1 `params.task` (2025-11-25 `TaskMetadata`): an object whose `ttl`, when present, is an integer ≥ 0 (any size:
 * larger than the maximum is clamped, R18).
 */
const V1TaskParamSchema = z.looseObject({ ttl: z.number().min(0).refine(Number.isInteger, 'an integer').optional() });

/**
 * THE rule "may this call create a task", for every entry path. Order of checks: unknown tool (`-32602`), the
 * argument size and depth limits (`-32602` naming the limit, issue 10 §2), task
 * support (v1 `-32601` R8/R10; v2 `-32021` E6), arguments against the tool's `inputSchema` and its preflight (an
 * `isError` answer, SEP-1303), and for a v1 task the shape of `params.task` (`-32602`).
 * @throws TasksError with the wire code of each refusal above.
 */
export async function planCall(tools: ToolRegistry, confinement: PathConfinement, limits: ArgumentLimits, caller: Caller, call: ToolCall): Promise<CallPlan> {
  const tool = tools.get(call.name);
  if (!tool) throw invalidParams(`Unknown tool: ${call.name}`);
  const oversized = checkArgumentLimits(call.arguments, limits);
  if (oversized) throw oversized;
  const mode = decideTaskMode(caller, tool, call.task);
  if (typeof mode === 'object') return { kind: 'answer', toolName: tool.name, result: mode };
  const args = tool.inputSchema.safeParse(call.arguments ?? {});
  if (!args.success) return { kind: 'answer', toolName: tool.name, result: toolErrorResult(`Invalid arguments for tool ${tool.name}: ${z.prettifyError(args.error)}`) };
  try {
    await tool.preflight?.(args.data, { roots: confinement.roots, deniedPaths: confinement.deniedPaths });
  } catch (error) {
    if (error instanceof ToolInputError) return { kind: 'answer', toolName: tool.name, result: toolErrorResult(error.message) };
    throw error;
  }
  let requestedTtlMs: number | undefined;
  if (mode && caller.generation === 'v1') {
    const parsed = V1TaskParamSchema.safeParse(call.task);
    if (!parsed.success) throw invalidParams('Invalid params for tools/call: task must be an object whose optional ttl is an integer >= 0 (milliseconds)');
    requestedTtlMs = parsed.data.ttl;
  }
  const run: RunPlan = { tool, call, args: args.data, requestedTtlMs };
  return mode ? { kind: 'task', ...run } : { kind: 'inline', ...run };
}

/**
 * Whether this call becomes a task: `true`/`false`, or an `isError` result to answer at once (a task-required tool
 * in a pre-2025-11-25 session, which has no way to take a task).
 * @throws TasksError `-32601` (v1 taskSupport violation) or `-32021` (v2 task-required tool, undeclared extension).
 */
function decideTaskMode(caller: Caller, tool: AnyToolDefinition, taskParam: unknown): boolean | JsonObject {
  if (caller.generation === 'v1') {
    const wantsTask = taskParam !== undefined;
    if (wantsTask && tool.execution === 'sync') {
      throw new TasksError(ErrorCode.MethodNotFound, `Tool '${tool.name}' does not support task-augmented execution`);
    }
    if (!wantsTask && tool.execution === 'task-required') {
      throw new TasksError(ErrorCode.MethodNotFound, `Tool '${tool.name}' requires task-augmented execution`);
    }
    return wantsTask;
  }
  if (caller.negotiation === 'per-request') {
    if (tool.execution === 'sync') return false;
    if (caller.generation === 'v2') return true;
    if (tool.execution === 'task-required') throw missingTasksExtension();
    return false;
  }
  if (tool.execution === 'task-required') {
    return toolErrorResult(
      `Tool '${tool.name}' runs only as a task, and this session negotiated MCP ${caller.protocolVersion || 'an older version'}, which has no tasks. ` +
        `Connect with protocol 2025-11-25 (tasks) or 2026-07-28 with the io.modelcontextprotocol/tasks extension.`,
    );
  }
  return false;
}
