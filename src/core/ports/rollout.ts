import type { KillSwitchRecord } from '../kill-switch.js';

/**
 * The kill switch as the store keeps it (port "rollout", issue 15 item 6; schema: the `kill_switches` migration):
 * one row per scope (`*` or a tool's name); a row present means "on". Readers combine rows with `switchFor`
 * (`core/kill-switch.ts`); the service answers a switched-off tool with `-31003` (`data.reason: "kill_switch"`).
 * Errors: only `StoreError`.
 */
export interface KillSwitchStore {
  /** Every switch that is on, scope order. */
  listKillSwitches(): Promise<KillSwitchRecord[]>;
  /** Turn a scope on (insert or replace its row). */
  setKillSwitch(record: KillSwitchRecord): Promise<void>;
  /** Turn a scope off; `false` when it was not on. */
  clearKillSwitch(scope: string): Promise<boolean>;
}
