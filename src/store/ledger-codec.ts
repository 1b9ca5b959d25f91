import type { AuditEntry, AuditRecord, IdempotencyRecord, NewOperation, OperationRecord, OperationStatus } from '../core/ledger.js';
import type { JsonObject, TaskGeneration } from '../core/task.js';

/** An `idempotency_keys` row as both drivers return it (PostgreSQL `bigint` parsed to number by the pool). */
export interface IdempotencyRow {
  owner_key: string;
  generation: string;
  idem_key: string;
  tool_name: string;
  request_digest: string;
  task_id: string | null;
  created_at: number | string;
  expires_at: number | string;
}

/** An `operations` row. */
export interface OperationRow {
  operation_id: string;
  op_key: string;
  task_id: string;
  owner_key: string;
  tool_name: string;
  effect: string;
  target: string;
  object_version: string | null;
  status: string;
  receipt: string | null;
  detail: string | null;
  created_at: number | string;
  updated_at: number | string;
}

export const IDEMPOTENCY_COLUMNS = 'owner_key, generation, idem_key, tool_name, request_digest, task_id, created_at, expires_at';
export const OPERATION_COLUMNS =
  'operation_id, op_key, task_id, owner_key, tool_name, effect, target, object_version, status, receipt, detail, created_at, updated_at';

export function toIdempotencyRecord(row: IdempotencyRow): IdempotencyRecord {
  return {
    ownerKey: row.owner_key,
    generation: row.generation as TaskGeneration,
    key: row.idem_key,
    toolName: row.tool_name,
    requestDigest: row.request_digest,
    taskId: row.task_id,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
  };
}

export function toOperationRecord(row: OperationRow): OperationRecord {
  return {
    operationId: row.operation_id,
    key: row.op_key,
    taskId: row.task_id,
    ownerKey: row.owner_key,
    toolName: row.tool_name,
    effect: row.effect,
    target: row.target,
    objectVersion: row.object_version,
    status: row.status as OperationStatus,
    receipt: row.receipt === null ? null : (JSON.parse(row.receipt) as JsonObject),
    detail: row.detail,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** The parameters of an operation INSERT, in {@link OPERATION_COLUMNS} order. */
export function newOperationValues(operation: NewOperation): unknown[] {
  const { operationId, key, taskId, ownerKey, toolName, effect, target, objectVersion, createdAt } = operation;
  return [operationId, key, taskId, ownerKey, toolName, effect, target, objectVersion, 'pending', null, null, createdAt, createdAt];
}

/** An `audit_log` row. */
export interface AuditRow {
  seq: number | string;
  at: number | string;
  kind: string;
  owner_key: string;
  scopes: string | null;
  tool: string | null;
  task_id: string | null;
  arguments_digest: string | null;
  outcome: string | null;
  detail: string | null;
}

export const AUDIT_COLUMNS = 'at, kind, owner_key, scopes, tool, task_id, arguments_digest, outcome, detail';

export function toAuditRecord(row: AuditRow): AuditRecord {
  return {
    seq: Number(row.seq),
    at: Number(row.at),
    kind: row.kind as AuditRecord['kind'],
    ownerKey: row.owner_key,
    scopes: row.scopes,
    tool: row.tool,
    taskId: row.task_id,
    argumentsDigest: row.arguments_digest,
    outcome: row.outcome,
    detail: row.detail === null ? null : (JSON.parse(row.detail) as JsonObject),
  };
}

/** The parameters of an audit INSERT, in {@link AUDIT_COLUMNS} order. */
export function auditValues(entry: AuditEntry): unknown[] {
  return [
    entry.at,
    entry.kind,
    entry.ownerKey,
    entry.scopes,
    entry.tool,
    entry.taskId,
    entry.argumentsDigest,
    entry.outcome,
    entry.detail === null ? null : JSON.stringify(entry.detail),
  ];
}
