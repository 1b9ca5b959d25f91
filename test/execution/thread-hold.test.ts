import { describe, expect, it } from 'vitest';

import { RunState } from '../../src/execution/isolated-messages.js';
import { holdsThread } from '../../src/execution/thread-pool.js';

/** A handed run in `state`, taken by an idle warm thread or not. */
function handed(state: number, toWarm: boolean) {
  const word = new Int32Array(new SharedArrayBuffer(4));
  Atomics.store(word, 0, state);
  return { at: 0, state: word, toWarm };
}

describe('which handed runs hold a thread (the pool starts threads for runs that wait while tools hold the warm ones)', () => {
  it.each([
    { state: RunState.started, toWarm: true, saturated: true, holds: true, why: 'a tool runs' },
    { state: RunState.started, toWarm: false, saturated: false, holds: true, why: 'a tool runs' },
    { state: RunState.ended, toWarm: true, saturated: false, holds: false, why: 'the tool is done, whenever the host reads its outcome' },
    { state: RunState.ended, toWarm: false, saturated: true, holds: false, why: 'the tool is done' },
    {
      state: RunState.pending,
      toWarm: true,
      saturated: true,
      holds: false,
      why: 'issue 25: a warm thread has not read its message on a saturated CPU: it waits for CPU, not for a thread',
    },
    { state: RunState.pending, toWarm: true, saturated: false, holds: true, why: "the thread's loop is busy (a callback a tool left behind)" },
    { state: RunState.pending, toWarm: false, saturated: true, holds: true, why: 'it waits in piscina for the thread that loads for it' },
    { state: RunState.pending, toWarm: false, saturated: false, holds: true, why: 'it waits for the thread that loads for it' },
  ])('$state (toWarm $toWarm, saturated $saturated) → $holds: $why', ({ state, toWarm, saturated, holds }) => {
    expect(holdsThread(handed(state, toWarm), saturated)).toBe(holds);
  });
});
