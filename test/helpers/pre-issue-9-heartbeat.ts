import type { TaskStore } from '../../src/core/store.js';
import type { TaskWorker } from '../../src/execution/task-worker.js';

/** The parts of the worker the pre-issue-9 heartbeat touched (private fields, reached only by this test helper). */
interface WorkerInternals {
  running: Map<string, { record?: unknown }>;
  options: { store: TaskStore; settings: { instanceId: string; leaseMs: number } };
  abortLocal(taskId: string, reason: string): void;
  heartbeat(): Promise<void>;
}

/**
 * NEGATIVE CONTROL ONLY — never shipped, never a server option. Replaces `worker`'s lease heartbeat with the one
 * it had before issue 9: it snapshots the held ids, awaits the renewal, then judges the runs running *now* against
 * that snapshot's answer, so a run launched while the renewal was in flight is aborted as `lease_lost` although no
 * other owner exists. Tests install it to show that their scenario catches that defect.
 */
export function installPreIssue9Heartbeat(worker: TaskWorker): void {
  const internals = worker as unknown as WorkerInternals;
  internals.heartbeat = async function preIssue9Heartbeat(this: WorkerInternals): Promise<void> {
    const held = [...this.running.keys()];
    if (held.length === 0) return;
    const { store, settings } = this.options;
    const renewed = new Set(await store.renewLeases(settings.instanceId, held, settings.leaseMs));
    for (const taskId of this.running.keys()) {
      const running = this.running.get(taskId);
      if (running?.record && !renewed.has(taskId)) this.abortLocal(taskId, 'lease_lost');
    }
  };
}
