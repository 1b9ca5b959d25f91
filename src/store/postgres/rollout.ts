import type { KillSwitchRecord } from '../../core/kill-switch.js';
import type { KillSwitchStore } from '../../core/ports/rollout.js';
import { KILL_SWITCH_COLUMNS, type KillSwitchRow, killSwitchValues, toKillSwitchRecord } from '../kill-switch-codec.js';
import type { PostgresContext } from './context.js';
import { SCHEMA } from './migrations.js';

/** The kill switch on PostgreSQL (see {@link KillSwitchStore}): `mcp_tasks.kill_switches`, written through the batch. */
export class PostgresRollout implements KillSwitchStore {
  constructor(private readonly ctx: PostgresContext) {}

  async listKillSwitches(): Promise<KillSwitchRecord[]> {
    const rows = await this.ctx.read<KillSwitchRow>('read the kill switches', `SELECT ${KILL_SWITCH_COLUMNS} FROM ${SCHEMA}.kill_switches ORDER BY scope`, []);
    return rows.map(toKillSwitchRecord);
  }

  async setKillSwitch(record: KillSwitchRecord): Promise<void> {
    await this.ctx.batcher.enqueue((tx) =>
      tx.query(
        `INSERT INTO ${SCHEMA}.kill_switches (${KILL_SWITCH_COLUMNS}) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (scope) DO UPDATE SET fallback = EXCLUDED.fallback, reason = EXCLUDED.reason, set_by = EXCLUDED.set_by, set_at = EXCLUDED.set_at`,
        killSwitchValues(record),
      ),
    );
  }

  async clearKillSwitch(scope: string): Promise<boolean> {
    const rows = await this.ctx.batcher.enqueue((tx) => tx.query(`DELETE FROM ${SCHEMA}.kill_switches WHERE scope = $1 RETURNING 1`, [scope]));
    return rows.length > 0;
  }
}
