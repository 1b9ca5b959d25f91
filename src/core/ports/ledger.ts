import type {
  AuditEntry,
  AuditFilter,
  AuditRecord,
  IdempotencyClaim,
  IdempotencyClaimResult,
  IdempotencyRecord,
  NewOperation,
  OperationFilter,
  OperationRecord,
  OperationSettlement,
} from '../ledger.js';
import type { NewTask, TaskGeneration } from '../task.js';
import type { CreateQuota } from './admission.js';

/*
 * The ledger (port "ledger", issue 12): idempotency keys of `tools/call`, the operation ledger and the audit trail.
 * Kept apart from task rows on purpose: all three outlive the task they belong to. Records and their rules are in
 * `core/ledger.ts`. Errors: only `StoreError`; a condition that does not hold answers `undefined`.
 */

/** The idempotency-key and ledger methods every store implements. */
export interface LedgerStore extends AuditStore {
  /** The live (unexpired on the store's clock) key of this owner and generation, or `undefined`. */
  findIdempotencyKey(scope: { ownerKey: string; generation: TaskGeneration }, key: string): Promise<IdempotencyRecord | undefined>;

  /**
   * Claim a key atomically, replacing a lapsed one; with `task`, create that task (as `TaskRows.create`) in
   * the same transaction, so a key never points at a task that was not written. Race-safe across processes: of two
   * concurrent claims of one key exactly one gets `claimed: true`; the other gets the winner's committed row.
   * With `quota` (and `task`), the task is admitted as `TaskAdmission.admitCreate` does, in the same transaction
   * and under the same owner lock: a taken key answers `existing` whatever the quota; a free key with a full quota
   * answers `refused` and leaves nothing behind.
   */
  claimIdempotencyKey(claim: IdempotencyClaim, task?: NewTask, quota?: CreateQuota): Promise<IdempotencyClaimResult>;

  /** Write `pending` durably before the effect; when the task already has an operation under `key`, return that one unchanged. */
  openOperation(operation: NewOperation): Promise<OperationRecord>;

  /** Apply `settlement` when the operation's status is one of `settlement.from`; `undefined` otherwise or when missing. */
  settleOperation(operationId: string, settlement: OperationSettlement): Promise<OperationRecord | undefined>;

  getOperation(operationId: string): Promise<OperationRecord | undefined>;

  /** Operations matching `filter`, oldest first. */
  listOperations(filter: OperationFilter): Promise<OperationRecord[]>;
}

/** The audit part of the storage port. */
export interface AuditStore {
  /** Append entries durably (one commit). */
  appendAudit(entries: readonly AuditEntry[]): Promise<void>;
  listAudit(filter: AuditFilter): Promise<AuditRecord[]>;
  /** Delete up to `limit` entries older than `before` (epoch ms): the audit's own retention. Returns how many. */
  purgeAudit(before: number, limit: number): Promise<number>;
}
