/**
 * Rules of the store's ports (`core/ports/`) that hold for every backend, in one place so that no store copies them:
 * which outcome a terminal status needs, which statuses a conditional transition may start from, when a task
 * expires and until when a reader sees it, and which input-request batches are acceptable. Stores call the write
 * rules before they write (so the port refuses a bad write whoever calls it); the service applies visibility.
 */
import type { CreateQuota, QuotaRefusal } from './ports/admission.js';
import type { TaskInputs } from './ports/inputs.js';
import { RESULT_CHUNK_BYTES } from './ports/results.js';
import type { TaskScope, TransitionRequest } from './ports/rows.js';
import { MAX_TOOL_STATE_BYTES, MAX_TOOL_STATE_NAME } from './ports/steps.js';
import { canTransition, sourcesOf } from './state-machine.js';
import { StoreError } from './store-error.js';
import type { JsonValue, TaskRecord, TaskStatus } from './task.js';

/**
 * Refuse a transition that would store an inconsistent task: `completed` needs a `result` outcome, `failed`
 * needs an outcome (a JSON-RPC `error`, or for v1 a `result` with `isError: true`), other statuses take none.
 * @throws {StoreError} `invalid` when the outcome does not fit `request.to`.
 */
export function checkOutcome(request: TransitionRequest): void {
  const { to, outcome } = request;
  const ok = to === 'completed' ? outcome?.kind === 'result' : to === 'failed' ? outcome !== undefined : outcome === undefined;
  if (!ok) throw new StoreError('invalid', `Task store refused transition to ${to}: outcome does not fit`);
}

/**
 * The statuses a conditional transition may apply from: the caller's `from` (default: every source of `to`)
 * intersected with the state machine, so a terminal status never changes even when a caller lists it.
 */
export function transitionSources(request: Pick<TransitionRequest, 'to' | 'from'>): TaskStatus[] {
  return (request.from ?? sourcesOf(request.to)).filter((status) => canTransition(status, request.to));
}

/**
 * Everything a store checks before a conditional transition: the outcome fits ({@link checkOutcome}), and the
 * statuses the write may apply from ({@link transitionSources}).
 * @throws {StoreError} `invalid` when the outcome does not fit `request.to`.
 */
export function checkTransition(request: TransitionRequest): TaskStatus[] {
  checkOutcome(request);
  return transitionSources(request);
}

/** `createdAt + ttlMs` (epoch ms), or `null` for unlimited retention (`ttlMs: null`). */
export function expiresAtOf(createdAt: number, ttlMs: number | null): number | null {
  return ttlMs === null ? null : createdAt + ttlMs;
}

/**
 * Whether `record` is within `scope` as a scoped store read judges it: the owner's, and of the scope's generation
 * when it names one. For records held above the store (the terminal cache, FreshTasks) read in place of the store.
 */
export function inScope(record: Pick<TaskRecord, 'ownerKey' | 'generation'>, scope: Pick<TaskScope, 'ownerKey' | 'generation'>): boolean {
  return record.ownerKey === scope.ownerKey && (scope.generation === undefined || record.generation === scope.generation);
}

/**
 * Whether a requestor may still see `record` at `now` (epoch ms): a task is gone for every reader once
 * `expiresAt <= now` (2025-11-25 R20, SEP-2663), whether or not a sweeper has deleted its row yet. Store reads do
 * not apply this (they return a row until it is deleted); the service's reads do, for every backend alike.
 */
export function visibleAt(record: Pick<TaskRecord, 'expiresAt'>, now: number): boolean {
  return record.expiresAt === null || record.expiresAt > now;
}

/**
 * Refuse, before anything is written, a park that could never resume: with no request pending, no answer can
 * ever arrive to move the task back to `working`. The runtime always asks for something, so this is a bug guard.
 * @throws {StoreError} `invalid` when `requests` is empty.
 */
export function checkInputRequests(requests: Parameters<TaskInputs['requestInput']>[1]): void {
  if (requests.length === 0) throw new StoreError('invalid', 'Task store refused requestInput: no input requests given');
}

/** The `invalid` error for an input request key the task already used (keys are never reused, SEP-2663 E23). */
export function inputKeyReused(key: string): StoreError {
  return new StoreError('invalid', `Task store refused input request: key "${key}" was already used by this task`);
}

/** The `conflict` error for an idempotency key the owner already used for another task. */
export function idempotencyKeyTaken(): StoreError {
  return new StoreError('conflict', 'Idempotency key already used for another request');
}

/** The refusal of a create whose required v1 session has no record (`NewTask.requireSession`): nothing was written. */
export function sessionGone(): StoreError {
  return new StoreError('gone', 'Task store refused the create: its session no longer exists');
}

/**
 * How long an `expired` event outlives its task (ms, store clock): long enough for every process's tail (a few
 * hundred ms behind) to deliver it, then `expireDue` deletes it with the rest of the task's history.
 */
export const EXPIRED_EVENT_RETENTION_MS = 10 * 60 * 1000;

/** What a store counted for one owner under its lock (see `TaskAdmission.admitCreate`); a count is absent when unlimited. */
export interface QuotaCounts {
  /** Creates of the owner in the window, and the oldest one's `createdAt` (`null` when none). */
  window?: { count: number; oldest: number | null };
  /** Active tasks of the owner (non-terminal, not expired on the store's clock). */
  active?: number;
}

/**
 * Which quota refuses one more create, given what the store counted (`undefined`: admitted). The create rate is
 * checked first, so a client told to wait gets the longer of the two waits it could need.
 */
export function quotaRefusal(quota: CreateQuota, createdAt: number, counts: QuotaCounts): QuotaRefusal | undefined {
  const { window, active } = counts;
  if (quota.maxCreates !== null && window && window.count >= quota.maxCreates) {
    return { reason: 'create_rate', retryAfterMs: Math.max(1, (window.oldest ?? createdAt) + quota.windowMs - createdAt) };
  }
  if (quota.maxActive !== null && active !== undefined && active >= quota.maxActive) return { reason: 'active_tasks' };
  return undefined;
}

/** Clamp a caller's page size or batch limit to a non-negative safe integer (a negative LIMIT means "all" in SQLite). */
export function toLimit(limit: number): number {
  return Number.isNaN(limit) ? 0 : Math.max(0, Math.min(Math.floor(limit), Number.MAX_SAFE_INTEGER));
}

/**
 * The JSON of a tool-state document, after the checks of `TaskSteps.putToolState` that need no database.
 * @throws {StoreError} `invalid` for an empty or overlong tool name or key, or a document over the size bound.
 */
export function toolStateJson(tool: string, key: string, value: JsonValue): string {
  for (const [what, name] of [
    ['tool name', tool],
    ['key', key],
  ] as const) {
    if (name.length === 0 || name.length > MAX_TOOL_STATE_NAME) {
      throw new StoreError('invalid', `Task store refused tool state: the ${what} must have 1 to ${MAX_TOOL_STATE_NAME} characters`);
    }
  }
  const json = JSON.stringify(value);
  if (Buffer.byteLength(json) > MAX_TOOL_STATE_BYTES) {
    throw new StoreError(
      'invalid',
      `Task store refused tool state: ${Buffer.byteLength(json)} bytes exceed the ${MAX_TOOL_STATE_BYTES} bytes one document may take`,
    );
  }
  return json;
}

/** The error of a new key beyond the per-owner bound. */
export function tooManyToolStateKeys(max: number): StoreError {
  return new StoreError('invalid', `Task store refused tool state: an owner may keep at most ${max} keys per tool`);
}

/**
 * The chunks of a large result as `TaskResults.putResultChunks` accepts them: each 1 to {@link RESULT_CHUNK_BYTES}
 * bytes (an empty chunk would end a reader early; a larger one breaks the one-chunk-in-memory bound of serving).
 * @throws {StoreError} `invalid`.
 */
export function checkResultChunks(chunks: readonly Uint8Array[]): void {
  const bad = chunks.findIndex((chunk) => chunk.byteLength === 0 || chunk.byteLength > RESULT_CHUNK_BYTES);
  if (bad >= 0)
    throw new StoreError('invalid', `Task store refused result chunk ${bad}: ${chunks[bad]?.byteLength ?? 0} bytes (1 to ${RESULT_CHUNK_BYTES} allowed)`);
}

/**
 * The ids of `requested` that a write changed (`rows`: what its statement returned, in any order), in the order the
 * caller asked for them: how `renewLeases` and `releaseLeases` answer on every backend.
 */
export function inRequestOrder(requested: readonly string[], rows: ReadonlyArray<{ task_id: string }>): string[] {
  const changed = new Set(rows.map((row) => row.task_id));
  return requested.filter((id) => changed.has(id));
}
