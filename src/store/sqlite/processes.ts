import type { ProcessRegistry } from '../../core/ports/processes.js';
import type { NewProcessEntry, ProcessRecord, RegisterProcessResult } from '../../core/process-record.js';
import { type ProcessRow, toProcess } from '../process-row.js';
import type { SqliteContext } from './context.js';
import { releaseAllOf } from './leases.js';

/** The process registry on SQLite (see {@link ProcessRegistry}): judged and written in one transaction at the store clock's now. */
export class SqliteProcesses implements ProcessRegistry {
  constructor(private readonly ctx: SqliteContext) {}

  async registerProcess(entry: NewProcessEntry, ttlMs: number, replaceToken?: string): Promise<RegisterProcessResult> {
    const { stmt } = this.ctx;
    return this.ctx.committer.enqueue(() => {
      const now = this.ctx.clock.now();
      const row = stmt.getProcess.get({ instanceId: entry.instanceId }) as ProcessRow | undefined;
      const previous = row ? toProcess(row, now) : undefined;
      if (previous?.live && previous.token !== entry.token && previous.token !== replaceToken) return { registered: false, holder: previous };
      stmt.upsertProcess.run({ ...entry, now, ttlMs });
      if (previous) stmt.clearProcessDraining.run({ instanceId: entry.instanceId, token: entry.token });
      return { registered: true, previous };
    });
  }

  async heartbeatProcess(instanceId: string, token: string, ttlMs: number): Promise<boolean> {
    return this.ctx.committer.enqueue(() => this.ctx.stmt.heartbeatProcess.run({ instanceId, token, ttlMs, now: this.ctx.clock.now() }).changes > 0);
  }

  async markProcessDraining(instanceId: string, token: string): Promise<boolean> {
    return this.ctx.committer.enqueue(() => {
      // `changes` counts the upsert's update too, so a second mark of the same token is `true` as well.
      return this.ctx.stmt.markProcessDraining.run({ instanceId, token, now: this.ctx.clock.now() }).changes > 0;
    });
  }

  async deregisterProcess(instanceId: string, token: string): Promise<void> {
    await this.ctx.committer.enqueue(() => this.ctx.stmt.deleteProcess.run({ instanceId, token }));
  }

  async listProcesses(): Promise<ProcessRecord[]> {
    const now = this.ctx.clock.now();
    const rows = (await this.ctx.readDurable('list processes', () => this.ctx.stmt.listProcesses.all())) as ProcessRow[];
    return rows.map((row) => toProcess(row, now));
  }

  async reapLapsedProcesses(exceptInstanceId?: string): Promise<{ instanceIds: string[]; taskIds: string[] }> {
    return this.ctx.committer.enqueue((events) => {
      const now = this.ctx.clock.now();
      const instanceIds = (this.ctx.stmt.lapsedProcesses.all({ now }) as Array<{ instance_id: string }>)
        .map((row) => row.instance_id)
        .filter((instanceId) => instanceId !== exceptInstanceId);
      const taskIds: string[] = [];
      for (const instanceId of instanceIds) {
        taskIds.push(...releaseAllOf(this.ctx, events, instanceId, now));
        this.ctx.stmt.deleteLapsedProcess.run({ instanceId, now });
      }
      return { instanceIds, taskIds };
    });
  }
}
