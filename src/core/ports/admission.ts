import type { NewTask, TaskRecord } from '../task.js';

/**
 * The per-owner quotas a create is admitted under (issue 10 §2), checked in the create's own transaction (see
 * {@link TaskAdmission.admitCreate}); the owner is the task's `ownerKey` and the instant its `createdAt`.
 */
export interface CreateQuota {
  /**
   * Most active tasks of the owner, the new one not counted: non-terminal (`working`, `input_required`) and not
   * expired (`expiresAt` unset or after the store's now). `null` = unlimited.
   */
  maxActive: number | null;
  /** Most creates of the owner in the `windowMs` before `createdAt`; `null` = unlimited. */
  maxCreates: number | null;
  /** Length of the create-rate window (ms). */
  windowMs: number;
}

/** Which quota refused a create (nothing was written). */
export type QuotaRefusal =
  | { reason: 'active_tasks' }
  | { reason: 'create_rate'; /** When the oldest create of the window leaves it (ms from `createdAt`, ≥ 1). */ retryAfterMs: number };

/** The answer of {@link TaskAdmission.admitCreate}: the task created, or which quota is full. */
export type CreateAdmission = { admitted: true; task: TaskRecord } | ({ admitted: false } & QuotaRefusal);

/**
 * Admission (port "admission"): a create counted against its owner's quotas in the create's own transaction, so the
 * count is exact across every process on the store. The service maps a refusal to `-31001` (`data.reason`
 * `active_tasks` / `create_rate`, see `protocol/constants.ts`); the store only reports it.
 */
export interface TaskAdmission {
  /**
   * Create `task` when its owner's quotas admit one more (issue 10 §2, issue 23 §4), in ONE transaction under one
   * lock of the owner (SQLite: the write lock; PostgreSQL: an advisory transaction lock on the owner key, taken in
   * the write batch): the owner's active tasks (see {@link CreateQuota.maxActive}) and its creates in the window are
   * counted, and — when both are below their limits — the create is recorded for the window and the task inserted
   * as `TaskRows.create` does. So the count is exact: a task that ended, was cancelled or expired frees its slot at
   * once, and concurrent creates (of every process on the store) cannot exceed the limit. Creates older than the
   * window are deleted on the way. A refused create writes nothing.
   * @throws {StoreError} as `TaskRows.create` (`conflict` for a taken idempotency key).
   */
  admitCreate(task: NewTask, quota: CreateQuota): Promise<CreateAdmission>;
}
