import { type KillSwitchRecord, type KillSwitchState, type KillSwitchStore, switchFor } from '../../core/kill-switch.js';
import type { Logger } from '../../core/logger.js';

/** What `/readyz` and the admin API report about the kill switch (defined in core, beside the store port). */
export type { KillSwitchState };

/**
 * This process's view of the stored kill switch: re-read every `refreshMs` (default 500 ms) on both stores alike,
 * so a switch set by any instance or by `mcp-tasks admin kill-switch --store` reaches every instance within a
 * second, and asked synchronously on the hot path. A failed read keeps the last known switches (a store outage
 * neither turns a switch off nor on) and is logged once per outage.
 */
export class KillSwitchCache {
  private switches: KillSwitchRecord[] = [];
  private readAt: number | null = null;
  private error: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly store: KillSwitchStore,
    private readonly logger: Logger,
    private readonly refreshMs = 500,
  ) {}

  /** Read now and then every `refreshMs`; resolves after the first read (failed or not). */
  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Re-read the store now (also after this process changed a switch, so its own answer is current at once). */
  refresh(): Promise<void> {
    this.reading ??= this.store
      .listKillSwitches()
      .then((switches) => {
        if (this.error !== undefined) this.logger.info({}, 'kill switch readable again');
        // A first read, a store readable again, or other rows: what an operator's view shows has changed.
        const changed = this.readAt === null || this.error !== undefined || JSON.stringify(switches) !== JSON.stringify(this.switches);
        this.switches = switches;
        this.readAt = Date.now();
        this.error = undefined;
        if (changed) for (const listener of this.listeners) listener();
      })
      .catch((error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        const first = this.error === undefined;
        if (first) this.logger.warn({ err: error }, 'kill switch not readable; keeping the last known switches');
        this.error = message;
        // The start of an outage is news to a watching operator; its repeats are not.
        if (first) for (const listener of this.listeners) listener();
      })
      .finally(() => (this.reading = undefined));
    return this.reading;
  }

  /**
   * Call `listener` after each read that changed what {@link state} shows: other switches, the first read, the start
   * or end of a store outage — never for a re-read that found the same. Returns the unsubscribe.
   */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** The switch in force for `tool` (its own, else the global one), or `undefined` when task mode is on. */
  switchFor(tool: string): KillSwitchRecord | undefined {
    return switchFor(this.switches, tool);
  }

  state(): KillSwitchState {
    const state = this.readAt === null ? 'unknown' : this.switches.length === 0 ? 'off' : this.switches.some((row) => row.scope === '*') ? 'on' : 'partial';
    return { state, switches: [...this.switches], readAt: this.readAt, ...(this.error === undefined ? {} : { error: this.error }) };
  }
}
