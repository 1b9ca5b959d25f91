import type { PathConfinement } from '../../core/confinement.js';
import { isTaskNotFound, taskNotFound, TasksError } from '../../core/errors.js';
import type { TasksServerLimits } from '../../core/limits.js';
import type { JsonObject, JsonValue, TaskRecord } from '../../core/task.js';
import type { ToolDescriptor } from '../../core/tool.js';
import { toolErrorResult } from '../../core/tool-outcome.js';
import type { ToolRegistry } from '../../core/tool-registry.js';
import type { RequestTrace } from '../../core/trace-context.js';
import { requestDigest } from '../../ledger/digest.js';
import { ErrorCode } from '../../protocol/constants.js';
import { type Caller, declaresTaskSupport, fallbackTaskCaller, type TaskCaller } from '../caller.js';
import type { OperationAudit, ServiceDoor } from '../door.js';
import type { TaskReads } from '../task-reads.js';
import type { TaskDetails, TasksDoor } from '../tasks/tasks-door.js';
import { type CallPlan, type CallPlanOptions, planCall, type RunPlan, type ToolCall, usesTaskFallbackTools } from './call-plan.js';
import { FALLBACK_TOOLS, type FallbackOperation } from './fallback-tools.js';
import { type KeyClaim, keyClaim } from './idempotency.js';
import type { InlineProgressSink } from './inline-progress.js';
import { askOne, bounded, type CallAsk, type InlineRunOptions, runInline } from './inline-run.js';
import type { TaskCreator, TaskSession } from './task-create.js';
import { resolveTaskInputs } from './task-inputs.js';
import { gatedDescriptor, type TaskModeGate } from './task-mode-gate.js';

export type { CallAsk };

/**
 * How one `tools/call` request can talk back, supplied by the adapter that received it (MRTR rounds on
 * 2026-07-28, elicitation requests in a 2025 session). A call that needs none — a plain task create — runs without.
 */
export interface CallInteraction {
  /** Aborted when the request ends (the client went away): gather phases and inline runs see it. */
  readonly signal: AbortSignal;
  /**
   * Run one phase (`gather`, or an inline run as `input`) that may ask questions through `ask`. When an answer is
   * missing, the interaction has built the request's `input_required` answer and returns it instead of the phase's
   * value (whatever the phase threw after `ask` said `parked`).
   */
  withInput<T>(prefix: 'gather' | 'input', phase: (ask: CallAsk) => Promise<T>): Promise<{ done: T } | { inputRequired: JsonObject }>;
  /**
   * After a `withInput` that finished a multi-round phase: an idempotency key derived from the signed request state
   * (the same for a replay of that final round, another for any other call), used when the client sent none.
   */
  derivedIdempotencyKey?(): string | undefined;
}

/** Options of {@link CallService.callTool}. */
export interface CallToolOptions extends TaskSession {
  /** How the request talks back; a fast path passes none and may then only carry out a plain task create. */
  interaction?: CallInteraction;
  /**
   * Where the `notifications/progress` of an inline run go, when the request carries a `progressToken` (issue 27
   * §3): the tool's progress, and a keep-alive after `limits.progressKeepAliveMs` of silence.
   */
  progress?: InlineProgressSink;
}

/**
 * How a `tools/call` was answered: a task created (`immediateResponse`: the tool's sanitised text for the model,
 * R15), a task created for a host without task support (`fallback`, answered as a text result), the task operation
 * of a task fallback tool, a result (inline, or an `isError` refusal), or a question round.
 */
export type CallOutcome =
  | { kind: 'task'; task: TaskRecord; immediateResponse?: string }
  | { kind: 'fallback'; task: TaskRecord; immediateResponse?: string }
  | { kind: 'task_operation'; operation: FallbackOperation; task: TaskRecord; details: TaskDetails; cancelled?: boolean }
  | { kind: 'result'; result: JsonObject }
  | { kind: 'input_required'; result: JsonObject };

/** What a {@link CallService} is built from. */
export interface CallServiceOptions extends InlineRunOptions {
  tools: ToolRegistry;
  limits: Readonly<TasksServerLimits>;
  confinement: PathConfinement;
  door: ServiceDoor;
  reads: TaskReads;
  creator: TaskCreator;
  /** Where a fallback tool's task operation goes. */
  tasks: TasksDoor;
  /** See `CallPlanOptions.taskFallbackTools`. @defaultValue false */
  taskFallbackTools?: boolean;
  /** The kill switch and canary (issue 15): who may use task mode for which tool now. @defaultValue every caller, every tool */
  gate?: TaskModeGate;
}

/**
 * THE tools/call DOOR, for MCP requestors: which tools a caller sees (`tools/list`), the plan of a call (task or
 * inline: THE rule "may this call create a task"), and carrying it out — the tool's `gather` phase (MRTR rounds or
 * session elicitation), the durable create ({@link TaskCreator}: idempotency keys, quotas) or the inline run, and
 * the task fallback tools (whose calls are tasks/* operations). It decides and records; it never runs a task's tool
 * (that is the worker's) — only inline calls go to its executor.
 */
export class CallService {
  private readonly planOptions: CallPlanOptions;

  constructor(private readonly options: CallServiceOptions) {
    this.planOptions = {
      taskFallbackTools: options.taskFallbackTools === true,
      argumentLimits: options.limits,
      ...(options.gate ? { gate: options.gate } : {}),
    };
  }

  /**
   * Every tool this caller may call, as it may call it (the adapter writes the `tools/list` entries). With the
   * task fallback tools on, a host without task support (see `declaresTaskSupport`: a 2025-era session without
   * `capabilities.tasks`, a 2026-07-28 request without the extension) sees task-required tools as task-optional,
   * followed by the fallback tools. Otherwise a caller that cannot take a
   * task at all (a session before 2025-11-25, a 2026-07-28 request without the extension) sees no task-required
   * tool; a 2025-11-25 session sees them as they are.
   */
  listTools(caller: Caller): Promise<ToolDescriptor[]> {
    return this.options.door.run({ operation: 'listTools', actor: caller, generation: caller.generation }, async () => {
      const tools: ToolDescriptor[] = this.gatedTools(caller);
      if (declaresTaskSupport(caller)) return tools;
      if (!usesTaskFallbackTools(caller, this.planOptions)) {
        // A 2025-11-25 session may call task-required tools as tasks without declaring `capabilities.tasks` (the
        // client-side capability describes it as a receiver: the MCP Inspector CLI and the SDK's tasks API declare
        // none), so it keeps seeing them with `taskSupport: "required"` (R10). Only sessions that cannot take a
        // task at all — before 2025-11-25, or 2026-07-28 without the extension — do not see them.
        return caller.generation === 'v1' ? tools : tools.filter((tool) => tool.execution !== 'task-required');
      }
      return [...tools.map((tool) => (tool.execution === 'task-required' ? asFallbackTool(tool) : tool)), ...FALLBACK_TOOLS];
    });
  }

  /**
   * Decide what a `tools/call` will do, before anything runs or is written: THE rule "may this call create a task"
   * (see `planCall`). Runs no hook: deciding is not an operation yet, and a fast path may still leave the request
   * to the full path.
   * @throws TasksError `-32602` unknown tool or bad v1 `task`; `-32601` / `-32021` for task support violations.
   */
  planCall(caller: Caller, call: ToolCall): Promise<CallPlan> {
    return planCall(this.options.tools, this.options.confinement, caller, call, this.planOptions);
  }

  /**
   * Carry out a plan made by {@link planCall}: the tool's `gather` phase (MRTR rounds or session elicitation), then
   * the task created durably — answered only after its commit (SEP-2663 E14) — or the inline run.
   * Without `options.interaction` only a plain task create (no `gather`) can be carried out: anything else is an
   * internal error of the adapter.
   * @throws TasksError `-31001` quota, `-31003` kill switch (refused plan, `sync_timeout`), `-32602` idempotency key
   *   reused with other arguments, the scope refusal of the hooks, and what the tool's run throws inline.
   */
  callTool(caller: Caller, plan: CallPlan, options: CallToolOptions = {}): Promise<CallOutcome> {
    // A fallback tool is the task operation it stands for: that operation's door (owner, scopes), not callTool's.
    if (plan.kind === 'task_operation')
      return this.taskOperation(fallbackTaskCaller(caller), plan.operation, plan.taskId).then((outcome) => this.presented(outcome));
    const tool = plan.kind === 'answer' || plan.kind === 'refused' ? plan.toolName : plan.tool.name;
    const argumentsDigest = plan.kind === 'answer' || plan.kind === 'refused' ? undefined : requestDigest(tool, plan.call.arguments ?? {});
    const trace: RequestTrace = plan.kind === 'answer' || plan.kind === 'refused' || !plan.call.trace ? {} : { incoming: plan.call.trace };
    const cohort = plan.kind === 'answer' ? undefined : plan.cohort;
    const context = {
      operation: 'callTool',
      actor: caller,
      generation: caller.generation,
      tool,
      ...(argumentsDigest ? { argumentsDigest } : {}),
      ...(cohort ? { cohort } : {}),
      trace,
    } as const;
    return this.options.door.run(context, async (audit) => {
      if (plan.kind === 'answer') return { kind: 'result', result: plan.result };
      if (plan.kind === 'refused') throw plan.error;
      return this.presented(await this.carryOut(caller, plan, trace, options, audit));
    });
  }

  /**
   * An outcome's task as its caller is shown it (`TasksDoor.presented`): the immediate create answer of both
   * generations says "waiting for a worker" as `tasks/get` would, never the tool's first words as if it ran.
   */
  private presented(outcome: CallOutcome): CallOutcome {
    return 'task' in outcome ? { ...outcome, task: this.options.tasks.presented(outcome.task) } : outcome;
  }

  /** The body of a `task`, `fallback` or `inline` plan inside the door (see {@link callTool}). */
  private async carryOut(
    caller: Caller,
    plan: Extract<CallPlan, { kind: 'task' | 'fallback' | 'inline' }>,
    trace: RequestTrace,
    options: CallToolOptions,
    audit: OperationAudit,
  ): Promise<CallOutcome> {
    const { interaction } = options;
    const { creator, confinement, reads } = this.options;
    const tool = plan.tool.name;
    const claimOf = (key: string): KeyClaim => keyClaim(caller, key, tool, plan.call.arguments ?? {}, this.options.limits.idempotencyWindowMs);
    // A replay is answered before anything runs again: no gather questions, no inline run, no second task.
    const sent = plan.call.idempotencyKey === undefined ? undefined : claimOf(plan.call.idempotencyKey);
    const replayed = sent && (await creator.replayed(sent));
    if (replayed) return { kind: plan.kind === 'fallback' ? 'fallback' : 'task', task: replayed };
    let gathered: JsonValue | undefined;
    if (plan.tool.gather) {
      const gather = plan.tool.gather.bind(plan.tool);
      const { signal, withInput } = interactive(interaction, tool);
      const phase = await withInput('gather', (ask) =>
        gather(plan.args, { signal, roots: confinement.roots, deniedPaths: confinement.deniedPaths, elicit: (request) => askOne(ask, request) }),
      );
      if ('inputRequired' in phase) return { kind: 'input_required', result: phase.inputRequired };
      gathered = phase.done;
    }
    // Task arguments (`fromTask`) are read here, as the caller, never by the tool (issue 12).
    const { ownerKey } = caller;
    const readGeneration = plan.kind === 'fallback' ? fallbackTaskCaller(caller).generation : caller.generation;
    gathered ??= await resolveTaskInputs(plan.tool, plan.call.arguments ?? {}, {
      get: async (id) => (readGeneration === null ? undefined : reads.get(id, { ownerKey, generation: readGeneration })),
      outcome: (id) => reads.outcome(id),
    });
    const immediate = plan.immediateResponse === undefined ? {} : { immediateResponse: plan.immediateResponse };
    if (plan.kind === 'task' || plan.kind === 'fallback') {
      // Without a key of the client's, a finished MRTR phase derives one from its signed request state, so a
      // replayed final round finds the task it created the first time.
      const derived = sent ? undefined : interaction?.derivedIdempotencyKey?.();
      const claim = sent ?? (derived === undefined ? undefined : claimOf(derived));
      const again = derived === undefined || !claim ? undefined : await creator.replayed(claim);
      if (again) return { kind: plan.kind, task: again };
      const start = { gathered, trace: trace.request ?? trace.incoming };
      if (plan.kind === 'task') {
        // Answered with the task it creates (unless the inline grace may answer with its result instead): the
        // `call` audit entry is written with the task, in the same statement (issue 25).
        const session = this.graceApplies(taskCaller(caller), plan) ? options : { ...options, audit: audit.carried };
        const task = await creator.create(taskCaller(caller), plan, start, session, claim);
        return (await this.graced(taskCaller(caller), plan, task)) ?? { kind: 'task', task, ...immediate };
      }
      // A host without task support gets no task notifications: it follows the task through the fallback tools.
      return { kind: 'fallback', task: await creator.create(fallbackTaskCaller(caller), plan, start, {}, claim), ...immediate };
    }
    // An inline call is answered once per key: the key is taken before the run.
    const earlier = sent && (await creator.claimInline(sent));
    if (earlier) return { kind: 'task', task: earlier };
    const { signal, withInput } = interactive(interaction, tool);
    const progress = options.progress && { sink: options.progress, keepAliveMs: this.options.limits.progressKeepAliveMs };
    const inline = await withInput('input', (ask) =>
      bounded(
        plan,
        signal,
        (runSignal) => runInline(this.options, caller, plan, ask, gathered, runSignal, progress),
        plan.tool.runtimeLimitMs ?? this.options.limits.runtimeLimitMs,
      ),
    );
    return 'inputRequired' in inline ? { kind: 'input_required', result: inline.inputRequired } : { kind: 'result', result: inline.done };
  }

  /**
   * The inline grace of 2026-07-28 (issue 27 §5): the server decides per request whether a declaring client gets a
   * task (SEP-2663 E2) and that client accepts a `CallToolResult` as well (E4). The task was created durably first
   * (so a crash in the grace loses nothing, and a retry with the same idempotency key finds it); if it completes
   * within `limits.inlineGraceMs`, its stored `CallToolResult` is the answer, and it saves the client a poll and its
   * model a turn. Only task-optional tools (a task-required tool asked for a task), not opted out with
   * `inlineGrace: false`; a failed, cancelled or waiting task is still answered as a task.
   * @returns the `result` outcome, or `undefined` to answer the task
   */
  private async graced(caller: TaskCaller, plan: RunPlan, task: TaskRecord): Promise<CallOutcome | undefined> {
    if (!this.graceApplies(caller, plan)) return undefined;
    try {
      const settled = await this.options.tasks.waitForTerminal(caller, task.taskId, AbortSignal.timeout(this.options.limits.inlineGraceMs));
      if (settled.status !== 'completed') return undefined;
      const outcome = await this.options.reads.outcome(task.taskId);
      return outcome?.kind === 'result' ? { kind: 'result', result: outcome.result } : undefined;
    } catch {
      // Still running at the end of the grace (or not readable by this caller): the client follows the task.
      return undefined;
    }
  }
  /** Whether {@link graced} may answer `plan`'s task with its result (see there). */
  private graceApplies(caller: TaskCaller, plan: RunPlan): boolean {
    const { inlineGraceMs } = this.options.limits;
    return caller.generation === 'v2' && inlineGraceMs > 0 && plan.tool.execution === 'task-optional' && plan.tool.inlineGrace !== false;
  }

  /**
   * The task operation of a fallback tool call, never blocking: `status` is `get`; `result` is `get` plus the
   * outcome once terminal (a host that never polls asks again later); `cancel` is `cancel`. An unknown (foreign,
   * expired) task is the tool error "Task not found", exactly as `tasks/get` would say it (R45, R49).
   */
  private async taskOperation(caller: TaskCaller, operation: FallbackOperation, taskId: string): Promise<CallOutcome> {
    const { tasks } = this.options;
    try {
      if (operation === 'cancel') {
        const { cancelled, task } = await tasks.cancel(caller, taskId);
        return { kind: 'task_operation', operation, task, details: {}, cancelled };
      }
      const task = await tasks.get(caller, taskId);
      return { kind: 'task_operation', operation, task, details: await tasks.details(caller, task) };
    } catch (error) {
      if (isTaskNotFound(error)) return { kind: 'result', result: toolErrorResult(taskNotFound().message) };
      throw error;
    }
  }

  /**
   * The tools as this caller may use them now: a tool whose task mode the gate refuses is shown as it runs instead
   * (see `gatedDescriptor`), so a new 2025-11-25 session sees `taskSupport: "forbidden"` and never sends `task`.
   */
  private gatedTools(caller: Caller): ToolDescriptor[] {
    const tools: ToolDescriptor[] = this.options.tools.list();
    const { gate } = this.options;
    if (!gate || caller.generation === null) return tools;
    return tools.flatMap((tool) => {
      if (tool.execution === 'sync' || gate.verdict(caller, tool.name).allow) return [tool];
      const shown = gatedDescriptor(tool);
      return shown ? [shown] : [];
    });
  }
}

function interactive(interaction: CallInteraction | undefined, tool: string): CallInteraction {
  if (!interaction)
    throw new TasksError(ErrorCode.InternalError, `tools/call of ${tool} needs a request that can answer input (a gather phase or an inline run)`);
  return interaction;
}

/**
 * A task-required tool as a host without task support sees it with the fallback tools: task-optional (it may call
 * it without `params.task`), and without its `outputSchema` — the call answers with the task's text, and SDK
 * clients check the structured content of every result against an advertised schema.
 */
function asFallbackTool(tool: ToolDescriptor): ToolDescriptor {
  const { outputSchema: _answeredAsText, advertisedSchemas, ...rest } = tool;
  return { ...rest, ...(advertisedSchemas ? { advertisedSchemas: { input: advertisedSchemas.input } } : {}), execution: 'task-optional' };
}

/** A caller whose plan became a task has a generation (`planCall` decides `task` only then). */
function taskCaller(caller: Caller): TaskCaller {
  if (caller.generation === null) throw new TasksError(ErrorCode.InternalError, 'a task plan for a caller without tasks');
  return caller as TaskCaller;
}
