/**
 * The kill switch as the store keeps it (issue 15 item 6): one row per scope, `*` for every tool or a tool's name.
 * A row present means "on" for that scope; deleting it turns that scope off. Readers combine the rows with
 * {@link switchFor}: a tool's own row wins over the global one, so a per-tool fallback can differ from the global.
 */

/**
 * What a task-augmented call gets while its tool is switched off: `sync` — run inline (only tools that may run
 * inline; bounded by the server's `maxSyncMs`), `reject` — the kill-switch error (`-31003`, `data.reason:
 * "kill_switch"`).
 */
export type KillSwitchFallback = 'sync' | 'reject';

/** The scope of the global switch. Tool names never equal it (tool names are `[A-Za-z0-9_.-]`). */
export const GLOBAL_SWITCH = '*';

/** One stored switch. */
export interface KillSwitchRecord {
  /** {@link GLOBAL_SWITCH} or a tool name. */
  scope: string;
  /** The fallback asked for when it was set; `null`: the server's configured default. */
  fallback: KillSwitchFallback | null;
  /** Why it was set (operator's text, at most 500 characters; never shown to requestors). */
  reason: string | null;
  /** Who set it: the admin caller's owner key, or `local` for the CLI on the store. */
  setBy: string;
  /** Epoch ms. */
  setAt: number;
}

/** The store's port of the kill switch is `core/ports/rollout.ts`; named here too, beside its record. */
export type { KillSwitchStore } from './ports/rollout.js';

/** The switch that applies to `tool` among `records`: its own row, else the global one, else `undefined` (off). */
export function switchFor(records: readonly KillSwitchRecord[], tool: string): KillSwitchRecord | undefined {
  return records.find((record) => record.scope === tool) ?? records.find((record) => record.scope === GLOBAL_SWITCH);
}

/** Longest accepted `reason` (characters). */
export const MAX_SWITCH_REASON_CHARS = 500;

/** The kill switch as an operator sees it (the admin API's `GET /admin/kill-switch`, the dashboard's panel). */
export interface KillSwitchState {
  /** `off`: no switch; `on`: the global switch; `partial`: only some tools; `unknown`: never read yet (store down). */
  state: 'off' | 'on' | 'partial' | 'unknown';
  switches: KillSwitchRecord[];
  /** Epoch ms of the last successful read (`null`: none yet). */
  readAt: number | null;
  /** The last read's error, when it failed (the previous switches stay in force). */
  error?: string;
}

/** {@link KillSwitchState} with what a change may name: the fallback a switch without one gets, the served tools. */
export interface KillSwitchView extends KillSwitchState {
  defaultFallback: KillSwitchFallback;
  tools: string[];
}

/** A refused switch change (unknown tool, bad fallback, reason too long): HTTP 400 on every surface. */
export class KillSwitchInputError extends Error {
  override readonly name = 'KillSwitchInputError';
}

/**
 * The one way an authenticated operator surface (the `/admin/kill-switch` API, the dashboard's panel) reads and
 * changes the kill switch: input checked against the served tools, written to the store, audited (`kill_switch`
 * entries: who, on/off, scope, fallback), and this process's cache re-read at once so its next answer is current. The caller checks scopes first (`admin:read` / `admin:write`).
 */
export interface KillSwitchControl {
  /** Re-read the store and answer the state. */
  read(): Promise<KillSwitchView>;
  /** Turn a scope on, recorded as set by `setBy` (the caller's owner key). Throws {@link KillSwitchInputError}. */
  turnOn(request: { tool?: unknown; fallback?: unknown; reason?: unknown }, setBy: string): Promise<KillSwitchView>;
  /**
   * Turn a scope off (`tool` absent: the global switch) on behalf of `by` (audited); `cleared`: it was on. Throws
   * {@link KillSwitchInputError}.
   */
  turnOff(tool: string | undefined, by: string): Promise<KillSwitchView & { cleared: boolean }>;
  /**
   * Be told each time this process's view of the switches changes (a change by any instance, the CLI on the store,
   * or this process): at most once per cache refresh (default every 500 ms). Returns the unsubscribe.
   */
  watch(listener: (view: KillSwitchView) => void): () => void;
}
