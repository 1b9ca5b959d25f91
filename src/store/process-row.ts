import type { ProcessRecord } from '../core/process-record.js';

/** A `processes` row as both stores read it (bigints as numbers). */
export interface ProcessRow {
  instance_id: string;
  role: ProcessRecord['role'];
  token: string;
  host: string;
  pid: number;
  settings_digest: string;
  started_at: number;
  heartbeat_at: number;
  expires_at: number;
  /**
   * From `draining_processes`, joined on instance id and token (see `markProcessDraining`); `null` or absent (a
   * schema before the table, read by `doctor`) when the process takes work.
   */
  draining_since?: number | null;
}

/** The registry record of `row`, `live` judged at `now` (the store's clock). */
export function toProcess(row: ProcessRow, now: number): ProcessRecord {
  return {
    instanceId: row.instance_id,
    role: row.role,
    token: row.token,
    host: row.host,
    pid: row.pid,
    settingsDigest: row.settings_digest,
    startedAt: row.started_at,
    heartbeatAt: row.heartbeat_at,
    expiresAt: row.expires_at,
    live: row.expires_at > now,
    drainingSince: row.draining_since ?? null,
  };
}
