import type { PathConfinement } from '../core/confinement.js';
import type { ExecutionHost } from '../core/executor.js';
import type { Logger } from '../core/logger.js';
import type { JsonValue } from '../core/task.js';
import type { ElicitRequest, ElicitResult, OwnerState, ToolContext, ToolDefinition } from '../core/tool.js';
import { performOperation } from '../ledger/operations.js';

/** Format `ctx.progress` as a statusMessage: `"<message> (done/total)"` or `"<message> (done)"`. */
function progressMessage(done: number, total?: number, message?: string): string {
  const counter = total === undefined ? `${done}` : `${done}/${total}`;
  return `${message ?? 'progress'} (${counter})`;
}

/** What a tool context is built from. */
export interface ToolContextInput {
  /** The task being run, or `null` inline (then `ctx.step` simply runs its function). */
  taskId: string | null;
  signal: AbortSignal;
  confinement: PathConfinement;
  logger: Logger;
  /** Answers the context's operations (status, progress, steps, questions). */
  host: ExecutionHost;
  /** Name of the tool, for error messages. */
  toolName: string;
  /** Whether the tool declared `elicits: true`; `ctx.elicit` refuses otherwise. */
  elicits: boolean;
  /** How questions are asked in this run (through the host; absent = this run cannot ask). */
  elicitAll?: (requests: readonly ElicitRequest[]) => Promise<ElicitResult[]>;
  /** Value of the tool's `gather` phase. */
  gathered?: JsonValue;
  /** The tool's reconcilers (`ToolDefinition.operations`), for `ctx.operation` re-runs. */
  operations?: ToolDefinition['operations'];
}

/**
 * `ctx.ownerState`: the tool state of the run's owner and tool, kept by the host in its store (a message in an
 * isolate, like every other context operation).
 */
function ownerState(host: ExecutionHost): OwnerState {
  return { get: (key) => host.getOwnerState(key), put: (key, value) => host.putOwnerState(key, value) };
}

/**
 * Build the `ctx` handed to `tool.run`: every operation becomes a call of the {@link ExecutionHost}, so the same
 * context works in process and, through messages, in an isolate. For a task, `step` journals results so a re-run
 * after a crash replays them; inline it simply runs the step.
 */
export function createToolContext(input: ToolContextInput): ToolContext {
  const usedStepNames = new Set<string>();
  const elicitAll = async (requests: readonly ElicitRequest[]): Promise<ElicitResult[]> => {
    if (!input.elicits) throw new Error(`tool ${input.toolName} calls ctx.elicit but does not declare elicits: true`);
    if (!input.elicitAll) throw new Error(`tool ${input.toolName} cannot ask for input in this kind of call`);
    return input.elicitAll(requests);
  };
  return {
    gathered: input.gathered,
    ownerState: ownerState(input.host),
    elicitAll,
    async elicit(request) {
      const [answer] = await elicitAll([request]);
      return answer as ElicitResult;
    },
    signal: input.signal,
    taskId: input.taskId,
    shadow: {
      observe(jobId) {
        if (typeof jobId === 'string' && jobId.length > 0) input.host.observeShadowJob?.(jobId);
      },
    },
    roots: input.confinement.roots,
    deniedPaths: input.confinement.deniedPaths,
    logger: input.logger,
    setStatus: (message) => input.host.setStatus(message),
    progress(done, total, message) {
      input.host.progress(done, total, progressMessage(done, total, message));
    },
    async operation(spec, perform) {
      if (input.taskId === null)
        throw new Error(`tool ${input.toolName} calls ctx.operation in an inline call; consequential effects need a task (execution: 'task-required')`);
      return performOperation(input.host, input.operations, spec, perform);
    },
    async step<T extends JsonValue>(name: string, fn: () => T | Promise<T>): Promise<T> {
      if (usedStepNames.has(name)) throw new Error(`ctx.step name "${name}" used twice in one run; step names must be unique`);
      usedStepNames.add(name);
      if (input.taskId === null) return fn();
      const journaled = await input.host.getStep(name);
      if (journaled) return journaled.value as T;
      // What the journal holds is what this run goes on with: should an earlier run have journaled the step first,
      // every later run replays that value, so this one must not carry on with its own.
      return (await input.host.putStep(name, await fn())) as T;
    },
  };
}
