import type { StoreMaintenance } from '../../core/ports/maintenance.js';
import { type AppliedMigration, judgeSchema, type SchemaCompatibility } from '../../core/schema-compatibility.js';
import { EXPIRED_EVENT_RETENTION_MS, toLimit } from '../../core/store-rules.js';
import type { TaskRecord } from '../../core/task.js';
import type { PostgresContext } from './context.js';
import { LEDGER_SQL } from './ledger-sql.js';
import { APPLIED_MIGRATIONS_SQL, POSTGRES_MIGRATIONS } from './migrations.js';
import { SQL } from './sql.js';

/** Maintenance on PostgreSQL (see {@link StoreMaintenance}); `close` is the store's own (it ends the pool). */
export class PostgresMaintenance implements Omit<StoreMaintenance, 'close'> {
  constructor(private readonly ctx: PostgresContext) {}

  /** See {@link StoreMaintenance.expireDue}: judged on the store's clock; `SKIP LOCKED` between concurrent sweepers. */
  async expireDue(limit: number): Promise<string[]> {
    return this.ctx.batcher.enqueue(async (tx) => {
      const rows = await tx.query<{ task_id: string; status: TaskRecord['status']; store_now: number }>(SQL.expireDue, [this.ctx.clockNow(), toLimit(limit)]);
      for (const row of rows) tx.append(row.task_id, 'expired', row.status, row.store_now, null);
      await tx.query(SQL.pruneTombstones, [this.ctx.clockNow(), toLimit(limit), EXPIRED_EVENT_RETENTION_MS]);
      // Lapsed idempotency keys go with the same sweep (their window, not the TTL, decides).
      await tx.query(LEDGER_SQL.purgeKeys, [this.ctx.clockNow(), toLimit(limit)]);
      return rows.map((row) => row.task_id);
    });
  }

  /** See {@link StoreMaintenance.compact}: nothing to do, autovacuum reclaims dead rows on its own. */
  async compact(): Promise<void> {}

  /** See {@link StoreMaintenance.schemaStatus}: the rows of `schema_migrations` judged against this code's migrations. */
  async schemaStatus(): Promise<SchemaCompatibility> {
    const rows = await this.ctx.read<AppliedMigration>('read the schema version', APPLIED_MIGRATIONS_SQL, []);
    return judgeSchema(rows, POSTGRES_MIGRATIONS);
  }
}
