/**
 * The task model shared by every layer: what a task is, independent of the wire generation that created it.
 * Times are epoch milliseconds internally; the protocol codecs turn them into ISO 8601 strings.
 */

import type { JsonObject, JsonValue, TaskView } from '../protocol/types.js';
import type { AuditEntry } from './ledger.js';

export type { JsonObject, JsonRpcErrorObject, JsonValue, TaskOutcome, TaskStatus } from '../protocol/types.js';

/**
 * The protocol generation that created a task. A task is visible only through its own generation:
 * `v1` = experimental tasks of MCP 2025-11-25, `v2` = Tasks Extension `io.modelcontextprotocol/tasks` (2026-07-28).
 */
export type TaskGeneration = 'v1' | 'v2';

/**
 * A durable task row as the store returns it: the wire-visible {@link TaskView} (`taskId` is 128 random bits,
 * base64url; times in epoch ms; `ttlMs` retention from `createdAt`, `null` = unlimited) plus what only the server
 * sees.
 */
export interface TaskRecord extends TaskView {
  /** `issuer|subject|tenant` of the creator, or `anonymous`; every task operation compares it. */
  ownerKey: string;
  generation: TaskGeneration;
  /** Protocol version of the creating request, e.g. `2025-11-25` or `2026-07-28`. */
  protocolVersion: string;
  toolName: string;
  arguments: JsonObject;
  /** Snapshot of the creating request's client capabilities (v1: from `initialize`; v2: from `_meta`). */
  clientCapabilities: JsonObject;
  /** `progressToken` of the creating `tools/call`, if any (2025-11-25 R36). */
  progressToken: string | number | null;
  /** `createdAt + ttlMs`, or `null` when unlimited. Epoch ms. */
  expiresAt: number | null;
  /** Monotonic sequence number assigned at creation; orders `tasks/list` pages. */
  seq: number;
  /** Number of runs started so far (0 while queued). */
  attempt: number;
  /** Instance id of the process holding the lease, or `null`. */
  leaseOwner: string | null;
  /** Epoch ms at which the lease lapses, on the store's clock (PostgreSQL: the database's), or `null`. */
  leaseExpiresAt: number | null;
  idempotencyKey: string | null;
  requestDigest: string | null;
  /**
   * Set — to the decoding error's one-line message — when this process cannot decode the stored arguments (encrypted
   * with a key it is not configured with, or altered); `arguments` is then `{}`. Only a run needs the arguments: it
   * fails such a task (`task_unreadable`) instead of running its tool, and every other read and write of the task
   * goes on, so one such row never fails a claim, a list or a batch of other tasks' writes. Absent otherwise.
   */
  unreadableArguments?: string;
}

/** What a caller supplies to create a task; the store assigns `seq` and `attempt`. */
export interface NewTask {
  taskId: string;
  ownerKey: string;
  generation: TaskGeneration;
  protocolVersion: string;
  toolName: string;
  arguments: JsonObject;
  clientCapabilities: JsonObject;
  progressToken: string | number | null;
  statusMessage: string | null;
  createdAt: number;
  ttlMs: number | null;
  pollIntervalMs: number;
  /** Lease taken by the creating process so that recovery elsewhere leaves a queued task alone. */
  leaseOwner: string | null;
  /**
   * Length of that lease in ms, measured on the store's clock (the record's `leaseExpiresAt` is the store's
   * `now + leaseMs`); `null` without a lease owner. Port change (issue 11): the caller passes a duration, never an
   * instant of its own clock, so clock skew between hosts cannot shorten or lengthen a lease.
   */
  leaseMs: number | null;
  idempotencyKey?: string | null;
  requestDigest?: string | null;
  /** Journaled steps written in the same transaction as the task (e.g. input gathered by MRTR before the task). */
  steps?: Record<string, JsonValue>;
  /**
   * The creating process starts the first run at once (it holds a free slot): the task is written with
   * `attempt = 1` and its `attempt` event, saving the separate `startAttempt` write. Should that process die before
   * the run really began, recovery treats the task as interrupted (the safe direction: never a second run of a
   * tool that is not safe to re-run).
   */
  startNow?: boolean;
  /**
   * The v1 (2025-11-25) session whose `tools/call` created the task (issue 11 item 5): recorded in the `created`
   * event's payload (`{sessionId}`, see `createdEventPayload`), in the same write as the task and deleted with it, so
   * the instance holding that session's GET stream finds the task wherever it was created.
   */
  sessionId?: string | null;
  /**
   * Insert the task only while the session record of {@link sessionId} exists (`SessionStore`): the check of a v1
   * session that the request did not read first is made by the create's own statement (issue 25), so a DELETE of
   * the session committed on any instance before it refuses the create. Refused with `StoreError` `gone`; nothing
   * of the task is written.
   */
  requireSession?: boolean;
  /**
   * The `call` audit entry of the request that creates the task (its `taskId` is this task's), appended in the
   * create's own write and only when the task is inserted (issue 25: one write per create, not a second one for the
   * entry). A create that inserts nothing (a taken idempotency key, a quota, a deleted session) writes no entry.
   */
  audit?: AuditEntry;
}

/** State of one input request of a task. */
export type InputRequestState = 'pending' | 'answered' | 'superseded';

/**
 * One request a task made for input (SEP-2663 `inputRequests` entry, 2025-11-25 `elicitation/create`), with its
 * answer once given. Keys are unique for the task's lifetime and never reused (E23).
 */
export interface InputRequestRecord {
  taskId: string;
  key: string;
  /** `{method, params}` exactly as `inputRequests[key]` shows it. */
  request: JsonObject;
  /** The requestor's answer (`ElicitResult` …) once `answered`; for `superseded`, the rejected answer if any. */
  response: JsonObject | null;
  state: InputRequestState;
  /** Epoch ms. */
  createdAt: number;
  /** Epoch ms, or `null` while pending. */
  answeredAt: number | null;
}
