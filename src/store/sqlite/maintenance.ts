import type { StoreMaintenance } from '../../core/ports/maintenance.js';
import { judgeSchema, type SchemaCompatibility } from '../../core/schema-compatibility.js';
import { EXPIRED_EVENT_RETENTION_MS, toLimit } from '../../core/store-rules.js';
import type { TaskRecord } from '../../core/task.js';
import type { SqliteContext } from './context.js';
import { MIGRATIONS, readAppliedMigrations } from './migrations.js';

/** Free pages one {@link SqliteMaintenance.compact} returns to the file system (4 MiB at the default page size). */
const VACUUM_PAGES = 1024;

/** Maintenance on SQLite (see {@link StoreMaintenance}); `close` is the store's own (it ends the connection). */
export class SqliteMaintenance implements Omit<StoreMaintenance, 'close'> {
  constructor(private readonly ctx: SqliteContext) {}

  /** See {@link StoreMaintenance.expireDue}: judged at the store clock's now. */
  async expireDue(limit: number): Promise<string[]> {
    const { stmt } = this.ctx;
    return this.ctx.committer.enqueue((events) => {
      const now = this.ctx.clock.now();
      const due = stmt.dueForExpiry.all({ now, limit: toLimit(limit) }) as Array<{ task_id: string; status: string }>;
      for (const { task_id: taskId, status } of due) {
        this.ctx.append(events, taskId, 'expired', status as TaskRecord['status'], now, null);
        stmt.deleteTask.run({ taskId });
        stmt.deleteTaskEvents.run({ taskId });
      }
      stmt.pruneTombstones.run({ cutoff: now - EXPIRED_EVENT_RETENTION_MS, limit: toLimit(limit) });
      // Lapsed idempotency keys go with the same sweep (their window, not the TTL, decides).
      this.ctx.ledger.purgeKeys.run({ now, limit: toLimit(limit) });
      return due.map((row) => row.task_id);
    });
  }

  /** See {@link StoreMaintenance.compact}: up to {@link VACUUM_PAGES} free pages back to the file system per call. */
  async compact(): Promise<void> {
    await this.ctx.committer.enqueue(() => this.ctx.db.pragma(`incremental_vacuum(${VACUUM_PAGES})`));
  }

  /** See {@link StoreMaintenance.schemaStatus}: the rows of `schema_migrations` judged against this code's migrations. */
  async schemaStatus(): Promise<SchemaCompatibility> {
    const rows = await this.ctx.readDurable('read the schema version', () => readAppliedMigrations(this.ctx.db));
    return judgeSchema(rows, MIGRATIONS);
  }
}
