/**
 * Issue 15 item 7: task mode of a tool limited to a canary of owners (stable hash) or an allow-list of tenants;
 * the rest get the fallback; the metrics carry a bounded cohort label.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { silentLogger } from '../../src/core/logger.js';
import { defineTool, textResult } from '../../src/core/tool.js';
import { TasksMetrics } from '../../src/ops/metrics.js';
import { canaryBucket, inCanary, tenantOf } from '../../src/ops/rollout/canary.js';
import { rolloutGate, type RolloutSettings } from '../../src/ops/rollout/gate.js';
import { KillSwitchCache } from '../../src/ops/rollout/kill-switch.js';
import type { Caller } from '../../src/service/caller.js';
import { type RunningTasksServer, startTasksServer } from '../helpers/tasks-server.js';
import { postModern } from '../helpers/wire.js';
import { metricValue } from './support.js';

const owners = Array.from({ length: 1000 }, (_, index) => `https://issuer.example|user-${index}|tenant-${index % 37}`);
const callerOf = (ownerKey: string): Caller => ({
  ownerKey,
  scopes: 'all',
  negotiation: 'per-request',
  generation: 'v2',
  protocolVersion: '2026-07-28',
  clientCapabilities: {},
});

describe('canary cohorts', () => {
  it('splits 1,000 owners within ±5 % of the percentage, for several percentages', () => {
    for (const percent of [10, 25, 50, 90]) {
      const share = owners.filter((owner) => inCanary({ percent }, owner)).length / owners.length;
      expect(Math.abs(share - percent / 100), `${percent} %`).toBeLessThanOrEqual(0.05);
    }
  });

  it('the same owner is always in the same cohort, and raising the percentage only adds owners', () => {
    const at20 = owners.filter((owner) => inCanary({ percent: 20 }, owner));
    expect(owners.filter((owner) => inCanary({ percent: 20 }, owner))).toEqual(at20);
    for (const owner of owners.slice(0, 50)) expect(canaryBucket(owner)).toBe(canaryBucket(owner));
    const at40 = new Set(owners.filter((owner) => inCanary({ percent: 40 }, owner)));
    for (const owner of at20) expect(at40.has(owner)).toBe(true);
    // Negative controls: 0 % takes nobody, 100 % everybody.
    expect(owners.some((owner) => inCanary({ percent: 0 }, owner))).toBe(false);
    expect(owners.every((owner) => inCanary({ percent: 100 }, owner))).toBe(true);
  });

  it('an allow-listed tenant is in the canary whatever its hash; the tenant is the last part of the owner key', () => {
    expect(tenantOf('https://issuer.example|alice|acme')).toBe('acme');
    expect(tenantOf('anonymous')).toBe('');
    const acme = owners.filter((owner) => tenantOf(owner) === 'tenant-3');
    expect(acme.length).toBeGreaterThan(10);
    for (const owner of acme) expect(inCanary({ percent: 0, tenants: ['tenant-3'] }, owner)).toBe(true);
    expect(owners.filter((owner) => inCanary({ percent: 0, tenants: ['tenant-3'] }, owner))).toEqual(acme);
  });

  it('the gate: canary owners may use task mode, the rest get the fallback with reason canary; the kill switch wins over the canary', async () => {
    const store = { listKillSwitches: async () => [] as never[] } as never;
    const cache = new KillSwitchCache(store, silentLogger);
    await cache.refresh();
    const settings: RolloutSettings = { fallback: 'sync', maxSyncMs: 5000, canary: { report: { percent: 30 } } };
    const gate = rolloutGate(cache, settings);
    const verdicts = owners.map((owner) => gate.verdict(callerOf(owner), 'report'));
    const canary = verdicts.filter((verdict) => verdict.allow);
    expect(Math.abs(canary.length / owners.length - 0.3)).toBeLessThanOrEqual(0.05);
    for (const verdict of canary) expect(verdict.cohort).toBe('canary');
    for (const verdict of verdicts.filter((verdict) => !verdict.allow)) expect(verdict).toMatchObject({ fallback: 'sync', reason: 'canary', cohort: 'stable' });
    // A tool without a canary: every owner, no cohort.
    expect(gate.verdict(callerOf(owners[0] as string), 'other')).toEqual({ allow: true, cohort: undefined });
    const switched = new KillSwitchCache(
      { listKillSwitches: async () => [{ scope: '*', fallback: 'reject', reason: null, setBy: 'local', setAt: 0 }] } as never,
      silentLogger,
    );
    await switched.refresh();
    const inCanaryOwner = owners[verdicts.findIndex((verdict) => verdict.allow)] as string;
    expect(rolloutGate(switched, settings).verdict(callerOf(inCanaryOwner), 'report')).toMatchObject({
      allow: false,
      reason: 'kill_switch',
      fallback: 'reject',
      cohort: 'canary',
    });
  });
});

describe('canary on a real server: task mode for the canary, the fallback for the rest, cohort-labelled metrics', () => {
  let running: RunningTasksServer;
  const metrics = new TasksMetrics({ role: 'api' });
  beforeAll(async () => {
    const tool = defineTool({
      name: 'report',
      description: 'Builds a report.',
      execution: 'task-optional',
      idempotent: true,
      inputSchema: z.object({}),
      run: async () => textResult('report'),
    });
    const holder: { cache?: KillSwitchCache } = {};
    running = await startTasksServer({
      tools: [tool],
      hooks: [metrics.serviceHook()],
      // The anonymous owner (no auth) is the one caller: an allow-list of no tenant and 100 % / 0 % decide it.
      gate: {
        verdict: (caller, name) =>
          rolloutGate(holder.cache as KillSwitchCache, { fallback: 'sync', maxSyncMs: 5000, canary: { report: { percent: canaryPercent } } }).verdict(
            caller,
            name,
          ),
      },
    });
    holder.cache = new KillSwitchCache(running.store, silentLogger);
    await holder.cache.refresh();
  });
  afterAll(async () => {
    await running?.close();
  });
  let canaryPercent = 100;

  it('in the canary → a task (cohort canary); outside → the sync fallback runs inline (cohort stable); the refused counter stays at 0', async () => {
    const before = await metrics.exposition();
    canaryPercent = 100;
    expect((await postModern(running.url, 'tools/call', { name: 'report', arguments: {} })).body.result).toMatchObject({ resultType: 'task' });
    canaryPercent = 0;
    const inline = await postModern(running.url, 'tools/call', { name: 'report', arguments: {} });
    expect(inline.body.result?.content).toEqual([{ type: 'text', text: 'report' }]);
    const after = (await metrics.exposition()).body;
    const moved = (name: string, labels: Record<string, string>) => metricValue(after, name, labels) - metricValue(before.body, name, labels);
    expect(moved('mcp_tasks_tasks_created_total', { tool: 'report', cohort: 'canary' })).toBe(1);
    expect(moved('mcp_tasks_tasks_created_total', { tool: 'report', cohort: 'stable' })).toBe(0);
    expect(moved('mcp_tasks_calls_inline_total', { tool: 'report', cohort: 'stable' })).toBe(1);
    expect(metricValue(after, 'mcp_tasks_calls_refused_total')).toBe(0);
    // Bounded: the owner never appears in a label.
    expect(after).not.toContain('anonymous');
  });
});
