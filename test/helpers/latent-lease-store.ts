import type { TaskStore } from '../../src/core/store.js';
import { overrideStore } from './store-wrapper.js';

/** Where the injected latency sits: before the renewal is written, or between its write and its answer. */
export type LatencyMode = 'before-write' | 'after-write';

/** One held renewal: the ids it was asked to renew, and the hand that lets it go on. */
export interface HeldRenewal {
  /** Resolves with the ids of the call once the renewal is held (the caller's snapshot). */
  started: Promise<readonly string[]>;
  /** Let the renewal go on (write, or answer, according to the mode). */
  release(): void;
  /** Resolves with what the renewal answered, once it answered its caller. */
  answered: Promise<readonly string[]>;
}

/** A {@link TaskStore} whose lease renewals can be held back on demand; every other call goes straight through. */
export interface LatentLeaseStore extends TaskStore {
  /** Hold the next `renewLeases` call (only that one) until `release()`. */
  holdNextRenewal(mode: LatencyMode): HeldRenewal;
  /** Resolves when a `renewLeases` call starts after this call (a barrier: the previous heartbeat has run). */
  nextRenewal(): Promise<readonly string[]>;
}

/**
 * Wrap `store` so that a test can inject latency into lease renewal at a moment of its choosing (issue 9): the
 * runtime's heartbeat then sees runs start, settle, be cancelled or be queued while its renewal is in flight.
 * Only timing changes; every write still goes to the real store.
 */
export function withLeaseLatency(store: TaskStore): LatentLeaseStore {
  let armed: { mode: LatencyMode; onStart: (ids: readonly string[]) => void; gate: Promise<void>; onAnswer: (ids: readonly string[]) => void } | undefined;
  const watchers: Array<(ids: readonly string[]) => void> = [];

  const renewLeases = async (leaseOwner: string, taskIds: readonly string[], leaseMs: number): Promise<string[]> => {
    for (const watcher of watchers.splice(0)) watcher(taskIds);
    const hold = armed;
    armed = undefined;
    if (!hold) return store.renewLeases(leaseOwner, taskIds, leaseMs);
    hold.onStart([...taskIds]);
    if (hold.mode === 'before-write') await hold.gate;
    const renewed = await store.renewLeases(leaseOwner, taskIds, leaseMs);
    if (hold.mode === 'after-write') await hold.gate;
    hold.onAnswer(renewed);
    return renewed;
  };

  const extra = {
    renewLeases,
    holdNextRenewal(mode: LatencyMode): HeldRenewal {
      let onStart!: (ids: readonly string[]) => void;
      let onAnswer!: (ids: readonly string[]) => void;
      let release!: () => void;
      const started = new Promise<readonly string[]>((resolve) => (onStart = resolve));
      const answered = new Promise<readonly string[]>((resolve) => (onAnswer = resolve));
      const gate = new Promise<void>((resolve) => (release = resolve));
      armed = { mode, onStart, gate, onAnswer };
      return { started, release, answered };
    },
    nextRenewal(): Promise<readonly string[]> {
      return new Promise((resolve) => watchers.push(resolve));
    },
  };
  return overrideStore<LatentLeaseStore>(store, extra);
}
