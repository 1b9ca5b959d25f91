import { type KillSwitchControl, type KillSwitchFallback, KillSwitchInputError, type KillSwitchStore, type KillSwitchView } from '../../core/kill-switch.js';
import type { AuditStore } from '../../core/ledger.js';
import type { Logger } from '../../core/logger.js';
import { auditKillSwitch } from '../../service/kill-switch-audit.js';
import { AdminInputError, switchRecord, type SwitchRequest, switchScope } from '../admin.js';
import type { KillSwitchCache } from './kill-switch.js';

/** What {@link createKillSwitchControl} changes and reads. */
export interface KillSwitchControlOptions {
  /** Where the switches live and where each change is audited (`kill_switch` entries). */
  store: KillSwitchStore & AuditStore;
  cache: KillSwitchCache;
  /** Names of the served tools (a switch for another name is refused). */
  tools: readonly string[];
  /** Fallback a switch set without one gets. */
  defaultFallback: KillSwitchFallback;
  /** Told when an audit write fails (the change stands). */
  logger: Logger;
  now?: () => number;
}

/** The admin checks' refusal in the core's terms, so surfaces outside `ops/` (the dashboard) can map it to 400. */
function checked<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    throw error instanceof AdminInputError ? new KillSwitchInputError(error.message) : error;
  }
}

/**
 * The {@link KillSwitchControl} behind the admin API and the dashboard: the CLI's own checks ({@link switchRecord},
 * {@link switchScope}), the store write, a `kill_switch` audit entry, then a re-read of this process's
 * {@link KillSwitchCache}.
 */
export function createKillSwitchControl(options: KillSwitchControlOptions): KillSwitchControl {
  const now = options.now ?? Date.now;
  const view = (): KillSwitchView => ({ ...options.cache.state(), defaultFallback: options.defaultFallback, tools: [...options.tools] });
  return {
    async read() {
      await options.cache.refresh();
      return view();
    },
    async turnOn(request, setBy) {
      const record = checked(() => switchRecord(request as SwitchRequest, options.tools, setBy, now()));
      await options.store.setKillSwitch(record);
      await auditKillSwitch(options.store, { action: 'on', scope: record.scope, fallback: record.fallback, setBy }, options.logger, record.setAt);
      await options.cache.refresh();
      return view();
    },
    async turnOff(tool, setBy) {
      const scope = checked(() => switchScope(tool, options.tools));
      const cleared = await options.store.clearKillSwitch(scope);
      await auditKillSwitch(options.store, { action: 'off', scope, fallback: null, cleared, setBy }, options.logger, now());
      await options.cache.refresh();
      return { ...view(), cleared };
    },
    watch(listener) {
      return options.cache.onChange(() => listener(view()));
    },
  };
}
