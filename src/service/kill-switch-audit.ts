import type { AuditStore } from '../core/ledger.js';
import type { Logger } from '../core/logger.js';
import { appendAudit, killSwitchEntry } from '../ledger/audit.js';

/** A kill-switch change to record: `setBy` the operator's owner key (`local`: the CLI on the store). */
export interface KillSwitchChange {
  action: 'on' | 'off';
  /** `*` or a tool name. */
  scope: string;
  fallback: string | null;
  /** `off` only: whether the switch was on. */
  cleared?: boolean;
  setBy: string;
}

/**
 * Append the audit entry of a kill-switch change (every surface that changes the switch calls this: the admin API,
 * the dashboard, the CLI on the store). A failed write is logged, never turned into an error: the switch is set.
 */
export function auditKillSwitch(store: AuditStore, change: KillSwitchChange, logger: Logger, at = Date.now()): Promise<void> {
  return appendAudit(store, [killSwitchEntry(change, at)], logger);
}
