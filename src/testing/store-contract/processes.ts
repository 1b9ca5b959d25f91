import { describe, expect, it } from 'vitest';

import type { NewProcessEntry } from '../../core/process-record.js';
import type { TaskStore } from '../../core/store.js';
import type { NewTask, TaskRecord } from '../../core/task.js';
import type { FakeClock } from '../fake-clock.js';

/** What the process-registry part of the contract suite needs from the suite around it. */
export interface RegistryContractContext {
  store(): TaskStore;
  clock(): FakeClock;
  create(overrides?: Partial<NewTask>): Promise<TaskRecord>;
}

const TTL = 3_000;
const entry = (instanceId: string, token: string, overrides: Partial<NewProcessEntry> = {}): NewProcessEntry => ({
  instanceId,
  role: 'worker',
  token,
  host: 'host-a',
  pid: 1234,
  settingsDigest: 'digest-1',
  ...overrides,
});

/**
 * The process-registry part of the {@link TaskStore} contract (issue 11 item 6: `registerProcess`,
 * `heartbeatProcess`, `markProcessDraining`, `deregisterProcess`, `listProcesses`, `releaseLeasesOf`,
 * `reapLapsedProcesses`), judged on the suite's clock. Registered inside `describeTaskStoreContract`, which owns the store's lifecycle.
 */
export function describeProcessesContract(ctx: RegistryContractContext): void {
  describe('process registry', () => {
    it('registers a process; a second live process with the id is refused and nothing changes', async () => {
      const store = ctx.store();
      const first = await store.registerProcess(entry('w-1', 'token-a'), TTL);
      expect(first).toEqual({ registered: true, previous: undefined });
      const second = await store.registerProcess(entry('w-1', 'token-b', { host: 'host-b', settingsDigest: 'other' }), TTL);
      expect(second.registered).toBe(false);
      expect(second.registered === false && second.holder).toMatchObject({ instanceId: 'w-1', token: 'token-a', host: 'host-a', live: true });
      const listed = await store.listProcesses();
      expect(listed).toEqual([
        expect.objectContaining({
          instanceId: 'w-1',
          role: 'worker',
          token: 'token-a',
          pid: 1234,
          settingsDigest: 'digest-1',
          startedAt: ctx.clock().now(),
          heartbeatAt: ctx.clock().now(),
          expiresAt: ctx.clock().now() + TTL,
          live: true,
        }),
      ]);
    });

    it('a lapsed registration, or one whose token is named, is replaced and returned as previous', async () => {
      const store = ctx.store();
      await store.registerProcess(entry('w-1', 'token-a'), TTL);
      const named = await store.registerProcess(entry('w-1', 'token-b'), TTL, 'token-a');
      expect(named).toMatchObject({ registered: true, previous: { token: 'token-a', live: true } });
      ctx.clock().advance(TTL);
      const lapsed = await store.registerProcess(entry('w-1', 'token-c', { role: 'serve' }), TTL);
      expect(lapsed).toMatchObject({ registered: true, previous: { token: 'token-b', live: false } });
      expect(await store.listProcesses()).toEqual([expect.objectContaining({ token: 'token-c', role: 'serve', live: true })]);
    });

    it('heartbeats renew only the holding token; deregister removes only its own row', async () => {
      const store = ctx.store();
      await store.registerProcess(entry('w-1', 'token-a'), TTL);
      ctx.clock().advance(2_000);
      expect(await store.heartbeatProcess('w-1', 'token-a', TTL)).toBe(true);
      expect(await store.heartbeatProcess('w-1', 'token-x', TTL)).toBe(false);
      expect(await store.heartbeatProcess('nobody', 'token-a', TTL)).toBe(false);
      ctx.clock().advance(2_000);
      expect(await store.listProcesses()).toEqual([expect.objectContaining({ heartbeatAt: ctx.clock().now() - 2_000, live: true })]);
      await store.deregisterProcess('w-1', 'token-x');
      expect(await store.listProcesses()).toHaveLength(1);
      await store.deregisterProcess('w-1', 'token-a');
      expect(await store.listProcesses()).toEqual([]);
    });

    it('a draining mark reads back on the store clock, kept from the first mark; another token marks nothing; a new registration of the id and a deregistration end it', async () => {
      const store = ctx.store();
      await store.registerProcess(entry('w-1', 'token-a'), TTL);
      await store.registerProcess(entry('w-2', 'token-b'), TTL);
      // Control: registered, heartbeating, not draining.
      expect((await store.listProcesses()).map((p) => [p.instanceId, p.drainingSince])).toEqual([
        ['w-1', null],
        ['w-2', null],
      ]);
      ctx.clock().advance(500);
      const since = ctx.clock().now();
      expect(await store.markProcessDraining('w-1', 'token-a')).toBe(true);
      ctx.clock().advance(500);
      expect(await store.markProcessDraining('w-1', 'token-a')).toBe(true);
      expect(await store.markProcessDraining('w-2', 'token-x')).toBe(false);
      expect(await store.markProcessDraining('nobody', 'token-a')).toBe(false);
      expect(await store.heartbeatProcess('w-1', 'token-a', TTL)).toBe(true);
      expect((await store.listProcesses()).map((p) => [p.instanceId, p.live, p.drainingSince])).toEqual([
        ['w-1', true, since],
        ['w-2', true, null],
      ]);
      // A process restarted under the id (its predecessor named dead) takes work: the mark was its predecessor's.
      const restarted = await store.registerProcess(entry('w-1', 'token-c'), TTL, 'token-a');
      expect(restarted).toMatchObject({ registered: true, previous: { token: 'token-a', drainingSince: since } });
      expect((await store.listProcesses()).find((p) => p.instanceId === 'w-1')).toMatchObject({ token: 'token-c', drainingSince: null });
      expect(await store.markProcessDraining('w-1', 'token-a')).toBe(false);
      expect(await store.markProcessDraining('w-2', 'token-b')).toBe(true);
      await store.deregisterProcess('w-2', 'token-b');
      // Registered again after a clean stop: no mark left behind.
      await store.registerProcess(entry('w-2', 'token-d'), TTL);
      expect((await store.listProcesses()).map((p) => [p.instanceId, p.drainingSince])).toEqual([
        ['w-1', null],
        ['w-2', null],
      ]);
    });

    it('a draining registration that lapses is reaped like any other, with its mark', async () => {
      const store = ctx.store();
      await store.registerProcess(entry('w-1', 'token-a'), TTL);
      expect(await store.markProcessDraining('w-1', 'token-a')).toBe(true);
      ctx.clock().advance(TTL);
      expect(await store.listProcesses()).toEqual([expect.objectContaining({ live: false, drainingSince: ctx.clock().now() - TTL })]);
      expect(await store.reapLapsedProcesses()).toEqual({ instanceIds: ['w-1'], taskIds: [] });
      await store.registerProcess(entry('w-1', 'token-a'), TTL);
      expect(await store.listProcesses()).toEqual([expect.objectContaining({ token: 'token-a', drainingSince: null })]);
    });

    it('releaseLeasesOf lets every lease of one owner lapse now with a released event; others untouched', async () => {
      const store = ctx.store();
      const mine = await ctx.create({ leaseOwner: 'w-1', leaseMs: 60_000 });
      const theirs = await ctx.create({ leaseOwner: 'w-2', leaseMs: 60_000 });
      const seq = await store.lastEventSeq();
      expect(await store.releaseLeasesOf('w-1')).toEqual([mine.taskId]);
      expect((await store.getUnscoped(mine.taskId))?.leaseExpiresAt).toBe(ctx.clock().now());
      expect((await store.getUnscoped(theirs.taskId))?.leaseExpiresAt).toBe(ctx.clock().now() + 60_000);
      expect((await store.readEventsAfter(seq, 100)).map((e) => [e.taskId, e.kind, e.payload])).toEqual([[mine.taskId, 'released', { leaseOwner: 'w-1' }]]);
      // The lapsed lease is claimable at once, by anyone.
      expect((await store.claimLapsed('w-3', 30_000, 10)).map((r) => r.taskId)).toEqual([mine.taskId]);
      expect(await store.releaseLeasesOf('w-1')).toEqual([]);
    });

    it('reapLapsedProcesses removes only lapsed registrations and releases their leases in the same write', async () => {
      const store = ctx.store();
      await store.registerProcess(entry('dead', 'token-d'), TTL);
      const held = await ctx.create({ leaseOwner: 'dead', leaseMs: 60_000 });
      ctx.clock().advance(2_000);
      await store.registerProcess(entry('alive', 'token-a'), TTL);
      expect(await store.reapLapsedProcesses()).toEqual({ instanceIds: [], taskIds: [] });
      ctx.clock().advance(1_000);
      expect(await store.reapLapsedProcesses()).toEqual({ instanceIds: ['dead'], taskIds: [held.taskId] });
      expect((await store.listProcesses()).map((p) => p.instanceId)).toEqual(['alive']);
      expect((await store.getUnscoped(held.taskId))?.leaseExpiresAt).toBe(ctx.clock().now());
      // The reaped process, if it was only paused, finds its registration gone: its heartbeat fails.
      expect(await store.heartbeatProcess('dead', 'token-d', TTL)).toBe(false);
    });

    it("reapLapsedProcesses never reaps the caller's own instance id, lapsed or not; the others reap it (control)", async () => {
      const store = ctx.store();
      await store.registerProcess(entry('caller', 'token-c'), TTL);
      const held = await ctx.create({ leaseOwner: 'caller', leaseMs: 60_000 });
      ctx.clock().advance(TTL + 1);
      expect(await store.reapLapsedProcesses('caller')).toEqual({ instanceIds: [], taskIds: [] });
      expect((await store.getUnscoped(held.taskId))?.leaseExpiresAt).toBeGreaterThan(ctx.clock().now());
      expect(await store.reapLapsedProcesses('another')).toEqual({ instanceIds: ['caller'], taskIds: [held.taskId] });
    });
  });
}
