import { TasksError } from '../core/errors.js';
import type { ExecutionHost } from '../core/executor.js';
import type { OperationRecord } from '../core/ledger.js';
import type { LedgerStore } from '../core/ports/ledger.js';
import { redactSecrets } from '../core/redaction.js';
import type { JsonObject } from '../core/task.js';
import {
  type OperationHandlers,
  OperationNotApplied,
  type OperationReceipt,
  type OperationSpec,
  type ReconcileInput,
  type ReconcileVerdict,
} from '../core/tool.js';
import { ErrorCode } from '../protocol/constants.js';
import { crashPoint } from './crash-points.js';

/** What a reconciler is told about a ledger row. */
export function reconcileInputOf(operation: OperationRecord): ReconcileInput {
  const { operationId, key, effect, target, objectVersion, taskId } = operation;
  return { operationId, key, effect, target, objectVersion, taskId };
}

/**
 * Ask the tool's reconciler whether `operation` happened. A missing reconciler or one that throws answers
 * `unknown` (with why): only the system of record may say `confirmed` or `not_applied`.
 */
export async function reconcileOperation(
  handlers: Readonly<Record<string, OperationHandlers>> | undefined,
  operation: OperationRecord,
): Promise<ReconcileVerdict> {
  const reconciler = handlers?.[operation.effect];
  if (!reconciler) return { status: 'unknown', detail: `tool ${operation.toolName} has no reconciler for effect ${operation.effect}` };
  try {
    return await reconciler.reconcile(reconcileInputOf(operation));
  } catch (error) {
    return { status: 'unknown', detail: `reconcile failed: ${redactSecrets(error instanceof Error ? error.message : String(error))}` };
  }
}

/** The error that fails a task whose operation's outcome nobody can decide (`data.reason: "outcome_unknown"`). */
export function outcomeUnknown(operation: Pick<OperationRecord, 'operationId' | 'effect' | 'target'>, detail: string): TasksError {
  return new TasksError(
    ErrorCode.InternalError,
    `Outcome of operation ${operation.operationId} (${operation.effect} on ${operation.target}) is unknown: ${detail}; it stays open for an operator (mcp-tasks ops reconcile)`,
    { reason: 'outcome_unknown', operationId: operation.operationId },
  );
}

/**
 * `ctx.operation` (see `ToolContext.operation`): the ledger row first, reconciliation before any second perform,
 * the receipt stored before the tool goes on. The crash points are inert unless a test enables them.
 */
export async function performOperation(
  host: ExecutionHost,
  handlers: Readonly<Record<string, OperationHandlers>> | undefined,
  spec: OperationSpec,
  perform: (operationId: string) => Promise<JsonObject>,
): Promise<OperationReceipt> {
  // Every effect needs its reconciler before it may happen: a crash would otherwise leave an outcome nobody can decide.
  if (!handlers?.[spec.effect])
    throw new Error(`ctx.operation: the tool declares no reconciler for effect ${spec.effect} (its operations: { '${spec.effect}': { reconcile } })`);
  const { operation, opened } = await host.openOperation(spec);
  const confirmed = (record: OperationRecord, receipt: JsonObject, replayed: boolean): OperationReceipt => ({
    operationId: record.operationId,
    receipt,
    replayed,
  });
  if (operation.status === 'confirmed') return confirmed(operation, operation.receipt ?? {}, true);
  if (!opened && operation.status !== 'failed') {
    // An earlier run got as far as the row (and maybe the effect): ask the system of record before anything else.
    const verdict = await reconcileOperation(handlers, operation);
    if (verdict.status === 'confirmed') {
      await host.settleOperation(operation.operationId, {
        status: 'confirmed',
        from: ['pending', 'unknown'],
        receipt: verdict.receipt,
        detail: 'confirmed by reconciliation',
      });
      return confirmed(operation, verdict.receipt, true);
    }
    if (verdict.status === 'unknown') {
      await host.settleOperation(operation.operationId, { status: 'unknown', from: ['pending', 'unknown'], detail: verdict.detail });
      throw outcomeUnknown(operation, verdict.detail);
    }
  }
  if (operation.status !== 'pending') {
    // `failed`, or `unknown` that reconciliation found not applied: pending again before the new attempt.
    await host.settleOperation(operation.operationId, { status: 'pending', from: ['failed', 'unknown'], detail: null });
  }
  crashPoint('before_perform');
  let receipt: JsonObject;
  try {
    receipt = await perform(operation.operationId);
  } catch (error) {
    const detail = redactSecrets(error instanceof Error ? error.message : String(error)).slice(0, 500);
    if (error instanceof OperationNotApplied) {
      await host.settleOperation(operation.operationId, { status: 'failed', from: ['pending'], detail });
      throw error;
    }
    await host.settleOperation(operation.operationId, { status: 'unknown', from: ['pending'], detail });
    throw outcomeUnknown(operation, detail);
  }
  crashPoint('after_perform');
  await host.settleOperation(operation.operationId, { status: 'confirmed', from: ['pending'], receipt, detail: null });
  crashPoint('after_receipt');
  return confirmed(operation, receipt, false);
}

/** What {@link reconcileStored} did. */
export interface ReconcileReport {
  operation: OperationRecord;
  verdict: ReconcileVerdict;
  /** Whether the ledger row changed (a confirmed row is never reopened). */
  changed: boolean;
}

/**
 * Reconcile a stored operation on demand (an operator's `mcp-tasks ops reconcile`, or any process with the tools
 * loaded): ask the tool's reconciler, then record `confirmed` (with the receipt), `failed` for `not_applied` (nothing
 * happened; a re-run of its task may perform it again) or `unknown`. A `confirmed` or `failed` row is left as is.
 * @returns `undefined` for an unknown operation id.
 */
export async function reconcileStored(
  store: Pick<LedgerStore, 'getOperation' | 'settleOperation'>,
  handlersOf: (toolName: string) => Readonly<Record<string, OperationHandlers>> | undefined,
  operationId: string,
  now: number,
): Promise<ReconcileReport | undefined> {
  const operation = await store.getOperation(operationId);
  if (!operation) return undefined;
  if (operation.status === 'confirmed' || operation.status === 'failed')
    return {
      operation,
      verdict: operation.status === 'confirmed' ? { status: 'confirmed', receipt: operation.receipt ?? {} } : { status: 'not_applied' },
      changed: false,
    };
  const verdict = await reconcileOperation(handlersOf(operation.toolName), operation);
  const from = ['pending', 'unknown'] as const;
  const settled =
    verdict.status === 'confirmed'
      ? await store.settleOperation(operationId, { status: 'confirmed', from, receipt: verdict.receipt, detail: 'confirmed by reconciliation', now })
      : verdict.status === 'not_applied'
        ? await store.settleOperation(operationId, { status: 'failed', from, detail: 'not applied (reconciliation found no effect)', now })
        : await store.settleOperation(operationId, { status: 'unknown', from, detail: verdict.detail, now });
  return { operation: settled ?? operation, verdict, changed: settled !== undefined };
}
