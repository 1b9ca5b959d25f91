import type { ProcessRegistry } from '../../core/ports/processes.js';
import type { NewProcessEntry, ProcessRecord, RegisterProcessResult } from '../../core/process-record.js';
import { type ProcessRow, toProcess } from '../process-row.js';
import type { PostgresContext } from './context.js';
import { releaseAllOf } from './leases.js';
import { SQL } from './sql.js';

/** The process registry on PostgreSQL (see {@link ProcessRegistry}): heartbeats judged on the database clock. */
export class PostgresProcesses implements ProcessRegistry {
  constructor(private readonly ctx: PostgresContext) {}

  /** See {@link ProcessRegistry.registerProcess}: the id's row locked while it is judged, on the database clock. */
  async registerProcess(entry: NewProcessEntry, ttlMs: number, replaceToken?: string): Promise<RegisterProcessResult> {
    const params = [entry.instanceId, entry.role, entry.token, entry.host, entry.pid, entry.settingsDigest, this.ctx.clockNow(), ttlMs];
    return this.ctx.batcher.enqueue(async (tx): Promise<RegisterProcessResult> => {
      if ((await tx.query(SQL.insertProcess, params)).length > 0) return { registered: true, previous: undefined };
      const [row] = await tx.query<ProcessRow & { store_now: number }>(SQL.lockProcess, [entry.instanceId, this.ctx.clockNow()]);
      const previous = row ? toProcess(row, row.store_now) : undefined;
      if (previous?.live && previous.token !== entry.token && previous.token !== replaceToken) return { registered: false, holder: previous };
      await tx.query(previous ? SQL.replaceProcess : SQL.insertProcess, params);
      if (previous) await tx.query(SQL.clearProcessDraining, [entry.instanceId, entry.token]);
      return { registered: true, previous };
    });
  }

  /** See {@link ProcessRegistry.heartbeatProcess}: one statement outside the write batch (see `writeOutsideBatch`). */
  async heartbeatProcess(instanceId: string, token: string, ttlMs: number): Promise<boolean> {
    const rows = await this.ctx.writeOutsideBatch('heartbeat', 'record a heartbeat', SQL.heartbeatProcess, [instanceId, token, this.ctx.clockNow(), ttlMs]);
    return rows.length > 0;
  }

  /** See {@link ProcessRegistry.markProcessDraining}: one write of the batch, on the database clock. */
  async markProcessDraining(instanceId: string, token: string): Promise<boolean> {
    const rows = await this.ctx.batcher.enqueue((tx) => tx.query(SQL.markProcessDraining, [instanceId, token, this.ctx.clockNow()]));
    return rows.length > 0;
  }

  async deregisterProcess(instanceId: string, token: string): Promise<void> {
    await this.ctx.batcher.enqueue((tx) => tx.query(SQL.deleteProcess, [instanceId, token]));
  }

  async listProcesses(): Promise<ProcessRecord[]> {
    return (await this.ctx.read<ProcessRow & { store_now: number }>('list processes', SQL.listProcesses, [this.ctx.clockNow()])).map((row) =>
      toProcess(row, row.store_now),
    );
  }

  async reapLapsedProcesses(exceptInstanceId?: string): Promise<{ instanceIds: string[]; taskIds: string[] }> {
    return this.ctx.batcher.enqueue(async (tx) => {
      const instanceIds = (await tx.query<{ instance_id: string }>(SQL.reapProcesses, [this.ctx.clockNow(), exceptInstanceId ?? null]))
        .map((row) => row.instance_id)
        .sort();
      const taskIds: string[] = [];
      for (const instanceId of instanceIds) taskIds.push(...(await releaseAllOf(this.ctx, tx, instanceId)));
      return { instanceIds, taskIds };
    });
  }
}
