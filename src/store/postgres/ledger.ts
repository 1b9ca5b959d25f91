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
import { eachUnderSavepoint, type MergedWork, type Query, type Settled } from './batch.js';
import type { PostgresContext } from './context.js';
import { LEDGER_SQL } from './ledger-sql.js';
import type { PostgresRows } from './rows.js';
import { SQL } from './sql.js';

/** The ledger on PostgreSQL (see {@link LedgerStore}): idempotency keys, operations and the audit trail (`ledger-sql.ts`). */
export class PostgresLedger implements LedgerStore {
  /**
   * Audit appends of one batch as one multi-row INSERT; a batch of nothing else runs it as one autocommit statement.
   * The service appends its audit entry after the operation committed, so on its own batch it used to cost
   * BEGIN, INSERT and COMMIT: three of the ~17 statements of a PostgreSQL round trip (issue 25, `bench:instances`).
   */
  private readonly audits: MergedWork<readonly AuditEntry[], void> = {
    run: (tx, items, isolated) => this.insertAudit(tx.query, items, isolated),
    runAlone: async (query, items) => ({ results: await this.insertAudit(query, items, false), events: [] }),
  };

  constructor(
    private readonly ctx: PostgresContext,
    private readonly rows: PostgresRows,
  ) {}

  async findIdempotencyKey(scope: { ownerKey: string; generation: TaskGeneration }, key: string): Promise<IdempotencyRecord | undefined> {
    const [row] = await this.ctx.read<IdempotencyRow>('read an idempotency key', LEDGER_SQL.findKey, [
      scope.ownerKey,
      scope.generation,
      key,
      this.ctx.clockNow(),
    ]);
    return row === undefined ? undefined : toIdempotencyRecord(row);
  }

  /**
   * See {@link LedgerStore.claimIdempotencyKey}: the unique key row settles concurrent claims of every instance. With
   * a quota, the owner's advisory lock comes first (always before a key's row lock, so two claims cannot wait on each
   * other crosswise); then a live key answers `existing`, and only a free one is counted against the quota.
   */
  claimIdempotencyKey(claim: IdempotencyClaim, task?: NewTask, quota?: CreateQuota): Promise<IdempotencyClaimResult> {
    return this.ctx.batcher.enqueue(async (tx): Promise<IdempotencyClaimResult> => {
      const scope = [claim.ownerKey, claim.generation, claim.key];
      if (task && quota) {
        await tx.query(SQL.lockOwner, [claim.ownerKey]);
        const [live] = await tx.query<IdempotencyRow>(LEDGER_SQL.findKey, [...scope, this.ctx.clockNow()]);
        if (live) return { claimed: false, existing: toIdempotencyRecord(live) };
        const refused = await refusalFor(this.ctx, tx, task, quota);
        if (refused) return { claimed: false, refused };
      }
      const won = await tx.query(LEDGER_SQL.claimKey, [...scope, claim.toolName, claim.requestDigest, claim.taskId, claim.windowMs, this.ctx.clockNow()]);
      if (won.length === 0) {
        const [row] = await tx.query<IdempotencyRow>(LEDGER_SQL.keyRow, scope);
        return { claimed: false, existing: toIdempotencyRecord(row as IdempotencyRow) };
      }
      return task === undefined ? { claimed: true } : { claimed: true, task: await this.rows.insertOne(tx, task) };
    });
  }

  openOperation(operation: NewOperation): Promise<OperationRecord> {
    return this.ctx.batcher.enqueue(async (tx) => {
      await tx.query(LEDGER_SQL.insertOperation, newOperationValues(operation));
      const [row] = await tx.query<OperationRow>(LEDGER_SQL.operationByKey, [operation.taskId, operation.key]);
      return toOperationRecord(row as OperationRow);
    });
  }

  settleOperation(operationId: string, settlement: OperationSettlement): Promise<OperationRecord | undefined> {
    return this.ctx.batcher.enqueue(async (tx) => {
      const receipt = settlement.receipt == null ? null : JSON.stringify(settlement.receipt);
      const [row] = await tx.query<OperationRow>(LEDGER_SQL.settleOperation, [
        operationId,
        settlement.status,
        receipt,
        settlement.detail ?? null,
        settlement.now,
        settlement.from,
      ]);
      return row === undefined ? undefined : toOperationRecord(row);
    });
  }

  async getOperation(operationId: string): Promise<OperationRecord | undefined> {
    const [row] = await this.ctx.read<OperationRow>('read an operation', LEDGER_SQL.operationById, [operationId]);
    return row === undefined ? undefined : toOperationRecord(row);
  }

  async listOperations(filter: OperationFilter): Promise<OperationRecord[]> {
    const rows = await this.ctx.read<OperationRow>('list operations', LEDGER_SQL.listOperations, [
      filter.ownerKey ?? null,
      filter.taskId ?? null,
      filter.statuses ?? null,
      toLimit(filter.limit),
    ]);
    return rows.map(toOperationRecord);
  }

  async appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.ctx.batcher.enqueueMerged(this.audits, entries);
  }

  /** The entries of every item in one INSERT; `isolated`: one savepoint per item, so a failure rejects that item alone. */
  private async insertAudit(query: Query, items: ReadonlyArray<readonly AuditEntry[]>, isolated: boolean): Promise<Array<Settled<void>>> {
    const insert = async (entries: readonly AuditEntry[]): Promise<void> => {
      const rows = entries.map(auditValues);
      await query(
        LEDGER_SQL.appendAudit,
        rows[0]!.map((_, column) => rows.map((row) => row[column])),
      );
    };
    if (!isolated) {
      await insert(items.flat());
      return items.map(() => ({ ok: true, value: undefined }));
    }
    return eachUnderSavepoint(query, items, insert);
  }

  async listAudit(filter: AuditFilter): Promise<AuditRecord[]> {
    const rows = await this.ctx.read<AuditRow>('read the audit log', LEDGER_SQL.listAudit, [
      filter.afterSeq ?? 0,
      filter.since ?? null,
      filter.tool ?? null,
      filter.ownerKey ?? null,
      toLimit(filter.limit),
      filter.kind ?? null,
    ]);
    return rows.map(toAuditRecord);
  }

  async purgeAudit(before: number, limit: number): Promise<number> {
    const rows = await this.ctx.batcher.enqueue((tx) => tx.query(`${LEDGER_SQL.purgeAudit} RETURNING 1`, [before, toLimit(limit)]));
    return rows.length;
  }
}
