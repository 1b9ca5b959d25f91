import type { QuotaRefusal } from './ports/admission.js';
import type { JsonObject, TaskGeneration, TaskRecord } from './task.js';

/**
 * The domain-safety part of the storage port (issue 12): idempotency keys of `tools/call` and the operation
 * ledger. Kept apart from task rows on purpose: both outlive the task they belong to (a key stays "used" after its
 * task was purged; an operation is evidence of what the system of record was asked to do after the protocol
 * record is gone). Same error policy as {@link TaskStore}: only `StoreError`s, conditions reported by return value.
 */

/** A requestor's claim of an idempotency key for one `tools/call`. */
export interface IdempotencyClaim {
  ownerKey: string;
  /** Keys are scoped per generation: a task is visible only through the generation that created it. */
  generation: TaskGeneration;
  /** 1–255 printable ASCII (client-sent), or a key derived by the server (`mrtr:…`). */
  key: string;
  toolName: string;
  /** SHA-256 of the canonical `{tool, arguments}` (base64url), see `ledger/digest.ts`. */
  requestDigest: string;
  /** The task the call creates, or `null` for a call answered inline. */
  taskId: string | null;
  /** How long the key holds, in ms, from the store's now (`--idempotency-window-ms`). */
  windowMs: number;
}

/** A stored idempotency key. Times are epoch ms on the store's clock. */
export interface IdempotencyRecord extends Omit<IdempotencyClaim, 'windowMs'> {
  createdAt: number;
  expiresAt: number;
}

/**
 * How a claim ended: the key is now this call's (and the task, when one was given, is created), already taken, or
 * — with a quota — the key was free but the owner's quota refused the task (nothing written, the key stays free).
 */
export type IdempotencyClaimResult =
  { claimed: true; task?: TaskRecord } | { claimed: false; existing: IdempotencyRecord } | { claimed: false; refused: QuotaRefusal };

/**
 * Where an operation stands in the system of record:
 * - `pending`: about to be performed (or performing); nothing known yet;
 * - `confirmed`: the system of record accepted it (a receipt is stored);
 * - `failed`: an error that proves nothing happened;
 * - `unknown`: anything else (timeout, crash, lost connection): an operator or `reconcile` must decide.
 */
export type OperationStatus = 'pending' | 'confirmed' | 'failed' | 'unknown';

/** The statuses an operator must look at (`mcp-tasks ops list` shows these by default). */
export const OPEN_OPERATION_STATUSES: readonly OperationStatus[] = Object.freeze(['pending', 'unknown']);

/** A ledger row: one consequential effect a tool declared with `ctx.operation`. Times are epoch ms. */
export interface OperationRecord {
  /** 128 random bits, base64url: passed to the system of record as its idempotency key. */
  operationId: string;
  /** The tool's own key for the effect, unique per task (e.g. `publish:<path>`). */
  key: string;
  taskId: string;
  /** `issuer|subject|tenant` of the task's owner. */
  ownerKey: string;
  toolName: string;
  /** The effect, named by the tool (a key of its `operations` export), e.g. `git.commit`. */
  effect: string;
  /** What the effect touches (a path, an account), no secrets. */
  target: string;
  /** The version of the target the effect expects, when the tool knows one (e.g. the branch head). */
  objectVersion: string | null;
  status: OperationStatus;
  /** Downstream id / evidence handle, once confirmed. */
  receipt: JsonObject | null;
  /** Why it failed or is unknown (redacted). */
  detail: string | null;
  createdAt: number;
  updatedAt: number;
}

/** What a tool declares before performing (see {@link OperationLedger.openOperation}). */
export type NewOperation = Pick<
  OperationRecord,
  'operationId' | 'key' | 'taskId' | 'ownerKey' | 'toolName' | 'effect' | 'target' | 'objectVersion' | 'createdAt'
>;

/** A conditional status write of an operation. */
export interface OperationSettlement {
  status: OperationStatus;
  /** Only from these statuses (a confirmed operation is never reopened). */
  from: readonly OperationStatus[];
  receipt?: JsonObject | null;
  detail?: string | null;
  now: number;
}

/** Which operations to list (all filters combine). */
export interface OperationFilter {
  ownerKey?: string;
  taskId?: string;
  statuses?: readonly OperationStatus[];
  limit: number;
}

/**
 * Kinds of audit entries (append-only, kept after the task expired, own retention):
 * `call` a `tools/call` (task created, answered inline, replayed, refused), `task.ended` a terminal status,
 * `input.answered` an approval or refusal given through input, `operation` a ledger status change, `cancel` a
 * cancellation request, `shadow.mismatch` a difference between a task and the job API it shadows (issue 15 item 8).
 */
export type AuditKind = 'call' | 'task.ended' | 'input.answered' | 'operation' | 'cancel' | 'shadow.mismatch' | 'kill_switch';

/**
 * One audit entry. Holds identifiers the audit exists to keep (owner key = `issuer|subject|tenant`, task and
 * operation ids, tool, argument digest, statuses, question keys, accept/decline) and NEVER tokens, personal claims
 * (e-mail, name), raw arguments or answered values: writers pass only these fields.
 */
export interface AuditEntry {
  at: number;
  kind: AuditKind;
  ownerKey: string;
  /** Granted scopes of the caller, space separated, when authorization knows them. */
  scopes: string | null;
  tool: string | null;
  taskId: string | null;
  /** SHA-256 of the canonical tool + arguments (`ledger/digest.ts`). */
  argumentsDigest: string | null;
  /** The outcome in one word: task status, operation status, `accept`/`decline`/`cancel`, `replayed`, `refused`. */
  outcome: string | null;
  /** Identifiers only (question keys, operation id, effect, error code). */
  detail: JsonObject | null;
}

/**
 * The audit entry of a task that reached a terminal status outside the service (a run's outcome, a runtime
 * failure): written by the store in the same write as the transition (`TransitionRequest.endedAudit`).
 * `reason`: a runtime failure's reason, recorded as `detail: {reason}`.
 */
export function taskEndedAudit(task: Pick<TaskRecord, 'ownerKey' | 'toolName' | 'taskId' | 'status'>, at: number, reason?: string): AuditEntry {
  return {
    at,
    kind: 'task.ended',
    ownerKey: task.ownerKey,
    scopes: null,
    tool: task.toolName,
    taskId: task.taskId,
    argumentsDigest: null,
    outcome: task.status,
    detail: reason ? { reason } : null,
  };
}

/** A stored audit entry. */
export interface AuditRecord extends AuditEntry {
  seq: number;
}

/** Which audit entries to read (filters combine; ascending by `seq`). */
export interface AuditFilter {
  since?: number;
  tool?: string;
  ownerKey?: string;
  kind?: AuditKind;
  afterSeq?: number;
  limit: number;
}

/** The ports of the ledger moved to `core/ports/ledger.ts`; named here too, beside the records they carry. */
export type { AuditStore, LedgerStore } from './ports/ledger.js';
