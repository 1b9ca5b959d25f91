import type { Logger } from '../core/logger.js';
import type { TaskStore } from '../core/store.js';
import type { JsonValue } from '../core/task.js';
import type { ElicitRequest, ElicitResult, OwnerState, ToolContext } from '../core/tool.js';
import { sanitizeStatusMessage } from './outcome.js';
import type { StatusWriter } from './status-writer.js';

/** Format `ctx.progress` as a statusMessage: `"<message> (done/total)"` or `"<message> (done)"`. */
function progressMessage(done: number, total?: number, message?: string): string {
  const counter = total === undefined ? `${done}` : `${done}/${total}`;
  return `${message ?? 'progress'} (${counter})`;
}

/** What a tool context is built from. */
export interface ToolContextInput {
  taskId: string | null;
  signal: AbortSignal;
  roots: readonly string[];
  /** Paths no tool may touch, whatever the roots (see `PathConfinement`). */
  deniedPaths: readonly string[];
  logger: Logger;
  /** Present for task runs: statusMessage and progress go through the coalescing writer. */
  statusWriter?: StatusWriter;
  /** Steps are journaled in it for task runs (`taskId` set); per-owner tool state is kept in it for every run. */
  store?: TaskStore;
  /** The caller's owner (`issuer|subject|tenant` or `anonymous`): whose `ownerState` the tool sees. */
  ownerKey?: string;
  /** Observes every progress report (v1 progress notifications hang off this). */
  onProgress?: (done: number, total: number | undefined, message: string) => void;
  /** Name of the tool, for error messages. */
  toolName: string;
  /** Whether the tool declared `elicits: true`; `ctx.elicit` refuses otherwise. */
  elicits: boolean;
  /** How questions are asked in this kind of run (task: park; inline: MRTR or a direct request); absent = cannot. */
  elicitAll?: (requests: readonly ElicitRequest[]) => Promise<ElicitResult[]>;
  /** Value of the tool's `gather` phase. */
  gathered?: JsonValue;
}

/**
 * `ctx.ownerState`: the store's tool state of this owner and tool. Without a store or an owner (a hand-built
 * context) nothing can be kept: reads find nothing and writes fail loudly rather than pretend.
 */
function ownerState(input: ToolContextInput): OwnerState {
  const { store, ownerKey, toolName } = input;
  if (!store || ownerKey === undefined) {
    return {
      get: async () => undefined,
      put: async () => {
        throw new Error(`tool ${toolName} cannot keep state in this kind of call (no store or owner)`);
      },
    };
  }
  return {
    get: (key) => store.getToolState(ownerKey, toolName, key),
    put: (key, value) => store.putToolState(ownerKey, toolName, key, value, Date.now()),
  };
}

/**
 * Build the `ctx` handed to `tool.run`. For a task, `step` journals results so a re-run after a crash replays them;
 * for an inline call it simply runs the step.
 */
export function createToolContext(input: ToolContextInput): ToolContext {
  const usedStepNames = new Set<string>();
  const setStatus = (message: string): void => {
    if (input.taskId !== null && input.statusWriter) input.statusWriter.set(input.taskId, sanitizeStatusMessage(message));
  };
  const elicitAll = async (requests: readonly ElicitRequest[]): Promise<ElicitResult[]> => {
    if (!input.elicits) throw new Error(`tool ${input.toolName} calls ctx.elicit but does not declare elicits: true`);
    if (!input.elicitAll) throw new Error(`tool ${input.toolName} cannot ask for input in this kind of call`);
    return input.elicitAll(requests);
  };
  return {
    gathered: input.gathered,
    ownerState: ownerState(input),
    elicitAll,
    async elicit(request) {
      const [answer] = await elicitAll([request]);
      return answer as ElicitResult;
    },
    signal: input.signal,
    taskId: input.taskId,
    roots: input.roots,
    deniedPaths: input.deniedPaths,
    logger: input.logger,
    setStatus,
    progress(done, total, message) {
      const text = progressMessage(done, total, message);
      setStatus(text);
      input.onProgress?.(done, total, text);
    },
    async step<T extends JsonValue>(name: string, fn: () => T | Promise<T>): Promise<T> {
      if (usedStepNames.has(name)) throw new Error(`ctx.step name "${name}" used twice in one run; step names must be unique`);
      usedStepNames.add(name);
      const { taskId, store } = input;
      if (taskId === null || !store) return fn();
      const journaled = await store.getStep(taskId, name);
      if (journaled) return journaled.value as T;
      const value = await fn();
      await store.putStep(taskId, name, value);
      return value;
    },
  };
}
