import { TasksError } from '../core/errors.js';
import type { ExecutionHost, ExecutionLogEntry, ExecutionOutcome, ExecutionRequest, Executor } from '../core/executor.js';
import type { Logger } from '../core/logger.js';
import { toProtocolError } from '../core/protocol-errors.js';
import type { JsonObject, JsonRpcErrorObject, JsonValue } from '../core/task.js';
import { ToolInputError } from '../core/tool.js';
import { MAX_RESULT_DEPTH, nestedDeeperThan, toCallToolResult, tooDeepMessage } from '../core/tool-outcome.js';
import type { ToolRegistry } from '../core/tool-registry.js';
import { ErrorCode } from '../protocol/constants.js';
import { createToolContext } from './tool-context.js';

/**
 * Thrown out of `ctx.elicit` into the tool when the run parks for input: the run ends without an outcome and is
 * started again once every outstanding question is answered. A tool must let it propagate (the run's signal is
 * aborted too, so a tool that swallows it still stops).
 */
export class ParkedForInput extends Error {
  override readonly name = 'ParkedForInput';
  constructor() {
    super('task parked until its input requests are answered');
  }
}

/**
 * The {@link Executor} that runs tools as async functions on this thread's event loop: cheapest, and what tests and
 * tiny tools need. A tool that blocks the loop blocks the process (lease renewal included) — the isolated executor
 * of the next stage runs tools elsewhere behind the same port.
 */
export class InProcessExecutor implements Executor {
  constructor(private readonly tools: ToolRegistry) {}

  async execute(request: ExecutionRequest, host: ExecutionHost, signal: AbortSignal, withdraw?: AbortSignal): Promise<ExecutionOutcome> {
    const tool = this.tools.get(request.toolName);
    if (!tool) throw new TasksError(ErrorCode.InternalError, `Tool ${request.toolName} is not loaded by this executor`);
    // The tool starts synchronously below: only a run aborted or withdrawn before this call never starts.
    if (signal.aborted) return { kind: 'aborted', reason: String(signal.reason) };
    if (withdraw?.aborted) return { kind: 'aborted', reason: String(withdraw.reason) };
    // The run's own signal: aborted by the caller's, or by this executor when the run parks.
    const controller = new AbortController();
    const follow = (): void => controller.abort(signal.reason);
    signal.addEventListener('abort', follow, { once: true });
    let parked = false;
    // The host's logger binds the run's fields (task, tool, attempt) already: a line carrying them again would
    // repeat each key in the JSON it writes.
    const logger = hostLogger(host, {});
    const context = createToolContext({
      taskId: request.taskId,
      signal: controller.signal,
      confinement: request.confinement,
      logger,
      host,
      toolName: tool.name,
      elicits: (tool.elicits ?? false) !== false,
      elicitAll: async (requests) => {
        const asked = await host.elicit(requests);
        if ('answers' in asked) return asked.answers;
        parked = true;
        if (!controller.signal.aborted) controller.abort('parked');
        throw new ParkedForInput();
      },
      ...(request.gathered === undefined ? {} : { gathered: request.gathered }),
      ...(tool.operations ? { operations: tool.operations } : {}),
    });
    let outcome: ExecutionOutcome;
    host.started?.();
    try {
      const args = tool.inputSchema.parse(request.arguments);
      outcome = { kind: 'returned', result: toCallToolResult(tool, await tool.run(args, context)) };
    } catch (error) {
      outcome = classify(error, tool.name);
      if (outcome.kind === 'crashed' && !signal.aborted && !parked) logger.error({ err: error }, 'tool threw');
    } finally {
      signal.removeEventListener('abort', follow);
    }
    if (signal.aborted) return { kind: 'aborted', reason: String(signal.reason) };
    return parked ? { kind: 'parked' } : outcome;
  }

  async close(): Promise<void> {}
}

/** What an exception thrown by a tool stands for (see {@link ExecutionOutcome}). */
function classify(error: unknown, toolName: string): ExecutionOutcome {
  if (error instanceof ToolInputError) return { kind: 'input_error', message: textOf(error.message) };
  const wire = toProtocolError(error);
  if (!wire) return { kind: 'crashed', message: `Internal error in tool ${toolName}` };
  return { kind: 'protocol_error', error: asJsonError(wire, toolName) };
}

/**
 * A tool's coded error as JSON, which is how it is stored and how it leaves a tool's thread: a message that is not a
 * string becomes one, and `data` is bounded like a result (see `MAX_RESULT_DEPTH`) and must survive `JSON.stringify`
 * (a function or a Symbol in it is dropped as JSON drops it; a BigInt or a cycle fails the run with one line). An
 * outcome a thread cannot post was never answered: the run held its slot for good (review of stop 46).
 */
function asJsonError(wire: JsonRpcErrorObject, toolName: string): JsonRpcErrorObject {
  const message = textOf(wire.message);
  if (wire.data === undefined) return { code: wire.code, message };
  if (nestedDeeperThan(wire.data, MAX_RESULT_DEPTH - 1)) return { code: ErrorCode.InternalError, message: tooDeepMessage(toolName, 'error') };
  try {
    const text = JSON.stringify(wire.data);
    return text === undefined ? { code: wire.code, message } : { code: wire.code, message, data: JSON.parse(text) as JsonValue };
  } catch {
    return { code: ErrorCode.InternalError, message: `Tool ${toolName} threw an error whose data is not JSON (a BigInt, or a cycle); only this run failed` };
  }
}

/** A message as a string, whatever the tool put there. */
function textOf(message: unknown): string {
  if (typeof message === 'string') return message;
  try {
    return String(message);
  } catch {
    return 'an error whose message is not text';
  }
}

/** An `Error` (or anything thrown) as JSON for a log line: name, message and stack, nothing else. */
function errorFields(error: unknown): JsonValue {
  if (error instanceof Error) return { type: error.name, message: error.message, ...(error.stack ? { stack: error.stack } : {}) };
  return { message: String(error) };
}

/** The tool's `ctx.logger`: each line becomes an {@link ExecutionLogEntry} for the host, with `fields` bound. */
function hostLogger(host: ExecutionHost, fields: Record<string, JsonValue>): Logger {
  const write = (level: ExecutionLogEntry['level']) => (object: object, message?: string) => {
    const line: JsonObject = { ...fields };
    for (const [key, value] of Object.entries(object)) line[key] = key === 'err' ? errorFields(value) : toJson(value);
    host.log({ level, fields: line, message: message ?? '' });
  };
  return {
    debug: write('debug'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
    child: (bindings) => hostLogger(host, { ...fields, ...(toJson(bindings) as JsonObject) }),
  };
}

/** A logged value as JSON (what a message between threads could carry). */
function toJson(value: unknown): JsonValue {
  if (value instanceof Error) return errorFields(value);
  try {
    return JSON.parse(JSON.stringify(value ?? null)) as JsonValue;
  } catch {
    return String(value);
  }
}
