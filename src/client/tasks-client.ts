/**
 * The requestor client: the one public class whose methods — call, follow, answer, cancel, resume — share one
 * negotiated session (requestor-link.ts), its manifest (manifest-cache.ts) and its journal. What each method does
 * beyond choosing and checking lives beside it: the journaled `tools/call` (tools-call.ts), reading a terminal
 * task's outcome (result-delivery.ts), routing and fallbacks, following, listening, input and the journal itself.
 */
import { randomUUID } from 'node:crypto';
import type { Writable } from 'node:stream';

import { z } from 'zod';

import { ErrorCode, isValidIdempotencyKey } from '../protocol/constants.js';
import { type CapabilityManifest, honoursIdempotencyKeys, toolTaskMode } from '../protocol/manifest.js';
import { resolveBudgets } from './budgets.js';
import type { EndpointJournal } from './endpoint-journal.js';
import { TaskNotFoundError, TasksProtocolError, ToolCallOutcomeUnknownError } from './errors.js';
import { checkSyncFallback, runFallback } from './fallback.js';
import { type FollowPlan, followUntilTerminal } from './follow.js';
import { answersFromMap, type ElicitAnswer, elicitationsOf, type InputHandler, serializeHandler } from './input.js';
import { type PendingCallEntry, TaskJournal } from './journal.js';
import { listenToTasks, type TaskSubscription } from './listen.js';
import { ManifestCache } from './manifest-cache.js';
import { JournalObserver, outcomeUnknown } from './observation.js';
import { type ClientInput, DEFAULT_CLIENT_INFO, modernEndpointOf, openRequestorLink, type RequestorLink } from './requestor-link.js';
import { deliverResult } from './result-delivery.js';
import { readResultResource, readResultResourceTo, type ResultReadOptions, type ResultWritten } from './result-resource.js';
import { decideRoute } from './router.js';
import { McpSession, type SessionRequestOptions } from './session.js';
import type { AnswerReport, AnswerTaskOptions, CallToolOptions, ConnectTasksClientOptions } from './tasks-client-options.js';
import { createdOutcome, keyAlreadyUsed, sendToolsCall } from './tools-call.js';
import type { CallIdentity, CallToolOutcome, CallToolResult, TaskGeneration, TaskSnapshot, WaitOptions } from './types.js';
import { V1InputRouter } from './v1-input-router.js';
import { answerV1Task, V1InputWait } from './v1-task-input.js';
import { V2InputResponder } from './v2-input.js';
import { abortReason, isTerminalStatus, retryTransient, Waker } from './wait.js';
import { watchSnapshots } from './watch.js';
import { fromV1Task, fromV2Task, V1GetTaskResultSchema, V1ListTasksResultSchema, V2DetailedTaskSchema } from './wire-schemas.js';

export type { AnswerReport, AnswerTaskOptions, CallToolOptions, ConnectTasksClientOptions };

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

  /** This connection as the journaled call and the result reader see it. */
  private readonly link: RequestorLink;
  private readonly manifests: ManifestCache;
  private readonly requestTimeoutMs: number;

  /** @internal Use {@link connectTasksClient}. */
  constructor(
    private readonly session: McpSession,
    url: URL,
    journal: TaskJournal | undefined,
    private readonly options: ConnectTasksClientOptions,
    /** The serialized `onInput` and the router of 2025-11-25 questions, when the client answers input. */
    private readonly input?: ClientInput,
  ) {
    this.link = openRequestorLink(session, url, journal, options, input);
    this.url = this.link.url;
    this.journal = journal;
    this.protocolVersion = this.link.protocolVersion;
    this.generation = this.link.generation;
    this.taskCapabilities = this.link.taskCapabilities;
    this.journaled = this.link.journaled;
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.manifests = new ManifestCache(session);
  }

  /**
   * The {@link CapabilityManifest} of this connection: built once per session (one `tools/list`), again after a
   * lost 2025-11-25 session was re-initialised or {@link refreshManifest} repeated `server/discover`. Never shared
   * between connections, whatever the server's name or version.
   * @throws TasksConnectionError / TasksProtocolError when `tools/list` fails (the next call tries again).
   */
  manifest(): Promise<CapabilityManifest> {
    return this.manifests.manifest();
  }

  /**
   * The top-level arguments `tool` declares as paths on the requestor's machine (`"x-mcp-tasks-local-path": true`
   * on the property in its `inputSchema`), from the `tools/list` of this session; `[]` for a tool not listed.
   * @throws TasksConnectionError / TasksProtocolError when `tools/list` fails.
   */
  localPathArguments(tool: string): Promise<string[]> {
    return this.manifests.localPathArguments(tool);
  }

  /**
   * Build the manifest afresh: on 2026-07-28 after a new `server/discover`, on 2025-11-25 from a new `tools/list`
   * in the same session (its capabilities cannot change).
   * @throws TasksProtocolError when the server now offers another task generation (connect again).
   */
  async refreshManifest(): Promise<CapabilityManifest> {
    await this.session.rediscover();
    this.manifests.invalidate();
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
   * @throws ToolCallFailedError (a TasksProtocolError) with the server's code when it answered the call with a
   *   JSON-RPC error: the call is over and failed (e.g. `-32602` unknown tool, nothing ran; `-32603` "Internal error in
   *   tool …" of a `sync` tool, which ran); TasksProtocolError for other refusals and invalid answers.
   * @throws TasksConnectionError when the call certainly never reached the server.
   * @throws ToolCallOutcomeUnknownError when it may have reached the server but no answer arrived, the server failed
   *   (HTTP 5xx), or it answered that its task store failed (`data.reason` `store_unavailable` / `store_failed`).
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
    const answer = await sendToolsCall(this.link, params, identity, asTask, timeoutMs, options.signal);
    if (answer.kind === 'result') return { kind: 'result', result: answer.result, route: asTask ? 'task' : 'sync', ...identity };
    return createdOutcome(this.link, answer, name, identity);
  }

  /**
   * Take up a call that a crashed process sent without receiving its answer (a {@link PendingCallEntry} of the
   * journal): when this server declares that it honours idempotency keys, send it once more with the same key —
   * the server answers with the task it created the first time, or runs it now if it never arrived. Otherwise
   * nothing is sent and the call's outcome is reported unknown. Either way the pending entry is settled.
   * @throws ToolCallOutcomeUnknownError when the server does not honour keys, the resend's answer is lost too, or the
   *   key is used by a first send the server answered inline (it ran; its result was not kept).
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
    const asTask = pending.task !== undefined || this.generation === 'v2';
    const answer = await sendToolsCall(this.link, params, identity, asTask, this.requestTimeoutMs, undefined, false, true).catch((error: unknown) => {
      // The key is used up by a call whose result the server did not keep (answered inline): the first send ran.
      if (!keyAlreadyUsed(error)) throw error;
      throw new ToolCallOutcomeUnknownError(
        `tools/call ${pending.tool} sent to ${pending.url} at ${pending.sentAt} (idempotency key ${pending.idempotencyKey}, correlation id ${pending.correlationId}) reached the server, which has its key but no result to give: it answered the call inline without keeping the result, or the task it created has expired or been purged (${(error as Error).message}). It was not run again; check its effect on the server before calling again.`,
        pending.tool,
        { cause: error },
      );
    });
    if (answer.kind === 'result') return { kind: 'result', result: answer.result, route: 'task', ...identity };
    return createdOutcome(this.link, answer, pending.tool, identity);
  }

  /**
   * The task's current state (`tasks/get`). A journaled task that is not terminal gets this observation recorded (its
   * status, attempt and "last seen" time), as a wait records its own, so `tasks` and `resume` show what was seen last
   * (a terminal status too: the entry stays until a wait delivers the outcome).
   * @throws TaskNotFoundError (`-32602`) for an unknown or expired task; it is dropped from the journal.
   * @throws TasksProtocolError `-32601` when this connection has no tasks.
   */
  async getTask(taskId: string, options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<TaskSnapshot> {
    const snapshot = await this.readTask(taskId, options);
    const entry = this.journal && (await this.journaled.own(taskId));
    if (entry && isTerminalStatus(snapshot.status)) {
      // The entry stays (`watch <id>`, `cancel <id>` find the task's endpoint through it; a wait removes it once it
      // delivered the outcome) and says what was seen: "last seen completed", not the working of an older look.
      await this.journal
        ?.update(taskId, { lastStatus: snapshot.status, lastUpdatedAt: snapshot.lastUpdatedAt, observedAt: new Date().toISOString() })
        .catch(() => {});
    } else if (entry) {
      const observer = new JournalObserver(this.journal, entry);
      observer.observe(snapshot);
      await observer.flush();
    }
    return snapshot;
  }

  /** `tasks/get` alone (see {@link getTask}); a wait records its observations itself. */
  private async readTask(taskId: string, options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<TaskSnapshot> {
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
      poll: (budget) => this.readTask(taskId, budget),
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
    return listenToTasks(modernEndpointOf(this.link), taskIds, options.signal);
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
    return deliverResult(this.link, await this.getTask(taskId));
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
    return deliverResult(this.link, await this.waitForTask(taskId, options), options);
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
   * The whole result of a task whose result was too large to answer inline: its bounded result links to it
   * (`resource_link` `mcp-tasks://tasks/{taskId}/result`, see {@link resultResourceUri}); read with `resources/read`,
   * chunk by chunk where the server asks for that. Owner only, until the task expires.
   * @throws TaskNotFoundError (`code` `-32602`) when it may not be read or is gone (the task expired or was purged).
   */
  readResultResource(uri: string): Promise<CallToolResult> {
    return readResultResource(this.session, uri);
  }

  /**
   * {@link readResultResource} without holding the result: its JSON text goes to `destination` (a stream, or a file
   * that appears only once complete) chunk by chunk, a few 64 KiB chunk reads in flight, each with its own request
   * timeout. `options.bytes` (the link's `size`, see `resultResourceSize`) checks the length; `options.signal`
   * aborts. See {@link readResultResourceTo} for shapes and errors.
   */
  readResultResourceTo(uri: string, destination: Writable | string, options: ResultReadOptions = {}): Promise<ResultWritten> {
    return readResultResourceTo(this.session, uri, destination, options);
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
