import type { TaskStore, TransitionRequest } from '../../src/core/store.js';
import { overrideStore } from './store-wrapper.js';

/** A {@link TaskStore} whose next terminal write (a run's outcome) can be held back; everything else goes through. */
export interface HeldOutcomeStore extends TaskStore {
  /** Hold the next transition to a terminal status until `release()`; `started` resolves with its task id. */
  holdNextOutcome(): { started: Promise<string>; release(): void };
}

/** Wrap `store` so a test can keep a finished run's outcome uncommitted for as long as it likes. */
export function withHeldOutcomes(store: TaskStore): HeldOutcomeStore {
  let armed: { onStart: (taskId: string) => void; gate: Promise<void> } | undefined;
  const extra = {
    async transition(taskId: string, request: TransitionRequest) {
      const hold = ['completed', 'failed'].includes(request.to) ? armed : undefined;
      if (hold) {
        armed = undefined;
        hold.onStart(taskId);
        await hold.gate;
      }
      return store.transition(taskId, request);
    },
    holdNextOutcome() {
      let onStart!: (taskId: string) => void;
      let release!: () => void;
      const started = new Promise<string>((resolve) => (onStart = resolve));
      armed = { onStart, gate: new Promise<void>((resolve) => (release = resolve)) };
      return { started, release };
    },
  };
  return overrideStore<HeldOutcomeStore>(store, extra);
}
