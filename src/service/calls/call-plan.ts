import { z } from 'zod';

import { type ArgumentLimits, checkArgumentLimits } from '../../core/argument-limits.js';
import type { PathConfinement } from '../../core/confinement.js';
import { invalidParams, missingTasksExtension, TasksError } from '../../core/errors.js';
import { issuesLine } from '../../core/input-issues.js';
import type { JsonObject } from '../../core/task.js';
import { type AnyToolDefinition, ToolInputError } from '../../core/tool.js';
import { immediateResponseOf, inputErrorResult, sanitizeModelText, toolErrorResult } from '../../core/tool-outcome.js';
import type { ToolRegistry } from '../../core/tool-registry.js';
import type { TraceCarrier } from '../../core/trace-context.js';
import { ErrorCode } from '../../protocol/constants.js';
import { type Caller, declaresTaskSupport } from '../caller.js';
import { type FallbackOperation, fallbackOperationOf, parseFallbackArguments } from './fallback-tools.js';
import { killSwitchError, type TaskModeGate } from './task-mode-gate.js';

/** A `tools/call` as the adapters hand it over (params shape already checked: `name` is a non-empty string). */
export interface ToolCall {
  name: string;
  arguments?: Record<string, unknown>;
  /** v1 `params.task` exactly as sent (`TaskMetadata`); its presence asks for a task (2025-11-25 R8–R10). */
  task?: unknown;
  /** `_meta.progressToken` of the call (2025-11-25 R36), or `null`. */
  progressToken: string | number | null;
  /** `_meta["dev.mcp-tasks/idempotency-key"]` (already checked: 1–255 printable ASCII), when sent. */
  idempotencyKey?: string;
  /** `_meta.traceparent` / `_meta.tracestate` of the call, when a valid `traceparent` was sent (invalid ones are ignored, W3C). */
  trace?: TraceCarrier;
}

/**
 * What a `tools/call` will do, decided before anything runs or is written ({@link planCall}):
 * - `answer`: an `isError` tool result and no task (invalid arguments or a failed preflight, SEP-1303; a
 *   task-required tool in a session that has no tasks);
 * - `task`: create a durable task (after the tool's `gather` phase, if it has one);
 * - `fallback`: create the task likewise, but answer a host without task support with a text result naming the
 *   task and the task fallback tools (`taskFallbackTools`);
 * - `task_operation`: a call of a task fallback tool — the task operation it stands for;
 * - `inline`: run the tool within the request;
 * - `refused`: the {@link TaskModeGate} refuses task mode and there is no inline fallback: `callTool` throws
 *   `error` (`-31003`) inside the service door, so hooks (metrics, audit) see the refusal.
 */
export type CallPlan =
  | { kind: 'answer'; toolName: string; result: JsonObject }
  | ({ kind: 'task' } & RunPlan)
  | ({ kind: 'fallback' } & RunPlan)
  | { kind: 'task_operation'; toolName: string; operation: FallbackOperation; taskId: string }
  | ({ kind: 'inline' } & RunPlan)
  | { kind: 'refused'; toolName: string; error: TasksError; cohort?: 'canary' | 'stable' };

/** How {@link planCall} decides beyond the caller and the tool. */
export interface CallPlanOptions {
  /**
   * Offer hosts without task support (see `declaresTaskSupport`) the task fallback tools, and answer their calls
   * of task-required tools with a task they follow through them: 2025-era sessions, and 2026-07-28 requests
   * without the Tasks Extension (issue 27 §4), whose call would otherwise be `-32021` (SEP-2663 E6). E6 is about work
   * the server can only run as a task; with this option on the server runs it for such a client behind an
   * ordinary tool result instead, which is an operator's explicit choice (off by default).
   */
  taskFallbackTools: boolean;
  /** The kill switch and canary (issue 15): consulted for every call that would create a task. @defaultValue none */
  gate?: TaskModeGate;
  /** Size and depth limits of the arguments (issue 10 §2). */
  argumentLimits: ArgumentLimits;
}

/** What a `task` or `inline` plan carries. */
export interface RunPlan {
  tool: AnyToolDefinition;
  call: ToolCall;
  /** The arguments as the tool's `inputSchema` parsed them. */
  args: unknown;
  /** The v1 `task.ttl` asked for (ms), before the TTL policy clamps it. */
  requestedTtlMs: number | undefined;
  /** The tool's `immediateResponse` for these arguments, sanitised (task and fallback plans only). */
  immediateResponse?: string;
  /** An inline run in place of a task refused by the {@link TaskModeGate} (`sync` fallback): its bound (ms). */
  maxSyncMs?: number;
  /** The canary cohort of the caller for this tool, when the tool has a canary (a bounded metrics label). */
  cohort?: 'canary' | 'stable';
}

/**
 * v1 `params.task` (2025-11-25 `TaskMetadata`): an object whose `ttl`, when present, is an integer ≥ 0 (any size:
 * larger than the maximum is clamped, R18).
 */
/**
 * The `isError` answer of arguments the server refused before the tool ran (not a tool's own `ToolInputError`, whose
 * text is the tool's data): server-made text a model reads, which may echo what the caller sent (a record key) — one
 * sanitised line, as every other model-facing text the server writes (issue 23 §3).
 */
function refusedInput(message: string): JsonObject {
  return inputErrorResult(sanitizeModelText(message));
}

const V1TaskParamSchema = z.looseObject({ ttl: z.number().min(0).refine(Number.isInteger, 'an integer').optional() });

/**
 * THE rule "may this call create a task", for every entry path. Order of checks: unknown tool (`-32602`), the
 * argument size and depth limits (`-32602` naming the limit, issue 10 §2), task
 * support (v1 `-32601` R8/R10; v2 `-32021` E6), arguments against the tool's `inputSchema` and its preflight (an
 * `isError` answer, SEP-1303), and for a v1 task the shape of `params.task` (`-32602`). With
 * `taskFallbackTools`, a host without task support (2025-era session, or 2026-07-28 request without the extension)
 * calls the fallback tools by name, and its call of a task-required tool (without `params.task`) becomes a
 * `fallback` plan instead of `-32601` / `-32021` / an `isError` answer — that host saw the tool as task-optional
 * (see `tools/list`), so R10 and E6 do not apply to it.
 * @throws TasksError with the wire code of each refusal above.
 */
export async function planCall(tools: ToolRegistry, confinement: PathConfinement, caller: Caller, call: ToolCall, options: CallPlanOptions): Promise<CallPlan> {
  const fallbackHost = usesTaskFallbackTools(caller, options);
  const tool = tools.get(call.name);
  if (!tool) {
    const operation = fallbackHost ? fallbackOperationOf(call.name) : undefined;
    if (!operation) throw invalidParams(`Unknown tool ${call.name}`);
    // A 2026-07-28 request's `task` param is ignored (SEP-2663: not part of the extension); a 2025-era one is R8.
    if (call.task !== undefined && caller.negotiation === 'per-session')
      throw new TasksError(ErrorCode.MethodNotFound, `Tool '${call.name}' does not support task-augmented execution`);
    const parsed = parseFallbackArguments(call.arguments);
    if ('error' in parsed) return { kind: 'answer', toolName: call.name, result: refusedInput(`Invalid arguments for tool ${call.name}: ${parsed.error}`) };
    return { kind: 'task_operation', toolName: call.name, operation, taskId: parsed.taskId };
  }
  const oversized = checkArgumentLimits(call.arguments, options.argumentLimits);
  if (oversized) throw oversized;
  const fallback = fallbackHost && tool.execution === 'task-required' && (call.task === undefined || caller.negotiation === 'per-request');
  let mode = fallback ? 'fallback' : decideTaskMode(caller, tool, call.task);
  if (typeof mode === 'object') return { kind: 'answer', toolName: tool.name, result: mode };
  const verdict = mode === false ? undefined : options.gate?.verdict(caller, tool.name);
  const gated: Pick<RunPlan, 'maxSyncMs' | 'cohort'> = verdict?.cohort === undefined ? {} : { cohort: verdict.cohort };
  if (verdict && !verdict.allow) {
    // Only where the server decides (2026-07-28) may a refused task run inline instead: a 2025-11-25 session that
    // sent `task` was told the tool takes tasks, and a receiver may not silently ignore `task` — it gets -31003.
    if (verdict.fallback !== 'sync' || tool.execution === 'task-required' || caller.negotiation !== 'per-request') {
      return { kind: 'refused', toolName: tool.name, error: killSwitchError(tool.name, verdict.reason), ...gated };
    }
    mode = false;
    gated.maxSyncMs = verdict.maxSyncMs;
  }
  const args = tool.inputSchema.safeParse(call.arguments ?? {});
  if (!args.success) return { kind: 'answer', toolName: tool.name, result: refusedInput(`Invalid arguments for tool ${tool.name}: ${issuesLine(args.error)}`) };
  try {
    await tool.preflight?.(args.data, { roots: confinement.roots, deniedPaths: confinement.deniedPaths });
  } catch (error) {
    if (error instanceof ToolInputError) return { kind: 'answer', toolName: tool.name, result: inputErrorResult(error.message) };
    throw error;
  }
  let requestedTtlMs: number | undefined;
  if (mode === true && caller.generation === 'v1') {
    const parsed = V1TaskParamSchema.safeParse(call.task);
    if (!parsed.success) throw invalidParams('Invalid params for tools/call: task must be an object whose optional ttl is an integer >= 0 (milliseconds)');
    requestedTtlMs = parsed.data.ttl;
  }
  if (!mode) return { kind: 'inline', tool, call, args: args.data, requestedTtlMs, ...gated };
  const immediateResponse = immediateResponseOf(tool, args.data);
  const run: RunPlan = { tool, call, args: args.data, requestedTtlMs, ...gated, ...(immediateResponse === undefined ? {} : { immediateResponse }) };
  return mode === 'fallback' ? { kind: 'fallback', ...run } : { kind: 'task', ...run };
}

/**
 * Whether this caller gets the task fallback tools: a host without task support — a 2025-era session without
 * `capabilities.tasks`, or a 2026-07-28 request without the Tasks Extension (issue 27 §4) — with the option on.
 */
export function usesTaskFallbackTools(caller: Caller, options: CallPlanOptions): boolean {
  return options.taskFallbackTools && !declaresTaskSupport(caller);
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
    if (tool.execution === 'task-required') throw missingTasksExtension({ tool: tool.name });
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
