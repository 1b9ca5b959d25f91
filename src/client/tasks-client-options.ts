/**
 * The options and reports of the requestor client's public methods ({@link TasksClient} in `tasks-client.ts`): what a
 * caller passes and gets back, apart from the class that keeps the session state.
 */
import type { FetchLike } from '@modelcontextprotocol/client';

import type { Budgets } from './budgets.js';
import type { InputHandler, InputRequest } from './input.js';
import type { CallNeeds, Fallback, TaskPolicy } from './router.js';
import type { ProtocolChoice, TaskStatus } from './types.js';

/** Options of {@link connectTasksClient}. */
export interface ConnectTasksClientOptions {
  /** The Streamable HTTP endpoint, e.g. `http://127.0.0.1:3100/mcp`. */
  url: string | URL;
  /** @defaultValue `'auto'` (2026-07-28 first, then a 2025-11-25 `initialize` session) */
  protocol?: ProtocolChoice;
  /** Bearer token, sent as `Authorization: Bearer <token>` on every request. Never written to the journal. */
  token?: string;
  /** Extra HTTP headers for every request (the protocol's own headers take precedence). */
  headers?: Record<string, string>;
  /** @defaultValue `{ name: 'mcp-tasks-client', version: '0.1.0' }` */
  clientInfo?: { name: string; version: string };
  /** Journal file for `resume`; `false` turns journaling off. @defaultValue {@link TaskJournal.defaultPath} */
  journal?: string | false;
  /** Timeout of each request, in ms (the `tools/call` of an inline tool may set its own). @defaultValue 30 000 */
  requestTimeoutMs?: number;
  /** `fetch` used for every HTTP request (proxies, instrumentation). @defaultValue global `fetch` */
  fetch?: FetchLike;
  /**
   * Answers the server's questions (form elicitation): MRTR rounds of `tools/call`, the `inputRequests` of v2 tasks
   * this client waits on (answered with `tasks/update`), and the `elicitation/create` requests of a 2025-11-25
   * server (during `tools/call`, and on the `tasks/result` this client opens for an `input_required` task). Giving
   * it declares the `elicitation: {form: {}}` capability (in `initialize` on 2025-11-25, in every request's `_meta`
   * on 2026-07-28); without it the server cannot make the client's tasks ask (it fails them with `-32021`).
   * It is asked one question at a time.
   */
  onInput?: InputHandler;
}

/** Options of {@link TasksClient.answerTask}. */
export interface AnswerTaskOptions {
  signal?: AbortSignal;
  /** 2025-11-25 only: how long to wait for the server to send the first question, in ms. @defaultValue 10 000 */
  firstQuestionTimeoutMs?: number;
}

/** What {@link TasksClient.answerTask} did. */
export interface AnswerReport {
  taskId: string;
  /** The task's status before answering; nothing is asked unless it is `input_required`. */
  status: TaskStatus;
  /** The questions that were outstanding (v2) or arrived (v1), in order. */
  asked: InputRequest[];
  /** Keys whose answers were delivered. */
  answered: string[];
  /** Keys asked but left unanswered. */
  left: string[];
}

/** Options of {@link TasksClient.callTool}. */
export interface CallToolOptions {
  /** Requested retention in ms (v1 `task.ttl`; the server may lower it). Ignored on v2, where the server decides. */
  ttlMs?: number;
  /** How long to wait for the `tools/call` answer, in ms (`budgets.createMs` wins). @defaultValue the client's `requestTimeoutMs` */
  timeoutMs?: number;
  /** Abandons waiting for the answer (the call may still have started: {@link ToolCallOutcomeUnknownError}). */
  signal?: AbortSignal;
  /**
   * The task policy, decided against the {@link CapabilityManifest} before anything is sent. Without one the call
   * becomes a task where the connection and tool allow it and runs inline otherwise (outcome `route: 'sync'`).
   */
  task?: TaskPolicy;
  /** Task operations the call relies on (only with `task`). */
  needs?: CallNeeds;
  /** What to do when the policy cannot be met. @defaultValue `'reject'` (with `task`) */
  fallback?: Fallback;
  /** Bound of a `'sync'` fallback in ms; it becomes the HTTP request's timeout. Required for `'sync'`. */
  maxSyncMs?: number;
  /** Only `createMs` applies here: the timeout of the one `tools/call` request. */
  budgets?: Pick<Budgets, 'createMs'>;
  /** The idempotency key to send (1–255 printable ASCII). @defaultValue a random UUID */
  idempotencyKey?: string;
}
