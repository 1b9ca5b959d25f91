import type { Clock } from '../core/clock.js';
import { runtimeFailure, taskNotFound, type RuntimeFailureReason } from '../core/errors.js';
import { newTaskId } from '../core/ids.js';
import { redactTaskId, type Logger } from '../core/logger.js';
import { isTerminal } from '../core/state-machine.js';
import type { TaskEvent, TaskScope, TaskStore } from '../core/store.js';
import type { JsonObject, JsonValue, NewTask, TaskGeneration, TaskRecord } from '../core/task.js';
import type { AnyToolDefinition, ElicitRequest, ElicitResult } from '../core/tool.js';
import { createTaskElicitor, ParkedForInput, waitingMessage } from './elicitation.js';
import { planAnswers } from './input-answers.js';
import { judgeUnrenewedLease } from './lease-verdict.js';
import { TaskEventHub } from './event-hub.js';
import { settleResult, settleThrown, toCallToolResult, type SettledRun } from './outcome.js';
import { toProtocolError } from './protocol-errors.js';
import { StatusWriter } from './status-writer.js';
import { createToolContext } from './tool-context.js';

/** Timing and capacity settings of a {@link TaskRuntime}. All durations in milliseconds. */
export interface RuntimeSettings {
  /** Identifies this process in leases. */
  instanceId: string;
  /** Tools run at once by this process (async slots on the main thread). */
  concurrency: number;
  /** Lease length; a lease is renewed every `leaseMs / 3` while the task is queued or running here. */
  leaseMs: number;
  /** How often lapsed leases are looked for (recovery). */
  recoveryIntervalMs: number;
  /** How often expired tasks are deleted (reads hide them earlier). */
  sweepIntervalMs: number;
  /** How often `task_events` is tailed for other processes' writes. */
  tailIntervalMs: number;
  /** Coalescing window for statusMessage-only writes. */
  statusFlushIntervalMs: number;
  /** Longest single run of a tool; the task then fails with `data.reason: "runtime_limit"`. */
  runtimeLimitMs: number;
  /** Runs per task, first run included, before it fails with `data.reason: "attempts_exhausted"`. */
  maxAttempts: number;
  /** Allowed tool roots, handed to every tool context. */
  roots: readonly string[];
  /** Paths no tool may touch whatever the roots (the server's own state), handed to every tool context with the roots. */
  deniedPaths: readonly string[];
  /** How long a task may wait for input (since its last input activity) before it fails with `input_timeout`. */
  inputTimeoutMs: number;
}

/** The journaled step under which a tool's `gather` value is stored with its task. */
export const GATHERED_STEP = '@gathered';

/** Listener for progress reports of one running task (in this process only; progress is not persisted). */
export type ProgressListener = (done: number, total: number | undefined, message: string) => void;

/** Everything needed to create a task. */
export interface CreateTaskInput {
  tool: AnyToolDefinition;
  ownerKey: string;
  generation: TaskGeneration;
  protocolVersion: string;
  arguments: JsonObject;
  clientCapabilities: JsonObject;
  progressToken: string | number | null;
  /** Effective retention in ms (already clamped by the caller), `null` = unlimited. */
  ttlMs: number | null;
  pollIntervalMs: number;
  /** What the tool's `gather` phase returned, stored with the task (`ctx.gathered`). */
  gathered?: JsonValue;
  /** Called once the task is committed and before its first run starts (e.g. to subscribe to its progress). */
  onCreated?: (record: TaskRecord) => void;
}

/**
 * Why a running tool was aborted. `lease_lost`: another owner holds the task's lease; `settled`: the task reached a
 * terminal status elsewhere (its outcome is already decided).
 */
type AbortReason = 'cancelled' | 'expired' | 'runtime_limit' | 'lease_lost' | 'settled' | 'shutdown' | 'parked';

interface RunningTask {
  controller: AbortController;
  record: TaskRecord;
}

/**
 * Runs tools as durable tasks: creates tasks (committed before the caller answers), runs them in bounded async
 * slots, holds and renews leases, recovers tasks whose lease lapsed (re-running idempotent or step-journaled
 * tools, failing others as `interrupted`), enforces runtime limits and TTLs, and propagates cancellation.
 */
export class TaskRuntime {
  readonly events: TaskEventHub;
  private readonly statusWriter: StatusWriter;
  private readonly tools: ReadonlyMap<string, AnyToolDefinition>;
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly running = new Map<string, RunningTask>();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly unsubscribe: () => void;
  private closed = false;
  /** A heartbeat is renewing or judging leases; ticks meanwhile are skipped, so renewals never pile up on a slow store. */
  private heartbeating = false;
  /** Creates committed or in flight but not yet queued; they count as busy slots for the "queued" message. */
  private creating = 0;
  /** Highest number of tools running at once since start (for tests and metrics). */
  maxInFlight = 0;
  private readonly progressListeners = new Map<string, Set<ProgressListener>>();
  /** Outcome writes of runs that have finished here and are not committed yet, by task id. */
  private readonly outcomeWrites = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: TaskStore,
    tools: readonly AnyToolDefinition[],
    private readonly settings: RuntimeSettings,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    for (const tool of tools) {
      if (tool.elicits && !tool.idempotent && !tool.journaled) {
        throw new Error(`tool ${tool.name} asks for input (elicits: true) but is neither idempotent nor journaled: it is re-run after every answer`);
      }
    }
    this.tools = new Map(tools.map((tool) => [tool.name, tool]));
    this.events = new TaskEventHub(store, logger);
    this.statusWriter = new StatusWriter(store, clock, logger, settings.statusFlushIntervalMs);
    this.unsubscribe = this.events.subscribeAll((event) => this.onEvent(event));
  }

  /** Start background work: event tail, lease heartbeat, recovery (also once right away) and the TTL sweeper. */
  async start(): Promise<void> {
    await this.events.start(this.settings.tailIntervalMs);
    const every = (ms: number, job: () => Promise<unknown>): void => {
      const timer = setInterval(() => void job().catch((error) => this.logger.error({ err: error }, 'runtime job failed')), ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(Math.max(1, Math.floor(this.settings.leaseMs / 3)), () => this.heartbeat());
    every(this.settings.recoveryIntervalMs, () => this.recover());
    every(this.settings.sweepIntervalMs, () => this.sweep());
    await this.recover();
  }

  /** The registered tool called `name`, if any. */
  tool(name: string): AnyToolDefinition | undefined {
    return this.tools.get(name);
  }

  /** Every registered tool, in registration order. */
  listTools(): AnyToolDefinition[] {
    return [...this.tools.values()];
  }

  /**
   * Create a task durably and queue it. Resolves after the commit, so a `tasks/get` sent after the reply finds it
   * (SEP-2663 E14). The status message is "queued" while every slot is busy.
   */
  async createTask(input: CreateTaskInput): Promise<TaskRecord> {
    const now = this.clock.now();
    const busy = this.closed || this.running.size + this.queue.length + this.creating >= this.settings.concurrency;
    const task: NewTask = {
      taskId: newTaskId(),
      ownerKey: input.ownerKey,
      generation: input.generation,
      protocolVersion: input.protocolVersion,
      toolName: input.tool.name,
      arguments: input.arguments,
      clientCapabilities: input.clientCapabilities,
      progressToken: input.progressToken,
      statusMessage: busy ? 'queued' : null,
      createdAt: now,
      ttlMs: input.ttlMs,
      pollIntervalMs: input.pollIntervalMs,
      leaseOwner: this.settings.instanceId,
      leaseMs: this.settings.leaseMs,
      ...(input.gathered === undefined ? {} : { steps: { [GATHERED_STEP]: input.gathered } }),
      // A free slot is reserved (`creating`) until the commit, so the first run starts with the create: one write less.
      startNow: !busy,
    };
    this.creating += 1;
    try {
      const record = await this.store.create(task);
      input.onCreated?.(record);
      if (task.startNow && !this.closed) this.launch(record.taskId, record);
      else this.enqueue(record.taskId);
      return record;
    } finally {
      this.creating -= 1;
    }
  }

  /**
   * Cancel a task (2025-11-25 R41, SEP-2663 E30): a conditional write non-terminal → `cancelled`, then the tool's
   * `ctx.signal` fires (here, or in the process running it, through the event log). Any later outcome is discarded.
   * @returns the cancelled task, or `undefined` when it was already terminal (the caller reads it to tell).
   */
  async cancel(taskId: string, statusMessage: string): Promise<TaskRecord | undefined> {
    this.statusWriter.takePending(taskId);
    const record = await this.store.transition(taskId, {
      to: 'cancelled',
      statusMessage,
      releaseLease: true,
      now: this.clock.now(),
    });
    if (record) this.abortLocal(taskId, 'cancelled');
    return record;
  }

  /**
   * Wait until the task is terminal and return it (v1 `tasks/result`, R24). Woken by the event hub; re-reads the
   * task on every event of that task. Throws the unknown-task error when it disappears or expires meanwhile.
   */
  async waitForTerminal(
    taskId: string,
    scope: Omit<TaskScope, 'now'>,
    signal: AbortSignal,
    onUpdate?: (record: TaskRecord) => Promise<void>,
  ): Promise<TaskRecord> {
    let wake: () => void = () => {};
    const unsubscribe = this.events.subscribeTask(taskId, () => wake());
    try {
      for (;;) {
        const woken = new Promise<void>((resolve) => (wake = resolve));
        const record = await this.store.get(taskId, { ...scope, now: this.clock.now() });
        if (!record) throw taskNotFound();
        if (isTerminal(record.status)) return record;
        await onUpdate?.(record);
        await this.until(woken, signal);
        if (signal.aborted) throw signal.reason ?? new Error('aborted');
      }
    } finally {
      unsubscribe();
    }
  }

  /**
   * Run a tool inline, without a task (sync tools, or clients that cannot take a task). `elicitAll` is how this
   * call may ask the user (MRTR on 2026-07-28, a direct request in a 2025 session), if at all.
   */
  async runInline(
    tool: AnyToolDefinition,
    args: unknown,
    signal: AbortSignal,
    logger: Logger,
    elicitAll?: (requests: readonly ElicitRequest[]) => Promise<ElicitResult[]>,
    gathered?: JsonValue,
    ownerKey?: string,
  ): Promise<JsonObject> {
    const context = createToolContext({
      taskId: null,
      signal,
      roots: this.settings.roots,
      deniedPaths: this.settings.deniedPaths,
      logger,
      // Per-owner tool state only: an inline call journals no steps (it has no task id).
      store: this.store,
      ...(ownerKey === undefined ? {} : { ownerKey }),
      toolName: tool.name,
      elicits: tool.elicits === true,
      ...(elicitAll ? { elicitAll } : {}),
      ...(gathered === undefined ? {} : { gathered }),
    });
    return toCallToolResult(tool, await tool.run(args, context));
  }

  /**
   * Apply answers to a task's outstanding input requests (SEP-2663 `tasks/update`, 2025-11-25 elicitation
   * replies): valid answers are stored durably, invalid ones retire their key and ask again, unknown or settled keys
   * are ignored. When nothing is outstanding any more the task resumes here at once (or in any process, via
   * recovery). The caller has already checked the owner.
   * @returns the keys whose answers were taken (answered or retired).
   */
  async answerInput(taskId: string, responses: Readonly<Record<string, unknown>>): Promise<string[]> {
    const requests = await this.store.listInputRequests(taskId);
    const plan = planAnswers(requests, responses);
    if (plan.answers.length === 0 && plan.retire.length === 0) return [];
    // statusMessage follows what is still outstanding, so it never names a question already answered.
    const settled = new Set([...plan.answers, ...plan.retire].map((entry) => entry.key));
    const stillPending = [...requests.filter((request) => request.state === 'pending' && !settled.has(request.key)), ...plan.add];
    const next = stillPending[0];
    const statusMessage = plan.statusMessage ?? (next ? waitingMessage(next.request) : 'Input received; resuming');
    const { accepted, task } = await this.store.answerInput(taskId, { ...plan, statusMessage, now: this.clock.now() });
    if (task?.status === 'working' && task.leaseOwner === null) this.enqueue(taskId);
    return accepted;
  }

  /**
   * The write of an outcome that a run in this process has already produced and that is not committed yet, if any.
   * A read that finds such a task still `working` can wait for it — at most one group commit — instead of answering
   * a state that is already over (a requestor would otherwise poll again for nothing).
   */
  pendingOutcome(taskId: string): Promise<unknown> | undefined {
    return this.outcomeWrites.get(taskId);
  }

  /** Observe the progress reports of one task while it runs in this process; returns an unsubscribe function. */
  onProgress(taskId: string, listener: ProgressListener): () => void {
    let listeners = this.progressListeners.get(taskId);
    if (!listeners) {
      listeners = new Set();
      this.progressListeners.set(taskId, listeners);
    }
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.progressListeners.get(taskId) === listeners) this.progressListeners.delete(taskId);
    };
  }

  /** Stop background work, abort local runs (their leases are released so a restart recovers them at once). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    this.unsubscribe();
    const held = [...this.running.keys(), ...this.queue];
    for (const taskId of this.running.keys()) this.abortLocal(taskId, 'shutdown');
    this.queue.length = 0;
    this.queued.clear();
    await this.statusWriter.close();
    if (held.length > 0) await this.store.renewLeases(this.settings.instanceId, held, 0).catch(() => []);
    this.events.close();
  }

  private enqueue(taskId: string): void {
    if (this.closed || this.queued.has(taskId) || this.running.has(taskId)) return;
    this.queued.add(taskId);
    this.queue.push(taskId);
    this.pump();
  }

  private pump(): void {
    while (!this.closed && this.running.size < this.settings.concurrency && this.queue.length > 0) {
      const taskId = this.queue.shift() as string;
      this.queued.delete(taskId);
      this.launch(taskId);
    }
  }

  /** Run a task in a slot: `started` when its run was already counted at creation, else after `startAttempt`. */
  private launch(taskId: string, started?: TaskRecord): void {
    const placeholder: RunningTask = { controller: new AbortController(), record: undefined as unknown as TaskRecord };
    this.running.set(taskId, placeholder);
    this.maxInFlight = Math.max(this.maxInFlight, this.running.size);
    void this.execute(taskId, placeholder, started)
      .catch((error) => this.logger.error({ err: error, taskId: redactTaskId(taskId) }, 'task execution failed'))
      .finally(() => this.releaseSlot(taskId, placeholder));
  }

  /** Free `slot` (once; a later run of the same task has a slot of its own) and start queued tasks. */
  private releaseSlot(taskId: string, slot: RunningTask): void {
    if (this.running.get(taskId) === slot) this.running.delete(taskId);
    this.pump();
  }

  private async execute(taskId: string, slot: RunningTask, started?: TaskRecord): Promise<void> {
    const startedAt = this.clock.now();
    const record = started ?? (await this.store.startAttempt(taskId, this.settings.instanceId, this.settings.leaseMs));
    if (!record || slot.controller.signal.aborted) return;
    slot.record = record;
    const tool = this.tools.get(record.toolName);
    if (!tool) {
      await this.failByRuntime(record, 'interrupted', `Tool ${record.toolName} is not registered in this process`);
      return;
    }
    const logger = this.logger.child({ taskId: redactTaskId(taskId), tool: tool.name, attempt: record.attempt });
    const deadlineMs = Math.min(startedAt + this.settings.runtimeLimitMs, record.expiresAt ?? Number.POSITIVE_INFINITY);
    const reasonAtDeadline: AbortReason = record.expiresAt !== null && record.expiresAt <= startedAt + this.settings.runtimeLimitMs ? 'expired' : 'runtime_limit';
    const deadline = setTimeout(() => {
      this.abortLocal(taskId, reasonAtDeadline);
      if (reasonAtDeadline === 'runtime_limit') {
        void this.failByRuntime(record, 'runtime_limit', `Tool ${tool.name} exceeded the runtime limit of ${this.settings.runtimeLimitMs} ms`);
      }
    }, Math.max(0, deadlineMs - startedAt));
    deadline.unref();
    if (record.statusMessage !== null) this.statusWriter.set(taskId, null);
    let settled: SettledRun;
    try {
      const args = tool.inputSchema.parse(record.arguments);
      const gathered = tool.gather ? (await this.store.getStep(taskId, GATHERED_STEP))?.value : undefined;
      const elicitor = createTaskElicitor({
        record,
        store: this.store,
        leaseOwner: this.settings.instanceId,
        now: () => this.clock.now(),
        park: () => slot.controller.abort('parked' satisfies AbortReason),
      });
      const context = createToolContext({
        taskId,
        signal: slot.controller.signal,
        roots: this.settings.roots,
        deniedPaths: this.settings.deniedPaths,
        logger,
        statusWriter: this.statusWriter,
        store: this.store,
        ownerKey: record.ownerKey,
        toolName: tool.name,
        elicits: tool.elicits === true,
        elicitAll: elicitor.elicitAll,
        ...(gathered === undefined ? {} : { gathered }),
        onProgress: (done, total, message) => {
          for (const listener of this.progressListeners.get(taskId) ?? []) listener(done, total, message);
        },
      });
      settled = settleResult(record.generation, toCallToolResult(tool, await tool.run(args, context)));
    } catch (error) {
      if (!slot.controller.signal.aborted && !toProtocolError(error) && !(error instanceof ParkedForInput)) logger.error({ err: error }, 'tool threw');
      settled = settleThrown(record.generation, tool.name, error);
      if (error instanceof ParkedForInput && !slot.controller.signal.aborted) slot.controller.abort('parked' satisfies AbortReason);
    } finally {
      clearTimeout(deadline);
    }
    if (slot.controller.signal.aborted) {
      const reason = slot.controller.signal.reason;
      // A parked run already wrote its input requests; the next run starts when they are answered.
      this.statusWriter.takePending(taskId);
      logger.info({ reason }, reason === 'parked' ? 'task parked for input' : 'tool run aborted; its outcome is discarded');
      return;
    }
    const pending = this.statusWriter.takePending(taskId);
    const write = this.store.transition(taskId, {
      to: settled.status,
      outcome: settled.outcome,
      statusMessage: settled.statusMessage ?? pending,
      leaseOwner: this.settings.instanceId,
      releaseLease: true,
      now: this.clock.now(),
    });
    this.outcomeWrites.set(taskId, write);
    // The tool is done: its slot goes to the next queued task now, whose start then shares this commit.
    this.releaseSlot(taskId, slot);
    let written: TaskRecord | undefined;
    try {
      written = await write;
    } finally {
      if (this.outcomeWrites.get(taskId) === write) this.outcomeWrites.delete(taskId);
    }
    if (!written) logger.info({}, 'task changed meanwhile (cancelled, expired or lease lost); outcome discarded');
  }

  private async failByRuntime(record: TaskRecord, reason: RuntimeFailureReason, message: string): Promise<void> {
    this.statusWriter.takePending(record.taskId);
    await this.store.transition(record.taskId, {
      to: 'failed',
      outcome: { kind: 'error', error: runtimeFailure(reason, message) },
      statusMessage: message,
      releaseLease: true,
      now: this.clock.now(),
    });
  }

  private abortLocal(taskId: string, reason: AbortReason): void {
    const running = this.running.get(taskId);
    if (running && !running.controller.signal.aborted) running.controller.abort(reason);
    if (this.queued.delete(taskId)) this.queue.splice(this.queue.indexOf(taskId), 1);
  }

  private onEvent(event: TaskEvent): void {
    if (event.kind === 'expired') this.abortLocal(event.taskId, 'expired');
    else if (event.kind === 'status' && event.status === 'cancelled') this.abortLocal(event.taskId, 'cancelled');
  }

  /**
   * Renew the leases of every run and queued task of this process. Only the runs that were running when the renewal
   * was sent are judged by its answer, each only while the same run is still in its slot: a run launched meanwhile
   * holds a lease written after that snapshot. A run the renewal missed is judged from its row (see
   * {@link judgeUnrenewedLease}): aborted as `lease_lost` only when another owner holds the lease (issue 9).
   */
  private async heartbeat(): Promise<void> {
    if (this.heartbeating || this.closed) return;
    const slots = new Map(this.running);
    const held = [...slots.keys(), ...this.queue];
    if (held.length === 0) return;
    this.heartbeating = true;
    try {
      const renewed = new Set(await this.store.renewLeases(this.settings.instanceId, held, this.settings.leaseMs));
      for (const [taskId, slot] of slots) {
        if (!renewed.has(taskId)) await this.checkLease(taskId, slot);
      }
    } finally {
      this.heartbeating = false;
    }
  }

  /** Judge one run the renewal missed, from its row; see {@link judgeUnrenewedLease}. */
  private async checkLease(taskId: string, slot: RunningTask): Promise<void> {
    // A run still starting is judged by its own conditional `startAttempt`; a finished or aborted one needs nothing.
    const current = (): boolean => this.running.get(taskId) === slot && slot.record !== undefined && !slot.controller.signal.aborted;
    if (!current()) return;
    const verdict = judgeUnrenewedLease(await this.store.getUnscoped(taskId), this.settings.instanceId);
    if (!current()) return;
    if (verdict.kind === 'retake') {
      await this.store.renewLeases(this.settings.instanceId, [taskId], this.settings.leaseMs);
    } else if (verdict.kind === 'abort') {
      if (verdict.reason === 'lease_lost') {
        this.logger.warn({ taskId: redactTaskId(taskId), leaseOwner: verdict.leaseOwner }, 'another owner holds the lease of a run of this process; aborting it');
      }
      this.abortLocal(taskId, verdict.reason);
    }
  }

  /**
   * Take over tasks whose lease lapsed: re-run what is safe to re-run, fail the rest. A claimed task that runs or
   * waits in this very process only lapsed because this process was busy (issue 9): the claim has just renewed its
   * lease, and the run goes on untouched.
   */
  async recover(): Promise<void> {
    if (this.closed) return;
    const claimed = await this.store.claimLapsed(this.settings.instanceId, this.settings.leaseMs, 100);
    for (const record of claimed) {
      if (this.running.has(record.taskId) || this.queued.has(record.taskId)) continue;
      const tool = this.tools.get(record.toolName);
      const neverStarted = record.attempt === 0;
      const rerunnable = tool !== undefined && (tool.idempotent === true || tool.journaled === true);
      if (tool && (neverStarted || rerunnable) && record.attempt < this.settings.maxAttempts) {
        this.logger.info({ taskId: redactTaskId(record.taskId), attempt: record.attempt }, 'recovering task');
        this.enqueue(record.taskId);
      } else if (tool && rerunnable) {
        await this.failByRuntime(record, 'attempts_exhausted', `Task ran ${record.attempt} times without finishing`);
      } else {
        await this.failByRuntime(record, 'interrupted', `Task was interrupted (server stopped while ${record.toolName} ran) and is not safe to re-run`);
      }
    }
  }

  /** Delete expired tasks (reads already hide them; this frees the rows and records `expired`). */
  async sweep(): Promise<void> {
    await this.store.expireDue(500);
    const now = this.clock.now();
    for (const record of await this.store.listWaitingSince(now - this.settings.inputTimeoutMs, 100)) {
      await this.failByRuntime(record, 'input_timeout', `No answer to the task's input request within ${this.settings.inputTimeoutMs} ms`);
    }
  }

  /** Resolve on the next event of the task (expiry arrives as the sweeper's `expired` event) or on abort. */
  private until(woken: Promise<void>, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      void woken.then(done);
    });
  }
}
