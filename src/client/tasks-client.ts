/**
 * The requestor client (≈620 lines, over the ~500 guide on purpose): one public class whose methods — call, follow,
 * answer, cancel, resume — share one negotiated session per generation, its fallback decisions and its journal; the
 * pieces without that state already live apart (router, follow, listen, input, journal, v1-/v2-tools-call).
 */
import { randomUUID } from 'node:crypto';

import { z } from 'zod';

import {
  CORRELATION_ID_META_KEY,
  ErrorCode,
  IDEMPOTENCY_KEY_META_KEY,
  isValidIdempotencyKey,
  LOCAL_PATH_SCHEMA_KEY,
  TASKS_EXTENSION_ID,
} from '../protocol/constants.js';
import { buildCapabilityManifest, type CapabilityManifest, honoursIdempotencyKeys, taskGenerationOf, toolTaskMode } from '../protocol/manifest.js';
import { resolveBudgets } from './budgets.js';
import { EndpointJournal } from './endpoint-journal.js';
import {
  TaskCancelledError,
  TaskFailedError,
  TaskNotFoundError,
  TaskNotTerminalError,
  TaskOutcomeUnknownError,
  TasksConnectionError,
  TasksProtocolError,
  ToolCallOutcomeUnknownError,
} from './errors.js';
import { checkSyncFallback, runFallback } from './fallback.js';
import { type FollowPlan, followUntilTerminal } from './follow.js';
import { answersFromMap, type ElicitAnswer, ELICITATION_CAPABILITY, elicitationsOf, type InputHandler, serializeHandler } from './input.js';
import { type PendingCallEntry, TaskJournal } from './journal.js';
import { listenToTasks, type TaskSubscription } from './listen.js';
import { JournalObserver, outcomeUnknown } from './observation.js';
import { decideRoute } from './router.js';
import { type ListedTool, McpSession, type SessionRequestOptions } from './session.js';
import type { AnswerReport, AnswerTaskOptions, CallToolOptions, ConnectTasksClientOptions } from './tasks-client-options.js';
import type { CallIdentity, CallToolOutcome, CallToolResult, JsonRpcErrorObject, TaskGeneration, TaskSnapshot, WaitOptions } from './types.js';
import { V1InputRouter } from './v1-input-router.js';
import { answerV1Task, V1InputWait } from './v1-task-input.js';
import { callToolLegacy } from './v1-tools-call.js';
import type { ModernEndpoint } from './v2-http.js';
import { V2InputResponder } from './v2-input.js';
import { callToolModern, type ToolsCallAnswer } from './v2-tools-call.js';
import { abortReason, isTerminalStatus, retryTransient, Waker } from './wait.js';
import { watchSnapshots } from './watch.js';
import {
  CallToolResultSchema,
  fromV1Task,
  fromV2Task,
  toCallToolResult,
  V1GetTaskResultSchema,
  V1ListTasksResultSchema,
  V2DetailedTaskSchema,
} from './wire-schemas.js';

export type { AnswerReport, AnswerTaskOptions, CallToolOptions, ConnectTasksClientOptions };

const DEFAULT_CLIENT_INFO = { name: 'mcp-tasks-client', version: '0.1.0' };
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const DEFAULT_FIRST_QUESTION_MS = 10_000;
const AckSchema = z.looseObject({});

/**
 * Connect to an MCP endpoint and find out which task generation it offers.
 * @throws TasksConnectionError when the endpoint cannot be reached or rejects the credentials (HTTP 401/403).
 * @throws TasksProtocolError when it does not speak the requested protocol.
 */
export async function connectTasksClient(options: ConnectTasksClientOptions): Promise<TasksClient> {
  const url = new URL(options.url);
  const onInput = options.onInput ? serializeHandler(options.onInput) : undefined;
  const router = onInput ? new V1InputRouter(onInput) : undefined;
  const session = await McpSession.open({
    url,
    protocol: options.protocol ?? 'auto',
    ...(options.token !== undefined ? { token: options.token } : {}),
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
    clientInfo: options.clientInfo ?? DEFAULT_CLIENT_INFO,
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    ...(router ? { input: router } : {}),
  });
  const journal = options.journal === false ? undefined : new TaskJournal(options.journal ?? TaskJournal.defaultPath());
  return new TasksClient(session, url, journal, options, onInput && router ? { handler: onInput, router } : undefined);
}

/**
 * A requestor for durable MCP tasks over either generation. Create it with {@link connectTasksClient}.
 * It never sends a `tools/call` twice; everything else it sends is a read or an idempotent cancel.
 */
export class TasksClient {
  /** The endpoint, normalised (`new URL(url).href`). */
  readonly url: string;
  /** The negotiated protocol version, e.g. `2026-07-28` or `2025-11-25`. */
  readonly protocolVersion: string;
  /**
   * `v2` when the 2026-07-28 server advertises `io.modelcontextprotocol/tasks`; `v1` when a 2025-11-25 session
   * has `tasks.requests.tools.call`; `null` when this connection offers no tasks (tools then run inline).
   */
  readonly generation: TaskGeneration | null;
  /** What the server lets this client do with tasks beyond creating and reading them. */
  readonly taskCapabilities: { cancel: boolean; list: boolean };
  /** The journal, unless turned off. */
  readonly journal: TaskJournal | undefined;
  /** The journal as this connection writes and reads it (best effort, this endpoint's entries only). */
  private readonly journaled: EndpointJournal;

  private manifestCache: { epoch: number; manifest: Promise<CapabilityManifest> } | undefined;
  /** The `tools/list` answer the manifest of that session epoch was built from. */
  private toolsCache: { epoch: number; tools: Promise<ListedTool[]> } | undefined;
  private readonly requestTimeoutMs: number;

  /** @internal Use {@link connectTasksClient}. */
  constructor(
    private readonly session: McpSession,
    url: URL,
    journal: TaskJournal | undefined,
    private readonly options: ConnectTasksClientOptions,
    /** The serialized `onInput` and the router of 2025-11-25 questions, when the client answers input. */
    private readonly input?: { handler: InputHandler; router: V1InputRouter },
  ) {
    this.url = url.href;
    this.journal = journal;
    this.protocolVersion = session.protocolVersion;
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const capabilities = session.serverCapabilities;
    const legacyTasks = asObject(capabilities.tasks);
    this.generation = taskGenerationOf(this.protocolVersion, capabilities);
    this.taskCapabilities =
      this.generation === 'v2'
        ? { cancel: true, list: false }
        : {
            cancel: this.generation === 'v1' && asObject(legacyTasks?.cancel) !== undefined,
            list: this.generation === 'v1' && asObject(legacyTasks?.list) !== undefined,
          };
    this.journaled = new EndpointJournal(journal, { url: this.url, protocolVersion: this.protocolVersion, generation: this.generation });
  }

  /**
   * The {@link CapabilityManifest} of this connection: built once per session (one `tools/list`), again after a
   * lost 2025-11-25 session was re-initialised or {@link refreshManifest} repeated `server/discover`. Never shared
   * between connections, whatever the server's name or version.
   * @throws TasksConnectionError / TasksProtocolError when `tools/list` fails (the next call tries again).
   */
  manifest(): Promise<CapabilityManifest> {
    const epoch = this.session.epoch;
    if (this.manifestCache?.epoch !== epoch) {
      const listed = this.session.listTools();
      this.toolsCache = { epoch, tools: listed };
      const manifest = listed.then((tools) =>
        buildCapabilityManifest({
          protocolVersion: this.session.protocolVersion,
          capabilities: this.session.serverCapabilities,
          serverInfo: this.session.serverInfo,
          session:
            this.session.generation === 'v2'
              ? { kind: 'discover', at: new Date(this.session.establishedAt).toISOString() }
              : { kind: 'initialize', sessionId: this.session.sessionId ?? null, at: new Date(this.session.establishedAt).toISOString() },
          tools,
        }),
      );
      manifest.catch(() => {
        if (this.manifestCache?.manifest === manifest) this.manifestCache = undefined;
      });
      this.manifestCache = { epoch, manifest };
    }
    return this.manifestCache.manifest;
  }

  /**
   * The top-level arguments `tool` declares as paths on the requestor's machine (`"x-mcp-tasks-local-path": true`
   * on the property in its `inputSchema`), from the `tools/list` of this session; `[]` for a tool not listed.
   * @throws TasksConnectionError / TasksProtocolError when `tools/list` fails.
   */
  async localPathArguments(tool: string): Promise<string[]> {
    await this.manifest();
    const listed = (await this.toolsCache?.tools)?.find((candidate) => candidate.name === tool);
    return Object.entries(listed?.inputSchema?.properties ?? {})
      .filter(([, property]) => typeof property === 'object' && property !== null && (property as Record<string, unknown>)[LOCAL_PATH_SCHEMA_KEY] === true)
      .map(([name]) => name);
  }

  /**
   * Build the manifest afresh: on 2026-07-28 after a new `server/discover`, on 2025-11-25 from a new `tools/list`
   * in the same session (its capabilities cannot change).
   * @throws TasksProtocolError when the server now offers another task generation (connect again).
   */
  async refreshManifest(): Promise<CapabilityManifest> {
    await this.session.rediscover();
    this.manifestCache = undefined;
    const manifest = await this.manifest();
    if (manifest.generation !== this.generation)
      throw new TasksProtocolError(`${this.url} now offers tasks ${manifest.generation ?? 'none'} instead of ${this.generation ?? 'none'}; connect again`);
    return manifest;
  }

  /**
   * Call a tool. With a `task` policy the router compares the call's policy and needs with the
   * {@link CapabilityManifest} first and, when they cannot be met, runs the chosen fallback without sending
   * anything (`'reject'` → {@link CapabilityMissingError}). A task call sends v1 `task: {ttl}` (tool `optional` or
   * `required`) or declares the v2 extension (the server decides; an inline answer is then simply the result).
   * Every call carries an idempotency key and a correlation id in `_meta`; both are journaled with the task, and
   * the call itself is journaled while its answer is outstanding. Sent once — resent once, with the same key, only
   * when its answer was lost and the server declares that it honours idempotency keys.
   * @throws CapabilityMissingError when refused by policy (nothing sent).
   * @throws TasksProtocolError with the server's code when it refused the call (e.g. `-32602` unknown tool).
   * @throws TasksConnectionError when the call certainly never reached the server.
   * @throws ToolCallOutcomeUnknownError when it may have reached the server but no answer arrived.
   * @throws RangeError for a bad `ttlMs`, `maxSyncMs` or idempotency key.
   */
  async callTool(name: string, args: Record<string, unknown> = {}, options: CallToolOptions = {}): Promise<CallToolOutcome> {
    if (options.ttlMs !== undefined && !(Number.isInteger(options.ttlMs) && options.ttlMs >= 0))
      throw new RangeError(`ttlMs must be a non-negative integer (got ${options.ttlMs})`);
    if (options.idempotencyKey !== undefined && !isValidIdempotencyKey(options.idempotencyKey))
      throw new RangeError('idempotencyKey must be 1–255 printable ASCII characters');
    if (options.signal?.aborted) throw abortReason(options.signal); // not sent at all: nothing can have started
    const identity: CallIdentity = { idempotencyKey: options.idempotencyKey ?? randomUUID(), correlationId: randomUUID() };
    let timeoutMs = resolveBudgets(options.budgets).createMs ?? options.timeoutMs ?? this.requestTimeoutMs;
    const manifest = this.generation === 'v1' || options.task !== undefined ? await this.manifest() : undefined;
    let asTask = this.generation !== null && (manifest === undefined || toolTaskMode(manifest, name) !== 'forbidden');
    if (options.task !== undefined && manifest) {
      const needs = options.needs ?? {};
      const decision = decideRoute(manifest, name, options.task, needs, this.input !== undefined);
      if (decision.route === 'fallback') {
        const fallback = options.fallback ?? 'reject';
        const context = { ...identity, url: this.url, manifest, tool: name, args, policy: options.task, needs, missing: decision.missing };
        if (fallback !== 'sync') return runFallback(fallback, context);
        timeoutMs = checkSyncFallback(context, options.maxSyncMs);
      }
      asTask = decision.route === 'task';
    }
    const params: Record<string, unknown> = { name, arguments: args };
    if (asTask && this.generation === 'v1') params.task = options.ttlMs === undefined ? {} : { ttl: options.ttlMs };
    const answer = await this.sendCall(params, identity, asTask, timeoutMs, options.signal);
    if (answer.kind === 'result') return { kind: 'result', result: answer.result, route: asTask ? 'task' : 'sync', ...identity };
    return this.created(answer, name, identity);
  }

  /**
   * Take up a call that a crashed process sent without receiving its answer (a {@link PendingCallEntry} of the
   * journal): when this server declares that it honours idempotency keys, send it once more with the same key —
   * the server answers with the task it created the first time, or runs it now if it never arrived. Otherwise
   * nothing is sent and the call's outcome is reported unknown. Either way the pending entry is settled.
   * @throws ToolCallOutcomeUnknownError when the server does not honour keys, or the resend's answer is lost too.
   * @throws TaskNotFoundError when the entry belongs to another endpoint; errors of the resent call.
   */
  async resumeCall(pending: PendingCallEntry): Promise<CallToolOutcome> {
    if (pending.url !== this.url || pending.protocolVersion !== this.protocolVersion) {
      throw new TasksProtocolError(
        `the call of ${pending.tool} (correlation id ${pending.correlationId}) was sent to ${pending.url} over MCP ${pending.protocolVersion}; this client is connected to ${this.url} over MCP ${this.protocolVersion}`,
      );
    }
    const identity: CallIdentity = { idempotencyKey: pending.idempotencyKey, correlationId: pending.correlationId };
    if (!(pending.idempotencyHonoured && honoursIdempotencyKeys(this.generation, this.session.serverCapabilities))) {
      await this.journaled.removePending(pending.correlationId);
      throw new ToolCallOutcomeUnknownError(
        `tools/call ${pending.tool} was sent to ${pending.url} at ${pending.sentAt} (idempotency key ${pending.idempotencyKey}, correlation id ${pending.correlationId}) and its answer never arrived. ` +
          'The server does not declare that it honours idempotency keys, so it was not resent: check on the server whether it ran.',
        pending.tool,
      );
    }
    const params: Record<string, unknown> = { name: pending.tool, arguments: pending.arguments, ...(pending.task ? { task: pending.task } : {}) };
    const answer = await this.sendCall(params, identity, pending.task !== undefined || this.generation === 'v2', this.requestTimeoutMs, undefined, false);
    if (answer.kind === 'result') return { kind: 'result', result: answer.result, route: 'task', ...identity };
    return this.created(answer, pending.tool, identity);
  }

  /**
   * Send one `tools/call` (with the identity in `_meta`), journaled as pending while its answer is outstanding.
   * A lost answer is resent once with the same key when the server honours keys (and `retry` allows it).
   */
  private async sendCall(
    params: Record<string, unknown>,
    identity: CallIdentity,
    asTask: boolean,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    retry = true,
  ): Promise<ToolsCallAnswer> {
    const name = params.name as string;
    const args = params.arguments as Record<string, unknown>;
    const honoured = honoursIdempotencyKeys(this.generation, this.session.serverCapabilities);
    const meta = { [IDEMPOTENCY_KEY_META_KEY]: identity.idempotencyKey, [CORRELATION_ID_META_KEY]: identity.correlationId };
    const pending: PendingCallEntry = {
      ...identity,
      url: this.url,
      generation: this.generation,
      protocolVersion: this.protocolVersion,
      tool: name,
      arguments: args,
      ...(params.task ? { task: params.task as Record<string, unknown> } : {}),
      sentAt: new Date().toISOString(),
      idempotencyHonoured: honoured,
    };
    await this.journaled.addPending(pending);
    const send = (): Promise<ToolsCallAnswer> =>
      this.session.generation === 'v2'
        ? callToolModern(name, args, {
            ...this.modernEndpoint(asTask),
            declareTasks: asTask && this.generation === 'v2',
            ...(this.input ? { onInput: this.input.handler } : {}),
            ...(signal ? { signal } : {}),
            timeoutMs,
            meta,
          })
        : callToolLegacy(
            this.session,
            this.input?.router,
            { ...params, _meta: meta },
            { timeoutMs, signal, url: this.url, listable: this.taskCapabilities.list },
          );
    let answer: ToolsCallAnswer;
    try {
      try {
        answer = await send();
      } catch (error) {
        if (!(retry && honoured && error instanceof ToolCallOutcomeUnknownError && !signal?.aborted)) throw error;
        // The server promised: same owner + key + tool + arguments → the existing task, never a second run.
        answer = await send().catch((resent: unknown) => {
          // "Key already used" without a task (an inline call, its result not kept): the outcome stays unknown.
          throw resent instanceof TasksProtocolError && /^Idempotency key .* already used/.test(resent.message.replace(/^tools\/call[^:]*: /, ''))
            ? error
            : resent;
        });
      }
    } catch (error) {
      // Proof that nothing started (refused, answered with an error): no evidence worth keeping.
      if (!(error instanceof ToolCallOutcomeUnknownError)) await this.journaled.removePending(identity.correlationId);
      throw error;
    }
    // A task settles the pending entry in the same write that records the task; an inline result needs none.
    if (answer.kind === 'result') await this.journaled.removePending(identity.correlationId);
    return answer;
  }

  /** Journal a created task (settling its pending call) and describe it. */
  private async created(answer: Extract<ToolsCallAnswer, { kind: 'task' }>, tool: string, identity: CallIdentity): Promise<CallToolOutcome> {
    const generation = this.generation as TaskGeneration;
    const journaled = await this.journaled.record(answer.task, tool, generation, identity);
    return {
      kind: 'task',
      taskId: answer.task.taskId,
      generation,
      task: answer.task,
      journaled,
      ...identity,
      ...(answer.immediateResponse === undefined ? {} : { immediateResponse: answer.immediateResponse }),
    };
  }

  /**
   * The task's current state (`tasks/get`).
   * @throws TaskNotFoundError (`-32602`) for an unknown or expired task; it is dropped from the journal.
   * @throws TasksProtocolError `-32601` when this connection has no tasks.
   */
  async getTask(taskId: string, options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<TaskSnapshot> {
    const generation = this.requireTasks('tasks/get');
    const request: SessionRequestOptions = { ...options, resendOnLostSession: true };
    const snapshot = await this.forTask(taskId, async () =>
      generation === 'v1'
        ? fromV1Task(await this.session.request('tasks/get', { taskId }, V1GetTaskResultSchema, request))
        : fromV2Task(await this.session.request('tasks/get', { taskId }, V2DetailedTaskSchema, request)),
    );
    if (snapshot.taskId !== taskId) throw new TasksProtocolError(`tasks/get ${taskId}: the server answered for task ${snapshot.taskId}`);
    return snapshot;
  }

  /**
   * Follow the task until it is terminal and return the terminal snapshot: by polling `tasks/get` at the server's
   * `pollInterval(Ms)` (default 1 s) ±20 % jitter, backing off on transient errors, never past the deadline — or,
   * with `notifications` on a v2 connection, through `subscriptions/listen` while the server accepts it.
   * With `onInput` the task's questions are answered on the way: v2 `inputRequests` (each key once, E22) with
   * `tasks/update`; v1 by holding `tasks/result` open while the task needs input (R29).
   * @throws TaskTimeoutError at the deadline — the task keeps running; wait again to resume.
   * @throws TaskNotFoundError when the task is unknown or expired; the signal's reason when aborted; whatever
   *   `onInput` or `onUpdate` throw.
   */
  async waitForTask(taskId: string, options: WaitOptions = {}): Promise<TaskSnapshot> {
    const generation = this.requireTasks('tasks/get');
    const entry = await this.journaled.own(taskId);
    const observer = new JournalObserver(this.journal, entry);
    const plan: FollowPlan = {
      poll: (budget) => this.getTask(taskId, budget),
      waker: new Waker(),
      hooks: {
        ...(entry?.lastStatus ? { known: entry.lastStatus } : {}),
        ...(entry?.nextPollAt ? { notBefore: Date.parse(entry.nextPollAt) } : {}),
      },
    };
    if (options.notifications && generation === 'v2') plan.subscribe = (signal) => this.subscribe([taskId], { signal });
    let v1Input: V1InputWait | undefined;
    if (this.input && generation === 'v2') {
      const responder = new V2InputResponder(taskId, this.input.handler, (responses) => this.sendInputResponses(taskId, responses));
      plan.react = (snapshot, signal) => responder.react(snapshot, signal);
    } else if (this.input) {
      v1Input = new V1InputWait(this.session, this.input.router, taskId, this.input.handler, plan.waker as Waker);
      plan.react = v1Input.react;
    }
    let last: TaskSnapshot | undefined;
    const onUpdate = (snapshot: TaskSnapshot): void => {
      last = snapshot;
      observer.observe(snapshot);
      options.onUpdate?.(snapshot);
    };
    try {
      return await followUntilTerminal(taskId, plan, { ...options, onUpdate, requestTimeoutMs: this.requestTimeoutMs });
    } catch (error) {
      throw outcomeUnknown(taskId, error, last, entry?.lastStatus);
    } finally {
      v1Input?.close();
      await observer.flush();
    }
  }

  /**
   * The task's snapshots as they change, until it is terminal (the terminal one included): pushed through
   * `subscriptions/listen` when the server accepts it, else polled. Breaking out of the loop stops observing.
   * Questions are answered on the way as in {@link waitForTask}.
   * @throws as {@link waitForTask} (TaskTimeoutError only with a deadline).
   */
  watch(taskId: string, options: Omit<WaitOptions, 'notifications'> = {}): AsyncGenerator<TaskSnapshot> {
    return watchSnapshots((waitOptions) => this.waitForTask(taskId, { ...waitOptions, notifications: true }), options);
  }

  /**
   * Subscribe to pushed snapshots of tasks (2026-07-28 `subscriptions/listen` with `notifications.taskIds`). The
   * server agrees only to the caller's own tasks (`taskIds` of the result); iteration ends when all of them are
   * terminal, the server ends the stream, or on `close()`.
   * @throws TasksProtocolError `-32601` on a connection without v2 tasks; the server's code when it refuses.
   * @throws TasksConnectionError when the server cannot be reached.
   */
  async subscribe(taskIds: readonly string[], options: { signal?: AbortSignal } = {}): Promise<TaskSubscription> {
    if (this.generation !== 'v2')
      throw new TasksProtocolError(
        `subscriptions/listen: task notifications need the 2026-07-28 Tasks Extension; ${this.url} offers ${this.generation ?? 'no tasks'} here`,
        ErrorCode.MethodNotFound,
      );
    return listenToTasks(this.modernEndpoint(), taskIds, options.signal);
  }

  /**
   * Answer a task's outstanding questions now — from another process, or after the client that created the task
   * went away — and return without waiting for the task to end. `answers` maps keys to answers (other keys are left
   * alone) or is a handler; by default the client's `onInput`.
   * v2: one `tasks/get`, then one `tasks/update` with the answers given (only outstanding keys, E24).
   * v1: `tasks/result` is opened and the questions the server sends on it are answered; it is closed again once
   * the handler is done with them and the task left `input_required` or no further question came for a second.
   * @throws TasksProtocolError on v1 when this client was connected without `onInput` (the session must declare
   *   elicitation to receive questions); TaskNotFoundError for an unknown task; what the handler throws.
   */
  async answerTask(taskId: string, answers?: Readonly<Record<string, ElicitAnswer>> | InputHandler, options: AnswerTaskOptions = {}): Promise<AnswerReport> {
    const generation = this.requireTasks('tasks/update');
    const given = answers ?? this.input?.handler;
    if (!given) throw new TypeError('answerTask needs answers, or a client connected with onInput');
    const handler = typeof given === 'function' ? given : answersFromMap(given);
    const snapshot = await this.getTask(taskId, options.signal ? { signal: options.signal } : {});
    const report: AnswerReport = { taskId, status: snapshot.status, asked: [], answered: [], left: [] };
    if (snapshot.status !== 'input_required') return report;
    const signal = options.signal ?? new AbortController().signal;
    if (generation === 'v2') {
      const responder = new V2InputResponder(taskId, handler, (responses) => this.sendInputResponses(taskId, responses));
      await responder.react(snapshot, signal);
      return { ...report, asked: elicitationsOf(snapshot.inputRequests ?? {}, taskId), answered: responder.answered, left: responder.left };
    }
    if (!this.input) throw new TasksProtocolError(`${this.url}: answering a 2025-11-25 task needs a session that declares elicitation; connect with onInput`);
    const questions = await answerV1Task(this.session, this.input.router, taskId, handler, () => this.getTask(taskId), {
      signal,
      firstQuestionMs: options.firstQuestionTimeoutMs ?? DEFAULT_FIRST_QUESTION_MS,
    });
    return { ...report, asked: questions.arrived, answered: questions.answered, left: questions.left };
  }

  /**
   * The outcome of a terminal task: its `CallToolResult` (which may have `isError: true` — a tool error), fetched
   * with v1 `tasks/result` or taken from the v2 snapshot. Delivery removes the task from the journal.
   * @throws TaskFailedError for a JSON-RPC error outcome; TaskCancelledError for a cancelled task.
   * @throws TaskNotTerminalError when the task is still running (call {@link waitForTask} first).
   */
  async getResult(taskId: string): Promise<CallToolResult> {
    return this.deliver(await this.getTask(taskId));
  }

  /**
   * Wait for a task — created by this client, by another process, or before a crash — and return its result
   * ({@link waitForTask} then {@link getResult}). A journaled task must be resumed on the connection that created it.
   * @throws TaskNotFoundError also when the journal places the task at another endpoint or generation.
   */
  async resume(taskId: string, options: WaitOptions = {}): Promise<CallToolResult> {
    const entry = await this.journaled.any(taskId);
    if (entry && !this.journaled.owns(entry)) {
      throw new TaskNotFoundError(
        taskId,
        `Task ${taskId} was created at ${entry.url} over tasks ${entry.generation} (MCP ${entry.protocolVersion}); ` +
          `this client is connected to ${this.url} over ${this.generation ?? 'no tasks'} (MCP ${this.protocolVersion})`,
      );
    }
    return this.deliver(await this.waitForTask(taskId, options), options);
  }

  /**
   * Ask the server to cancel (v1 needs `tasks.cancel`). v1 answers with the task, now `cancelled` — or, when it
   * had already ended, its terminal state; v2 only acknowledges (`undefined`), the task ends eventually (E31).
   * The task is dropped from the journal. `tasks/cancel` is idempotent, so a request whose answer was lost is sent
   * again through transient failures, within the reconciliation budget. The task may still end `completed`: follow
   * it with {@link waitForTask} to learn the final outcome.
   * @throws TaskNotFoundError for an unknown task; TasksProtocolError `-32601` when cancelling is not offered.
   * @throws TasksConnectionError when the server stayed unreachable for the whole reconciliation budget.
   */
  async cancelTask(taskId: string, options: Pick<WaitOptions, 'budgets' | 'onConnection' | 'signal'> = {}): Promise<TaskSnapshot | undefined> {
    const generation = this.requireTasks('tasks/cancel');
    if (!this.taskCapabilities.cancel)
      throw new TasksProtocolError(`${this.url} does not offer tasks/cancel (no tasks.cancel capability)`, ErrorCode.MethodNotFound);
    const request: SessionRequestOptions = { resendOnLostSession: true, ...(options.signal ? { signal: options.signal } : {}) };
    const retrying = <T>(send: () => Promise<T>): Promise<T> =>
      retryTransient(taskId, send, {
        budgetMs: resolveBudgets(options.budgets).reconcileMs,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onConnection ? { onConnection: options.onConnection } : {}),
      });
    let snapshot: TaskSnapshot | undefined;
    if (generation === 'v2') {
      await this.forTask(taskId, () => retrying(() => this.session.request('tasks/cancel', { taskId }, AckSchema, request)));
    } else {
      try {
        snapshot = fromV1Task(await retrying(() => this.session.request('tasks/cancel', { taskId }, V1GetTaskResultSchema, request)));
      } catch (error) {
        // R40: cancelling a terminal task is -32602, as is an unknown one; tasks/get tells them apart.
        if (!(error instanceof TasksProtocolError && error.code === ErrorCode.InvalidParams)) throw error;
        snapshot = await this.getTask(taskId);
        if (!isTerminalStatus(snapshot.status)) throw error;
      }
    }
    await this.journaled.forget(taskId);
    return snapshot;
  }

  /**
   * One page of this requestor's tasks (v1 `tasks/list`; only when the server declares `tasks.list`).
   * @throws TasksProtocolError `-32601` when listing is not offered (always on v2, which has no `tasks/list`).
   */
  async listTasks(cursor?: string): Promise<{ tasks: TaskSnapshot[]; nextCursor?: string }> {
    this.requireTasks('tasks/list');
    if (!this.taskCapabilities.list) throw new TasksProtocolError(`${this.url} does not offer tasks/list (no tasks.list capability)`, ErrorCode.MethodNotFound);
    const page = await this.session.request('tasks/list', cursor === undefined ? {} : { cursor }, V1ListTasksResultSchema, { resendOnLostSession: true });
    return { tasks: page.tasks.map(fromV1Task), ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }) };
  }

  /** Close the connection. Tasks keep running on the server. */
  async close(): Promise<void> {
    await this.session.close();
  }

  /** `tasks/update` with answers (v2); an unknown task becomes TaskNotFoundError. */
  private async sendInputResponses(taskId: string, responses: Record<string, ElicitAnswer>): Promise<void> {
    await this.forTask(taskId, () => this.session.request('tasks/update', { taskId, inputResponses: responses }, AckSchema, { resendOnLostSession: true }));
  }

  /** Where and as whom raw 2026-07-28 requests go, with this client's capabilities (the extension unless `declareTasks` is false). */
  private modernEndpoint(declareTasks = true): ModernEndpoint {
    return {
      url: new URL(this.url),
      fetch: this.options.fetch ?? fetch,
      ...(this.options.token !== undefined ? { token: this.options.token } : {}),
      ...(this.options.headers ? { headers: this.options.headers } : {}),
      clientInfo: this.options.clientInfo ?? DEFAULT_CLIENT_INFO,
      capabilities: {
        ...(this.generation === 'v2' && declareTasks ? { extensions: { [TASKS_EXTENSION_ID]: {} } } : {}),
        ...(this.input ? { elicitation: ELICITATION_CAPABILITY } : {}),
      },
    };
  }

  private async deliver(snapshot: TaskSnapshot, options: Pick<WaitOptions, 'budgets' | 'onConnection' | 'signal'> = {}): Promise<CallToolResult> {
    const { taskId } = snapshot;
    if (!isTerminalStatus(snapshot.status)) throw new TaskNotTerminalError(taskId, snapshot);
    if (this.generation === 'v1' && snapshot.status !== 'cancelled') return this.v1Payload(snapshot, options);
    await this.journaled.forget(taskId);
    if (snapshot.status === 'cancelled') throw new TaskCancelledError(taskId, snapshot);
    if (snapshot.status === 'failed') throw new TaskFailedError(taskId, snapshot.error as JsonRpcErrorObject, snapshot);
    return snapshot.result as CallToolResult;
  }

  /**
   * v1 `tasks/result` for a terminal task: its result, or its JSON-RPC error replayed (R25). Transient failures are
   * retried within the result budget; after that the outcome is unknown (the task ended, its result was not read).
   */
  private async v1Payload(snapshot: TaskSnapshot, options: Pick<WaitOptions, 'budgets' | 'onConnection' | 'signal'>): Promise<CallToolResult> {
    const { taskId } = snapshot;
    let result: CallToolResult;
    try {
      const read = () =>
        this.session.request('tasks/result', { taskId }, CallToolResultSchema, {
          resendOnLostSession: true,
          ...(options.signal ? { signal: options.signal } : {}),
        });
      result = toCallToolResult(
        await retryTransient(taskId, read, {
          budgetMs: resolveBudgets(options.budgets).resultMs,
          ...(options.signal ? { signal: options.signal } : {}),
          ...(options.onConnection ? { onConnection: options.onConnection } : {}),
          ...(snapshot.pollIntervalMs === undefined ? {} : { intervalMs: snapshot.pollIntervalMs }),
        }),
      );
    } catch (error) {
      if (error instanceof TasksConnectionError && error.retryable)
        throw new TaskOutcomeUnknownError(taskId, 'result_unreachable', snapshot.status, snapshot, { cause: error });
      if (!(error instanceof TasksProtocolError && error.code !== null)) throw error;
      if (snapshot.status === 'failed') {
        await this.journaled.forget(taskId);
        const message = error.cause instanceof Error ? error.cause.message : error.message;
        throw new TaskFailedError(taskId, { code: error.code, message, ...(error.data === undefined ? {} : { data: error.data }) }, snapshot);
      }
      if (error.code !== ErrorCode.InvalidParams) throw error;
      // A completed task whose result cannot be read any more has expired in between.
      await this.journaled.forget(taskId);
      throw new TaskNotFoundError(taskId, undefined, { cause: error });
    }
    await this.journaled.forget(taskId);
    return result;
  }

  private requireTasks(method: string): TaskGeneration {
    if (this.generation) return this.generation;
    throw new TasksProtocolError(`${method}: ${this.url} offers no tasks on this connection (MCP ${this.protocolVersion})`, ErrorCode.MethodNotFound);
  }

  /** Run a task request; a `-32602` becomes {@link TaskNotFoundError} and drops the task from the journal. */
  private async forTask<T>(taskId: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      if (error instanceof TasksProtocolError && error.code === ErrorCode.InvalidParams) {
        await this.journaled.forget(taskId);
        throw new TaskNotFoundError(taskId, undefined, { cause: error });
      }
      throw error;
    }
  }
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
