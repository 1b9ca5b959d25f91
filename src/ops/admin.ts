import { GLOBAL_SWITCH, type KillSwitchFallback, type KillSwitchRecord, MAX_SWITCH_REASON_CHARS } from '../core/kill-switch.js';
import { type AuditRecord, OPEN_OPERATION_STATUSES, type OperationRecord, type OperationStatus } from '../core/ledger.js';
import type { TaskStore } from '../core/store.js';
import type { TaskStatus } from '../protocol/types.js';

/**
 * The operator's actions on a store, one implementation behind both forms of the CLI: `--store` (the CLI opens the
 * store itself) and `--url` (the server's `/admin/…` API calls these). Every input is checked here, so both forms
 * refuse the same things with the same words ({@link AdminInputError}).
 */

/** A refused admin input (HTTP 400; CLI exit 64). */
export class AdminInputError extends Error {
  override readonly name = 'AdminInputError';
}

/** What turning a switch on asks for. */
export interface SwitchRequest {
  /** A served tool, or absent for every tool. */
  tool?: string | undefined;
  fallback?: KillSwitchFallback | undefined;
  reason?: string | undefined;
}

/** One non-terminal task as the rollback watcher shows it (no arguments, no result). */
export interface InFlightTask {
  taskId: string;
  ownerKey: string;
  toolName: string;
  status: TaskStatus;
  statusMessage: string | null;
  createdAt: number;
  lastUpdatedAt: number;
  /** Runs started so far (2 and up: taken over or retried after a process stopped). */
  attempt: number;
  /** Instance id of the process whose lease the task is under (running it, or holding it in hand), else `null`. */
  leaseOwner: string | null;
  /** Epoch ms at which that lease lapses, on the store's clock, else `null`. */
  leaseExpiresAt: number | null;
}

/** What is still in flight: non-terminal tasks (newest first) and open domain operations (oldest first). */
export interface InFlight {
  tasks: InFlightTask[];
  operations: OperationRecord[];
  /** More tasks or operations exist than `limit` returned. */
  truncated: boolean;
  /** `tasks` and `operations` are both empty (and nothing was cut): a rollback may proceed. */
  settled: boolean;
}

const FALLBACKS: readonly string[] = ['sync', 'reject'];
const STATUSES: readonly string[] = ['pending', 'confirmed', 'failed', 'unknown'];

/** Check a switch request against the served tools; returns the record to store. */
export function switchRecord(request: SwitchRequest, knownTools: readonly string[], setBy: string, now: number): KillSwitchRecord {
  const { tool, fallback, reason } = request;
  if (tool !== undefined && (typeof tool !== 'string' || !knownTools.includes(tool)))
    throw new AdminInputError(`tool ${JSON.stringify(tool)} is not served here (tools: ${knownTools.join(', ')})`);
  if (fallback !== undefined && !FALLBACKS.includes(fallback)) throw new AdminInputError(`fallback ${JSON.stringify(fallback)}: expected sync or reject`);
  if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_SWITCH_REASON_CHARS))
    throw new AdminInputError(`reason: a string of at most ${MAX_SWITCH_REASON_CHARS} characters`);
  return { scope: tool ?? GLOBAL_SWITCH, fallback: fallback ?? null, reason: reason ?? null, setBy, setAt: now };
}

/** Check the tool of an `off` (absent: the global switch); returns the scope to clear. */
export function switchScope(tool: string | undefined, knownTools: readonly string[]): string {
  if (tool !== undefined && !knownTools.includes(tool))
    throw new AdminInputError(`tool ${JSON.stringify(tool)} is not served here (tools: ${knownTools.join(', ')})`);
  return tool ?? GLOBAL_SWITCH;
}

/** What is in flight in `store`, at most `limit` of each kind (1–1000). */
export async function readInFlight(store: TaskStore, limit: number): Promise<InFlight> {
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new AdminInputError('limit: an integer from 1 to 1000');
  const [rows, operations] = await Promise.all([
    store.browse({ statuses: ['working', 'input_required'], limit: limit + 1 }),
    store.listOperations({ statuses: OPEN_OPERATION_STATUSES, limit: limit + 1 }),
  ]);
  const truncated = rows.length > limit || operations.length > limit;
  const tasks = rows
    .slice(0, limit)
    .map(({ taskId, ownerKey, toolName, status, statusMessage, createdAt, lastUpdatedAt, attempt, leaseOwner, leaseExpiresAt }) => ({
      taskId,
      ownerKey,
      toolName,
      status,
      statusMessage,
      createdAt,
      lastUpdatedAt,
      attempt,
      leaseOwner,
      leaseExpiresAt,
    }));
  const open = operations.slice(0, limit);
  return { tasks, operations: open, truncated, settled: tasks.length === 0 && open.length === 0 && !truncated };
}

/** Filters of the operation list (the `ops list` flags). */
export interface OperationQuery {
  ownerKey?: string | undefined;
  taskId?: string | undefined;
  /** Absent: the open ones; `all`: every status. */
  statuses?: readonly string[] | 'all' | undefined;
  limit?: number | undefined;
}

/** The operations matching `query` (default: open, at most 100). */
export function readOperations(store: TaskStore, query: OperationQuery): Promise<OperationRecord[]> {
  const statuses = query.statuses === 'all' ? undefined : (query.statuses ?? OPEN_OPERATION_STATUSES);
  for (const status of statuses ?? []) if (!STATUSES.includes(status)) throw new AdminInputError(`status ${status}: expected ${STATUSES.join(', ')}`);
  const limit = query.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new AdminInputError('limit: an integer from 1 to 10000');
  return store.listOperations({
    ...(query.ownerKey ? { ownerKey: query.ownerKey } : {}),
    ...(query.taskId ? { taskId: query.taskId } : {}),
    ...(statuses ? { statuses: statuses as OperationStatus[] } : {}),
    limit,
  });
}

/** Filters of the audit trail (the `audit` flags); `since` in epoch ms. */
export interface AuditQuery {
  since?: number | undefined;
  tool?: string | undefined;
  ownerKey?: string | undefined;
  afterSeq?: number | undefined;
  limit?: number | undefined;
}

/** Audit entries matching `query`, oldest first (default at most 1000). */
export function readAudit(store: TaskStore, query: AuditQuery): Promise<AuditRecord[]> {
  const limit = query.limit ?? 1000;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100_000) throw new AdminInputError('limit: an integer from 1 to 100000');
  if (query.since !== undefined && !Number.isFinite(query.since)) throw new AdminInputError('since: epoch ms');
  return store.listAudit({
    ...(query.since === undefined ? {} : { since: query.since }),
    ...(query.tool ? { tool: query.tool } : {}),
    ...(query.ownerKey ? { ownerKey: query.ownerKey } : {}),
    ...(query.afterSeq === undefined ? {} : { afterSeq: query.afterSeq }),
    limit,
  });
}
