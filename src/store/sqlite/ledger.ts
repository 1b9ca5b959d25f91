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
} from '../../core/ledger.js';
import type { CreateQuota } from '../../core/ports/admission.js';
import type { LedgerStore } from '../../core/ports/ledger.js';
import { toLimit } from '../../core/store-rules.js';
import type { NewTask, TaskGeneration } from '../../core/task.js';
import {
  type AuditRow,
  auditValues,
  type IdempotencyRow,
  newOperationValues,
  type OperationRow,
  toAuditRecord,
  toIdempotencyRecord,
  toOperationRecord,
} from '../ledger-codec.js';
import { refusalFor } from './admission.js';
import type { SqliteContext } from './context.js';
import { insertNewTask } from './rows.js';

/** The ledger on SQLite (see {@link LedgerStore}): idempotency keys, operations and the audit trail (`ledger-sql.ts`). */
export class SqliteLedger implements LedgerStore {
  constructor(private readonly ctx: SqliteContext) {}

  async findIdempotencyKey(scope: { ownerKey: string; generation: TaskGeneration }, key: string): Promise<IdempotencyRecord | undefined> {
    const row = await this.ctx.readDurable('read an idempotency key', () => this.ctx.ledger.findKey.get({ ...scope, key, now: this.ctx.clock.now() }));
    return row === undefined ? undefined : toIdempotencyRecord(row as IdempotencyRow);
  }

  /** See {@link LedgerStore.claimIdempotencyKey}: SQLite's write lock serialises claims of every process. */
  claimIdempotencyKey(claim: IdempotencyClaim, task?: NewTask, quota?: CreateQuota): Promise<IdempotencyClaimResult> {
    const { ledger } = this.ctx;
    return this.ctx.committer.enqueue((events): IdempotencyClaimResult => {
      const now = this.ctx.clock.now();
      const scope = { ownerKey: claim.ownerKey, generation: claim.generation, key: claim.key, now };
      ledger.deleteLapsedKey.run(scope);
      const taken = ledger.findKey.get(scope) as IdempotencyRow | undefined;
      if (taken) return { claimed: false, existing: toIdempotencyRecord(taken) };
      // The key is free: the quota decides whether this call creates anything (a taken key replays whatever the quota).
      const refused = task && quota ? refusalFor(this.ctx, task, quota) : undefined;
      if (refused) return { claimed: false, refused };
      const { changes } = ledger.insertKey.run({
        ...scope,
        toolName: claim.toolName,
        requestDigest: claim.requestDigest,
        taskId: claim.taskId,
        windowMs: claim.windowMs,
      });
      if (changes === 0) return { claimed: false, existing: toIdempotencyRecord(ledger.findKey.get(scope) as IdempotencyRow) };
      return task === undefined ? { claimed: true } : { claimed: true, task: insertNewTask(this.ctx, events, task) };
    });
  }

  openOperation(operation: NewOperation): Promise<OperationRecord> {
    return this.ctx.committer.enqueue(() => {
      this.ctx.ledger.insertOperation.run(...newOperationValues(operation));
      return toOperationRecord(this.ctx.ledger.operationByKey.get({ taskId: operation.taskId, key: operation.key }) as OperationRow);
    });
  }

  settleOperation(operationId: string, settlement: OperationSettlement): Promise<OperationRecord | undefined> {
    return this.ctx.committer.enqueue(() => {
      const row = this.ctx.ledger.settleOperation.get({
        operationId,
        status: settlement.status,
        receipt: settlement.receipt == null ? null : JSON.stringify(settlement.receipt),
        detail: settlement.detail ?? null,
        now: settlement.now,
        from: JSON.stringify(settlement.from),
      });
      return row === undefined ? undefined : toOperationRecord(row as OperationRow);
    });
  }

  async getOperation(operationId: string): Promise<OperationRecord | undefined> {
    const row = await this.ctx.readDurable('read an operation', () => this.ctx.ledger.operationById.get({ operationId }));
    return row === undefined ? undefined : toOperationRecord(row as OperationRow);
  }

  async listOperations(filter: OperationFilter): Promise<OperationRecord[]> {
    const rows = await this.ctx.readDurable('list operations', () =>
      this.ctx.ledger.listOperations.all({
        ownerKey: filter.ownerKey ?? null,
        taskId: filter.taskId ?? null,
        statuses: filter.statuses === undefined ? null : JSON.stringify(filter.statuses),
        limit: toLimit(filter.limit),
      }),
    );
    return (rows as OperationRow[]).map(toOperationRecord);
  }

  appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    return this.ctx.committer.enqueue(() => {
      for (const entry of entries) this.ctx.ledger.appendAudit.run(...auditValues(entry));
    });
  }

  async listAudit(filter: AuditFilter): Promise<AuditRecord[]> {
    const rows = await this.ctx.readDurable('read the audit log', () =>
      this.ctx.ledger.listAudit.all({
        afterSeq: filter.afterSeq ?? 0,
        since: filter.since ?? null,
        tool: filter.tool ?? null,
        ownerKey: filter.ownerKey ?? null,
        kind: filter.kind ?? null,
        limit: toLimit(filter.limit),
      }),
    );
    return (rows as AuditRow[]).map(toAuditRecord);
  }

  purgeAudit(before: number, limit: number): Promise<number> {
    return this.ctx.committer.enqueue(() => this.ctx.ledger.purgeAudit.run({ before, limit: toLimit(limit) }).changes);
  }
}
