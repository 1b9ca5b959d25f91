/**
 * The kill-switch control shared by the admin API and the dashboard (issue 16 / issue 15 item 6), on a real SQLite
 * file: the CLI's checks (unknown tool, bad fallback, long reason → KillSwitchInputError, nothing written), the write
 * recorded with the caller as `setBy`, and the change signal the dashboard's event stream rides on — once per
 * change, also for a write by another handle on the same file, and never for a refresh that found nothing new
 * (the negative control: a signal on every refresh would be a busy feed); each change through it audited as
 * `kill_switch` (who, on/off, scope, fallback; never the reason's prose).
 */
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { KillSwitchInputError, type KillSwitchView } from '../../src/core/kill-switch.js';
import { silentLogger } from '../../src/core/logger.js';
import { KillSwitchCache } from '../../src/ops/rollout/kill-switch.js';
import { createKillSwitchControl } from '../../src/ops/rollout/kill-switch-control.js';
import { openSqliteTaskStore } from '../../src/store/sqlite/index.js';
import { makeTempDir } from '../helpers/temp-dir.js';

describe('kill-switch control (admin API and dashboard)', () => {
  const temp = makeTempDir('mcp-tasks-ks-control-');
  const path = join(temp.dir, 'tasks.db');
  afterAll(() => temp.remove());

  it('checks input like the CLI, records who set it, and signals each change once (another handle’s write too), never an unchanged refresh', async () => {
    const store = openSqliteTaskStore({ path });
    const other = openSqliteTaskStore({ path });
    const cache = new KillSwitchCache(store, silentLogger, 60_000);
    await cache.refresh();
    const control = createKillSwitchControl({
      store,
      cache,
      tools: ['export_job'],
      defaultFallback: 'reject',
      logger: silentLogger,
      now: () => 1_700_000_000_000,
    });
    const seen: KillSwitchView[] = [];
    const unwatch = control.watch((view) => seen.push(view));
    try {
      for (const bad of [{ tool: 'no_such_tool' }, { fallback: 'maybe' }, { reason: 'x'.repeat(501) }, { tool: 42 }]) {
        await expect(control.turnOn(bad, 'someone')).rejects.toBeInstanceOf(KillSwitchInputError);
      }
      await expect(control.turnOff('no_such_tool', 'someone')).rejects.toBeInstanceOf(KillSwitchInputError);
      expect(await store.listKillSwitches()).toEqual([]);
      expect(seen).toEqual([]);

      const on = await control.turnOn({ tool: 'export_job', fallback: 'sync', reason: 'incident 7' }, 'https://issuer.test|oncall|acme');
      expect(on).toMatchObject({
        state: 'partial',
        defaultFallback: 'reject',
        tools: ['export_job'],
        switches: [{ scope: 'export_job', fallback: 'sync', reason: 'incident 7', setBy: 'https://issuer.test|oncall|acme', setAt: 1_700_000_000_000 }],
      });
      expect(seen.map((view) => view.state)).toEqual(['partial']);

      // Unchanged refreshes (the cache's timer, a GET) say nothing.
      await control.read();
      await cache.refresh();
      expect(seen).toHaveLength(1);

      // Another handle on the same file (the CLI's --store form): seen at the next refresh.
      await other.setKillSwitch({ scope: '*', fallback: null, reason: null, setBy: 'local', setAt: 1 });
      await cache.refresh();
      expect(seen.map((view) => view.state)).toEqual(['partial', 'on']);

      expect(await control.turnOff(undefined, 'https://issuer.test|oncall|acme')).toMatchObject({ cleared: true, state: 'partial' });
      expect(await control.turnOff(undefined, 'https://issuer.test|oncall|acme')).toMatchObject({ cleared: false, state: 'partial' });
      expect((await control.turnOff('export_job', 'https://issuer.test|oncall|acme')).state).toBe('off');
      expect(seen.map((view) => view.state)).toEqual(['partial', 'on', 'partial', 'off']);

      unwatch();
      await control.turnOn({}, 'x');
      expect(seen).toHaveLength(4);

      // Every change through the control is audited (who, on/off, scope, fallback); refused input and the other
      // handle's direct write are not (that one did not go through a control).
      const audit = await store.listAudit({ kind: 'kill_switch', limit: 100 });
      expect(audit.map(({ ownerKey, outcome, tool, detail }) => [ownerKey, outcome, tool, detail])).toEqual([
        ['https://issuer.test|oncall|acme', 'on', 'export_job', { scope: 'export_job', fallback: 'sync' }],
        ['https://issuer.test|oncall|acme', 'off', null, { scope: '*' }],
        ['https://issuer.test|oncall|acme', 'already off', null, { scope: '*' }],
        ['https://issuer.test|oncall|acme', 'off', 'export_job', { scope: 'export_job' }],
        ['x', 'on', null, { scope: '*', fallback: null }],
      ]);
      expect(JSON.stringify(audit)).not.toContain('incident 7');

      // A store outage is signalled once when it starts and once when it ends (the switches stay in force meanwhile);
      // the read fault is injected, a lost disk cannot be caused here.
      const outage: Array<string | undefined> = [];
      const stopOutage = control.watch((view) => outage.push(view.error === undefined ? view.state : 'error'));
      const list = store.listKillSwitches.bind(store);
      store.listKillSwitches = () => Promise.reject(new Error('disk gone'));
      await cache.refresh();
      await cache.refresh();
      expect(cache.state()).toMatchObject({ state: 'on', error: 'disk gone' });
      store.listKillSwitches = list;
      await cache.refresh();
      await cache.refresh();
      expect(outage).toEqual(['error', 'on']);
      stopOutage();
    } finally {
      await store.close();
      await other.close();
    }
  });
});
