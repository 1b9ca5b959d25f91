import { TasksError } from '../core/errors.js';
import type { AuditEntry, AuditStore, OperationRecord } from '../core/ledger.js';
import type { Logger } from '../core/logger.js';
import type { JsonObject, TaskRecord } from '../core/task.js';

/**
 * What an audit writer is told about one task-service operation: identifiers only. The service computes the
 * argument digest and reduces answers to `key → action`, so raw arguments and answered values never get here.
 */
export interface AuditedOperation {
  operation: string;
  ownerKey: string;
  scopes?: readonly string[];
  tool?: string;
  taskId?: string;
  argumentsDigest?: string;
  /** `answerInput`: the action of each answer (`accept`, `decline`, `cancel`, or `invalid`). */
  answers?: ReadonlyArray<{ key: string; action: string }>;
}

/**
 * The audit entries of one finished task-service operation (`result` its value, `error` what it threw):
 * `call` (task created with its status, answered inline, replayed, refused), `cancel`, `input.answered` per key.
 * Reads (`get`, `list`, waits) are not audited.
 */
export function auditEntriesOf(op: AuditedOperation, outcome: { result?: unknown; error?: unknown }, at: number): AuditEntry[] {
  const base = baseOf(op, at);
  const refused =
    outcome.error === undefined
      ? undefined
      : { outcome: 'refused', detail: { code: outcome.error instanceof TasksError ? outcome.error.code : 'internal' } as JsonObject };
  if (op.operation === 'callTool') {
    if (refused) return [{ ...base, kind: 'call', ...refused }];
    const result = outcome.result as { kind: string; task?: TaskRecord; replayed?: boolean } | undefined;
    if (result?.kind === 'task' && result.task) return [taskCallEntry(op, result.task, at)];
    return result?.kind === 'input_required' ? [] : [{ ...base, kind: 'call', outcome: 'answered inline', detail: null }];
  }
  if (op.operation === 'cancel') {
    if (refused) return [{ ...base, kind: 'cancel', ...refused }];
    const result = outcome.result as { cancelled: boolean; task: TaskRecord };
    return [{ ...base, kind: 'cancel', tool: result.task.toolName, outcome: result.cancelled ? 'cancelled' : `already ${result.task.status}`, detail: null }];
  }
  if (op.operation === 'answerInput' && !refused) {
    const accepted = new Set((outcome.result as string[] | undefined) ?? []);
    return (op.answers ?? [])
      .filter((answer) => accepted.has(answer.key))
      .map((answer) => ({ ...base, kind: 'input.answered' as const, outcome: answer.action, detail: { key: answer.key } }));
  }
  return [];
}

/**
 * The `call` entry of a `callTool` whose answer is `task` (`outcome` "task <status>"). Written with the task itself
 * when the operation created it (`NewTask.audit`, issue 25: one write per create, not two), else after the operation.
 */
export function taskCallEntry(op: AuditedOperation, task: Pick<TaskRecord, 'taskId' | 'status'>, at: number): AuditEntry {
  return { ...baseOf(op, at), kind: 'call', taskId: task.taskId, outcome: `task ${task.status}`, detail: null };
}

/** The fields every entry of `op` shares. */
function baseOf(op: AuditedOperation, at: number): Omit<AuditEntry, 'kind' | 'outcome' | 'detail'> {
  return {
    at,
    ownerKey: op.ownerKey,
    scopes: op.scopes?.length ? op.scopes.join(' ') : null,
    tool: op.tool ?? null,
    taskId: op.taskId ?? null,
    argumentsDigest: op.argumentsDigest ?? null,
  };
}

/**
 * Append `entries` to the audit log. A failed write is logged (with the kinds, nothing else) and swallowed: the audit
 * never turns a done operation into an error the caller would retry.
 */
export async function appendAudit(store: AuditStore, entries: readonly AuditEntry[], logger: Logger): Promise<void> {
  if (entries.length === 0) return;
  try {
    await store.appendAudit(entries);
  } catch (error) {
    logger.error({ err: error, kinds: entries.map((entry) => entry.kind) }, 'audit log write failed');
  }
}

/** The audit entry of an operation's status (opened `pending`, then how it settled). */
export function operationEntry(operation: OperationRecord, at: number): AuditEntry {
  return {
    at,
    kind: 'operation',
    ownerKey: operation.ownerKey,
    scopes: null,
    tool: operation.toolName,
    taskId: operation.taskId,
    argumentsDigest: null,
    outcome: operation.status,
    detail: { operationId: operation.operationId, effect: operation.effect },
  };
}

/** The audit entry of a difference shadow mode found between a task and its job (`outcome` "task=<state> job=<state>"). */
export function shadowMismatchEntry(
  record: Pick<TaskRecord, 'taskId' | 'toolName' | 'ownerKey'>,
  difference: { phase: string; taskState: string; jobState: string; jobId: string },
  at: number,
): AuditEntry {
  return {
    at,
    kind: 'shadow.mismatch',
    ownerKey: record.ownerKey,
    scopes: null,
    tool: record.toolName,
    taskId: record.taskId,
    argumentsDigest: null,
    outcome: `task=${difference.taskState} job=${difference.jobState}`,
    detail: { phase: difference.phase, taskState: difference.taskState, jobState: difference.jobState, jobId: difference.jobId },
  };
}

/**
 * The audit entry of a kill-switch change (issue 15 item 6): who (`ownerKey`: the operator's owner key, `local` for
 * the CLI on the store), `outcome` `on` / `off` / `already off`, the tool (`null`: every tool) and, for `on`, the
 * fallback asked for. The operator's reason stays in the switch row (prose, not an identifier).
 */
export function killSwitchEntry(
  change: { action: 'on' | 'off'; scope: string; fallback: string | null; cleared?: boolean; setBy: string },
  at: number,
): AuditEntry {
  const outcome = change.action === 'on' ? 'on' : change.cleared === false ? 'already off' : 'off';
  return {
    at,
    kind: 'kill_switch',
    ownerKey: change.setBy,
    scopes: null,
    tool: change.scope === '*' ? null : change.scope,
    taskId: null,
    argumentsDigest: null,
    outcome,
    detail: { scope: change.scope, ...(change.action === 'on' ? { fallback: change.fallback } : {}) },
  };
}
