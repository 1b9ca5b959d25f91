import type { JSONRPCRequest, ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { invalidParams, missingTasksExtension, TasksError } from '../core/errors.js';
import { redactSecrets } from '../core/secrets.js';
import { toProtocolError } from '../runtime/protocol-errors.js';
import type { JsonObject, JsonValue, TaskRecord } from '../core/task.js';
import { ToolInputError, type AnyToolDefinition, type ElicitRequest, type ElicitResult } from '../core/tool.js';
import { ErrorCode } from '../protocol/constants.js';
import { v1CreateTaskResult } from '../protocol/v1/codec.js';
import { v2CreateTaskResult } from '../protocol/v2/codec.js';
import { toolErrorResult } from '../runtime/outcome.js';
import type { Caller } from './caller.js';
import type { HandlerDeps } from './deps.js';
import { isNeedsInput, runWithCallInput } from './input-gathering.js';
import { effectiveTtlMs } from './options.js';
import { withPollHint } from './poll-hint.js';

const CallParamsSchema = z.looseObject({
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).optional(),
  _meta: z.looseObject({ progressToken: z.union([z.string(), z.number().int()]).optional() }).optional(),
});

/**
 * v1 `params.task` (2025-11-25 `TaskMetadata`): an object whose `ttl`, when present, is an integer ≥ 0 (any size:
 * larger than the maximum is clamped, R18).
 */
const V1TaskParamSchema = z.looseObject({ ttl: z.number().min(0).refine(Number.isInteger, 'an integer').optional() });

/**
 * `tools/call` for every era, answered through the SDK's fallback handler so that task results are spec-exact
 * (v1 nested `{task}` and v2 flat `resultType: "task"`, neither with a `content` key).
 *
 * Order of checks: params (`-32602`), unknown tool (`-32602`), task support (v1 `-32601` R8/R10; v2 `-32021` E6),
 * arguments against the tool's `inputSchema` and its preflight (an `isError` tool result and no task, SEP-1303).
 * Then either a task is created durably (and only then answered), or the tool runs inline.
 */
export async function handleToolsCall(
  deps: HandlerDeps,
  caller: Caller,
  request: JSONRPCRequest,
  context: ServerContext,
  onCreated?: (record: TaskRecord) => void,
): Promise<JsonObject> {
  const parsed = CallParamsSchema.safeParse(request.params ?? {});
  if (!parsed.success) throw invalidParams(`Invalid params for tools/call: ${z.prettifyError(parsed.error)}`);
  const params = parsed.data;
  const tool = deps.runtime.tool(params.name);
  if (!tool) throw invalidParams(`Unknown tool: ${params.name}`);

  const asTask = decideTaskMode(caller, tool, params.task);
  if (typeof asTask === 'object') return asTask;

  const args = tool.inputSchema.safeParse(params.arguments ?? {});
  if (!args.success) return toolErrorResult(`Invalid arguments for tool ${tool.name}: ${z.prettifyError(args.error)}`);
  try {
    await tool.preflight?.(args.data, { roots: deps.roots, deniedPaths: deps.deniedPaths });
  } catch (error) {
    if (error instanceof ToolInputError) return toolErrorResult(error.message);
    throw error;
  }

  let gathered: JsonValue | undefined;
  if (tool.gather) {
    const gather = tool.gather.bind(tool);
    const outcome = await runWithCallInput(caller, context, deps.requestStates, { tool: tool.name, args: params.arguments ?? {}, prefix: 'gather' }, (elicitor) =>
      gather(args.data, {
        signal: context.mcpReq.signal,
        roots: deps.roots,
        deniedPaths: deps.deniedPaths,
        elicit: async (request) => (await elicitor.elicitAll([request]))[0] as ElicitResult,
      }),
    );
    if ('inputRequired' in outcome) return outcome.inputRequired;
    gathered = outcome.done;
  }

  if (asTask) return createTaskForCall(deps, caller, tool, params, gathered, onCreated);
  const inline = await runWithCallInput(caller, context, deps.requestStates, { tool: tool.name, args: params.arguments ?? {}, prefix: 'input' }, (elicitor) =>
    runInline(deps, tool, args.data, context, elicitor.elicitAll, gathered, caller.ownerKey),
  );
  return 'inputRequired' in inline ? inline.inputRequired : inline.done;
}

/** The parts of `tools/call` params that shape a task. */
export interface TaskCallParams {
  arguments?: Record<string, unknown>;
  task?: unknown;
  _meta?: { progressToken?: string | number };
}

/**
 * Create the task of a `tools/call` that was decided to become one, durably, and answer with its
 * `CreateTaskResult` (v1 nested, R12; v2 flat, E8). Shared by the SDK path and the fast path.
 * @throws TasksError `-32602` for a v1 `task` that is not an object with an integer `ttl` ≥ 0.
 */
export async function createTaskForCall(
  deps: HandlerDeps,
  caller: Caller,
  tool: AnyToolDefinition,
  params: TaskCallParams,
  gathered?: JsonValue,
  onCreated?: (record: TaskRecord) => void,
): Promise<JsonObject> {
  const requestedTtl = caller.generation === 'v1' ? V1TaskParamSchema.safeParse(params.task) : undefined;
  if (requestedTtl && !requestedTtl.success) throw invalidParams('Invalid params for tools/call: task must be an object whose optional ttl is an integer >= 0 (milliseconds)');
  const record = await deps.runtime.createTask({
    tool,
    ownerKey: caller.ownerKey,
    generation: caller.generation as 'v1' | 'v2',
    protocolVersion: caller.protocolVersion,
    arguments: (params.arguments ?? {}) as JsonObject,
    clientCapabilities: caller.clientCapabilities,
    progressToken: params._meta?.progressToken ?? null,
    ttlMs: caller.generation === 'v1' ? effectiveTtlMs(deps.limits, requestedTtl?.data?.ttl) : deps.limits.defaultTtlMs,
    pollIntervalMs: deps.limits.pollIntervalMs,
    ...(gathered === undefined ? {} : { gathered }),
    ...(onCreated ? { onCreated } : {}),
  });
  const answered = withPollHint(record, deps.clock.now());
  return caller.generation === 'v1' ? (v1CreateTaskResult(answered) as unknown as JsonObject) : (v2CreateTaskResult(answered) as unknown as JsonObject);
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
  if (caller.era === 'modern') {
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

/** Run a tool without a task and answer with its `CallToolResult`. */
async function runInline(
  deps: HandlerDeps,
  tool: AnyToolDefinition,
  args: unknown,
  context: ServerContext,
  elicitAll: (requests: readonly ElicitRequest[]) => Promise<ElicitResult[]>,
  gathered: JsonValue | undefined,
  ownerKey: string,
): Promise<JsonObject> {
  try {
    return await deps.runtime.runInline(tool, args, context.mcpReq.signal, deps.logger.child({ tool: tool.name }), elicitAll, gathered, ownerKey);
  } catch (error) {
    if (isNeedsInput(error)) throw error;
    if (error instanceof ToolInputError) return toolErrorResult(error.message);
    const wire = toProtocolError(error);
    if (wire) throw new TasksError(wire.code, redactSecrets(wire.message), wire.data);
    // A client that went away aborts its inline call: expected, not an error worth a stack trace.
    if (context.mcpReq.signal.aborted) deps.logger.debug({ tool: tool.name }, 'inline call aborted by the client');
    else deps.logger.error({ err: error, tool: tool.name }, 'tool threw');
    throw new TasksError(ErrorCode.InternalError, `Internal error in tool ${tool.name}`);
  }
}
