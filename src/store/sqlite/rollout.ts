import type { KillSwitchRecord } from '../../core/kill-switch.js';
import type { KillSwitchStore } from '../../core/ports/rollout.js';
import { KILL_SWITCH_COLUMNS, type KillSwitchRow, killSwitchValues, toKillSwitchRecord } from '../kill-switch-codec.js';
import type { SqliteContext } from './context.js';

/** The kill switch on SQLite (see {@link KillSwitchStore}): the `kill_switches` table, written through the group commit. */
export class SqliteRollout implements KillSwitchStore {
  constructor(private readonly ctx: SqliteContext) {}

  async listKillSwitches(): Promise<KillSwitchRecord[]> {
    const rows = await this.ctx.readDurable('read the kill switches', () =>
      this.ctx.db.prepare(`SELECT ${KILL_SWITCH_COLUMNS} FROM kill_switches ORDER BY scope`).all(),
    );
    return (rows as KillSwitchRow[]).map(toKillSwitchRecord);
  }

  setKillSwitch(record: KillSwitchRecord): Promise<void> {
    return this.ctx.committer.enqueue(() => {
      this.ctx.db.prepare(`INSERT OR REPLACE INTO kill_switches (${KILL_SWITCH_COLUMNS}) VALUES (?, ?, ?, ?, ?)`).run(...killSwitchValues(record));
    });
  }

  clearKillSwitch(scope: string): Promise<boolean> {
    return this.ctx.committer.enqueue(() => this.ctx.db.prepare('DELETE FROM kill_switches WHERE scope = ?').run(scope).changes > 0);
  }
}
