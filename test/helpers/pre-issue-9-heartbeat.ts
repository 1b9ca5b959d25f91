import type { TaskStore } from '../../src/core/store.js';
import type { TaskRuntime } from '../../src/runtime/task-runtime.js';

/** The parts of the runtime the pre-issue-9 heartbeat touched (private fields, reached only by this test helper). */
interface RuntimeInternals {
  running: Map<string, { record?: unknown }>;
  queue: string[];
  store: TaskStore;
  settings: { instanceId: string; leaseMs: number };
  clock: { now(): number };
  abortLocal(taskId: string, reason: string): void;
  heartbeat(): Promise<void>;
}

/**
 * NEGATIVE CONTROL ONLY — never shipped, never a server option. Replaces `runtime`'s lease heartbeat with the one
 * it had before issue 9: it snapshots the held ids, awaits the renewal, then judges the runs running *now* against
 * that snapshot's answer, so a run launched while the renewal was in flight is aborted as `lease_lost` although no
 * other owner exists. Tests install it to show that their scenario catches that defect.
 */
export function installPreIssue9Heartbeat(runtime: TaskRuntime): void {
  const internals = runtime as unknown as RuntimeInternals;
  internals.heartbeat = async function preIssue9Heartbeat(this: RuntimeInternals): Promise<void> {
    const held = [...this.running.keys(), ...this.queue];
    if (held.length === 0) return;
    const renewed = new Set(await this.store.renewLeases(this.settings.instanceId, held, this.settings.leaseMs));
    for (const taskId of this.running.keys()) {
      const running = this.running.get(taskId);
      if (running?.record && !renewed.has(taskId)) this.abortLocal(taskId, 'lease_lost');
    }
  };
}
