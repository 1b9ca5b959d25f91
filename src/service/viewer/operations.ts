import { TasksError } from '../../core/errors.js';
import type { OperationRecord, OperationStatus } from '../../core/ledger.js';
import type { Logger } from '../../core/logger.js';
import type { TaskStore } from '../../core/store.js';
import type { ToolRegistry } from '../../core/tool-registry.js';
import { appendAudit, operationEntry } from '../../ledger/audit.js';
import { type ReconcileReport, reconcileStored } from '../../ledger/operations.js';
import { ErrorCode } from '../../protocol/constants.js';

export type { ReconcileReport };
import { mayReconcile, sees, seesEveryOwner } from '../access.js';
import type { Viewer } from './viewer.js';

/** Which ledger rows a viewer's operations view asks for (the owner is set from the viewer, never taken from it). */
export interface ViewerOperationQuery {
  /** Only these statuses; absent = all. */
  statuses?: readonly OperationStatus[];
  /** Most rows (1–500). */
  limit: number;
}

/** A ledger row as one viewer sees it: with whether that viewer may reconcile it. */
export interface ViewerOperation {
  operation: OperationRecord;
  mayReconcile: boolean;
}

/**
 * The operations a viewer sees (issue 16): those of its own tasks, every owner's with `admin:read`, oldest first.
 * The owner filter is applied by the store query, so a foreign row is never read for a viewer without `admin:read`.
 */
export async function operationsSeenBy(store: Pick<TaskStore, 'listOperations'>, viewer: Viewer, query: ViewerOperationQuery): Promise<ViewerOperation[]> {
  const ownerScope = seesEveryOwner(viewer) ? {} : { ownerKey: viewer.ownerKey };
  const rows = await store.listOperations({ ...ownerScope, ...(query.statuses ? { statuses: query.statuses } : {}), limit: query.limit });
  return rows.map((operation) => ({ operation, mayReconcile: mayReconcile(viewer, operation) }));
}

/** What the services a reconcile needs. */
export interface ViewerReconcileDeps {
  store: TaskStore;
  tools: Pick<ToolRegistry, 'get'>;
  logger: Logger;
  now: number;
}

/**
 * Reconcile one operation for a viewer: the ledger's {@link reconcileStored} (the tool's reconciler asks the
 * system of record) after the visibility and reconcile rules ({@link viewerMayReconcile}); a changed row leaves an
 * `operation` audit entry.
 * @returns `undefined` for an unknown operation id or one the viewer does not see (never telling which).
 * @throws TasksError `-32600` when the viewer sees the operation but may not reconcile it.
 */
export async function reconcileSeenBy(deps: ViewerReconcileDeps, viewer: Viewer, operationId: string): Promise<ReconcileReport | undefined> {
  const operation = await deps.store.getOperation(operationId);
  if (!operation || !sees(viewer, operation)) return undefined;
  if (!mayReconcile(viewer, operation))
    throw new TasksError(ErrorCode.InvalidRequest, 'Not allowed: reconciling needs tasks:cancel (own tasks) or admin:write');
  const report = await reconcileStored(deps.store, (tool) => deps.tools.get(tool)?.operations, operationId, deps.now);
  if (report?.changed) await appendAudit(deps.store, [operationEntry(report.operation, deps.now)], deps.logger);
  return report;
}
