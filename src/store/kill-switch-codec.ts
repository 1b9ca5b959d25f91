import type { KillSwitchFallback, KillSwitchRecord } from '../core/kill-switch.js';

/** A `kill_switches` row as both drivers return it (`set_at` is a bigint in PostgreSQL, read as a string). */
export interface KillSwitchRow {
  scope: string;
  fallback: string | null;
  reason: string | null;
  set_by: string;
  set_at: number | string;
}

/** Columns of `kill_switches`, in insert order. */
export const KILL_SWITCH_COLUMNS = 'scope, fallback, reason, set_by, set_at';

/** A row as a record. */
export function toKillSwitchRecord(row: KillSwitchRow): KillSwitchRecord {
  return { scope: row.scope, fallback: row.fallback as KillSwitchFallback | null, reason: row.reason, setBy: row.set_by, setAt: Number(row.set_at) };
}

/** A record as insert values, {@link KILL_SWITCH_COLUMNS} order. */
export function killSwitchValues(record: KillSwitchRecord): [string, string | null, string | null, string, number] {
  return [record.scope, record.fallback, record.reason, record.setBy, record.setAt];
}
