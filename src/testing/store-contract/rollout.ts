import { describe, expect, it } from 'vitest';

import { GLOBAL_SWITCH, type KillSwitchRecord, switchFor } from '../../core/kill-switch.js';
import type { TaskStore } from '../../core/store.js';

/**
 * The kill-switch part of the {@link TaskStore} contract (issue 15): one row per scope, replaced on a second set,
 * gone after a clear; a tool's own switch wins over the global one.
 */
export function describeRolloutContract(ctx: { store(): TaskStore }): void {
  const record = (overrides: Partial<KillSwitchRecord> = {}): KillSwitchRecord => ({
    scope: GLOBAL_SWITCH,
    fallback: null,
    reason: null,
    setBy: 'local',
    setAt: 1_700_000_000_000,
    ...overrides,
  });

  describe('kill switches', () => {
    it('sets, replaces and clears switches per scope; a tool switch wins over the global one', async () => {
      const store = ctx.store();
      for (const existing of await store.listKillSwitches()) await store.clearKillSwitch(existing.scope);
      expect(await store.listKillSwitches()).toEqual([]);
      await store.setKillSwitch(record({ reason: 'incident 42' }));
      await store.setKillSwitch(record({ scope: 'slow_tool', fallback: 'sync', setBy: 'https://issuer.example|ops|acme', setAt: 1_700_000_000_500 }));
      await store.setKillSwitch(record({ reason: 'incident 43', fallback: 'reject' }));
      const rows = await store.listKillSwitches();
      expect(rows).toEqual([
        record({ reason: 'incident 43', fallback: 'reject' }),
        record({ scope: 'slow_tool', fallback: 'sync', setBy: 'https://issuer.example|ops|acme', setAt: 1_700_000_000_500 }),
      ]);
      expect(switchFor(rows, 'slow_tool')?.fallback).toBe('sync');
      expect(switchFor(rows, 'other_tool')?.fallback).toBe('reject');
      expect(await store.clearKillSwitch(GLOBAL_SWITCH)).toBe(true);
      expect(await store.clearKillSwitch(GLOBAL_SWITCH)).toBe(false);
      const left = await store.listKillSwitches();
      expect(left.map((row) => row.scope)).toEqual(['slow_tool']);
      expect(switchFor(left, 'other_tool')).toBeUndefined();
      expect(await store.clearKillSwitch('slow_tool')).toBe(true);
      expect(await store.listKillSwitches()).toEqual([]);
    });
  });
}
