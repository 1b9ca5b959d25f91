import { describe, expect, it } from 'vitest';

import { InputWakes } from '../../src/execution/input-wakes.js';

describe('InputWakes: which tasks have a run here waiting for answers in place', () => {
  it('two runs of one task waiting at once (a handed-back run and the run started again): the first to stop leaves the other marked', () => {
    const wakes = new InputWakes();
    wakes.waiting('T1', true); // the new run asks again
    wakes.waiting('T1', true); // the old run still waits
    wakes.waiting('T1', false); // the old run is aborted
    expect(wakes.isWaiting('T1')).toBe(true);
    wakes.waiting('T1', false);
    expect(wakes.isWaiting('T1')).toBe(false);
  });

  it('control: one run marks and clears its own task only', () => {
    const wakes = new InputWakes();
    wakes.waiting('T1', true);
    wakes.waiting('T2', true);
    wakes.waiting('T1', false);
    expect([wakes.isWaiting('T1'), wakes.isWaiting('T2')]).toEqual([false, true]);
  });
});
