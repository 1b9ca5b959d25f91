import { invalidParams } from '../../core/errors.js';
import type { IdempotencyClaim, IdempotencyRecord } from '../../core/ledger.js';
import type { TaskGeneration, TaskRecord } from '../../core/task.js';
import { requestDigest } from '../../ledger/digest.js';
import { ApplicationErrorReason } from '../../protocol/constants.js';
import type { Caller } from '../caller.js';

/** The `data` of every refusal of a used key: the reason clients branch on (the message is for people). */
const KEY_USED = { reason: ApplicationErrorReason.IdempotencyKeyUsed };

/** A claim without its task id: what one `tools/call` with a key asks for (see {@link keyClaim}). */
export type KeyClaim = Omit<IdempotencyClaim, 'taskId'>;

/**
 * The claim of `key` for this call: scoped per owner and per generation (a caller without tasks uses the generation
 * of its protocol, so its inline calls have keys too), identified by the canonical digest of tool + arguments.
 */
export function keyClaim(caller: Caller, key: string, toolName: string, args: unknown, windowMs: number): KeyClaim {
  const generation: TaskGeneration = caller.generation ?? (caller.negotiation === 'per-request' ? 'v2' : 'v1');
  return { ownerKey: caller.ownerKey, generation, key, toolName, requestDigest: requestDigest(toolName, args), windowMs };
}

/**
 * What a call whose key is already taken gets: the existing task (read through `read`, i.e. with the caller's own
 * owner and generation), never a second run.
 * @throws TasksError `-32602` naming the conflict (same key, other tool or arguments), or naming the key as already
 *   used (its call was answered inline, or its task was purged or expired).
 */
export async function replayOf(existing: IdempotencyRecord, claim: KeyClaim, read: (taskId: string) => Promise<TaskRecord | undefined>): Promise<TaskRecord> {
  const named = JSON.stringify(claim.key);
  if (existing.toolName !== claim.toolName) {
    throw invalidParams(
      `Idempotency key ${named} was already used for a call of tool ${existing.toolName}, not ${claim.toolName}; use a new key for a new request`,
      KEY_USED,
    );
  }
  if (existing.requestDigest !== claim.requestDigest) {
    throw invalidParams(
      `Idempotency key ${named} was already used for a call of ${claim.toolName} with different arguments; use a new key for a new request`,
      KEY_USED,
    );
  }
  if (existing.taskId === null) {
    throw invalidParams(`Idempotency key ${named} was already used by a call that was answered without a task; it is not run again`, KEY_USED);
  }
  const task = await read(existing.taskId);
  if (!task)
    throw invalidParams(`Idempotency key ${named} was already used by a task that no longer exists (expired or purged); it is not run again`, KEY_USED);
  return task;
}
