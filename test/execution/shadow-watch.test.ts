import { describe, expect, it } from 'vitest';

import { silentLogger } from '../../src/core/logger.js';
import type { ShadowJobState } from '../../src/core/tool.js';
import { inShadowMode, type ShadowMismatch, ShadowWatch } from '../../src/execution/shadow-watch.js';

// The comparison rules of shadow mode, with a scripted adapter (the real job API is in test/ops/shadow.test.ts).

function watchOf(answers: Array<ShadowJobState | Error>, settleChecks = 2) {
  const mismatches: ShadowMismatch[] = [];
  const checks: string[] = [];
  let polls = 0;
  const adapter = {
    async status(): Promise<ShadowJobState> {
      const answer = answers[Math.min(polls, answers.length - 1)] as ShadowJobState | Error;
      polls += 1;
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
  const watch = new ShadowWatch(
    adapter,
    { taskId: 't', toolName: 'job' },
    { tools: ['job'], intervalMs: 10, settleChecks },
    { checked: (result) => checks.push(result), mismatch: async (difference) => void mismatches.push(difference) },
    silentLogger,
  );
  return { watch, mismatches, checks, polls: () => polls };
}

describe('ShadowWatch', () => {
  it('a job that fails while its task runs on past the settle polls is one running-phase mismatch, however often it is polled; the final one is reported too', async () => {
    const { watch, mismatches, polls } = watchOf(['working', 'failed']);
    watch.observe('j');
    // The first poll says working, then the failure is seen by 2 settle polls and one more: the running mismatch.
    while (mismatches.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(polls()).toBeGreaterThanOrEqual(4);
    await new Promise((resolve) => setTimeout(resolve, 40));
    await watch.finish('completed');
    expect(mismatches).toEqual([
      { phase: 'running', taskState: 'working', jobState: 'failed', jobId: 'j' },
      { phase: 'final', taskState: 'completed', jobState: 'failed', jobId: 'j' },
    ]);
  });

  it('a task that ends within the settle polls after its job failed is judged by the final comparison alone (the race of two systems ending)', async () => {
    // The job API says failed from the second poll on; the task ends while the running phase still settles.
    const disagreeing = watchOf(['working', 'failed'], 5);
    disagreeing.watch.observe('j');
    while (disagreeing.polls() < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    await disagreeing.watch.finish('completed');
    expect(disagreeing.mismatches).toEqual([{ phase: 'final', taskState: 'completed', jobState: 'failed', jobId: 'j' }]);
    // The tool saw its job fail and failed its task: no difference at all.
    const agreeing = watchOf(['working', 'failed'], 5);
    agreeing.watch.observe('j');
    while (agreeing.polls() < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    await agreeing.watch.finish('failed');
    expect(agreeing.mismatches).toEqual([]);
    expect(agreeing.checks.at(-1)).toBe('match');
  });

  it('a job that completes before its task is not a difference; nor one that is still working at the end but completes within the settle polls', async () => {
    const early = watchOf(['completed']);
    early.watch.observe('j');
    await new Promise((resolve) => setTimeout(resolve, 50));
    await early.watch.finish('completed');
    expect(early.mismatches).toEqual([]);
    const late = watchOf(['working', 'working', 'completed'], 3);
    late.watch.observe('j');
    await late.watch.finish('completed');
    expect(late.mismatches).toEqual([]);
  });

  it('a job still working after the settle polls is a final mismatch (negative control of the settle rule)', async () => {
    const { watch, mismatches, polls } = watchOf(['working'], 2);
    watch.observe('j');
    await watch.finish('completed');
    expect(mismatches).toEqual([{ phase: 'final', taskState: 'completed', jobState: 'working', jobId: 'j' }]);
    // The final poll and two settle polls (the running poll queued by observe is skipped once the task ended).
    expect(polls()).toBe(3);
  });

  it('adapter errors and nonsense answers are counted as errors, never as mismatches; no job observed = no poll', async () => {
    const failing = watchOf([new Error('job API down'), 'exploded' as ShadowJobState]);
    failing.watch.observe('j');
    await new Promise((resolve) => setTimeout(resolve, 40));
    await failing.watch.finish('completed');
    expect(failing.mismatches).toEqual([]);
    expect(failing.checks.length).toBeGreaterThan(0);
    expect(new Set(failing.checks)).toEqual(new Set(['error']));
    const unobserved = watchOf(['failed']);
    await unobserved.watch.finish('completed');
    expect(unobserved.polls()).toBe(0);
  });

  it('inShadowMode: only tools with an adapter that the settings name (or *)', () => {
    const adapter = { status: async (): Promise<ShadowJobState> => 'working' };
    expect(inShadowMode({ tools: ['a'], intervalMs: 1, settleChecks: 0 }, { name: 'a', shadow: adapter })).toBe(true);
    expect(inShadowMode({ tools: ['*'], intervalMs: 1, settleChecks: 0 }, { name: 'b', shadow: adapter })).toBe(true);
    expect(inShadowMode({ tools: ['a'], intervalMs: 1, settleChecks: 0 }, { name: 'b', shadow: adapter })).toBe(false);
    expect(inShadowMode({ tools: ['*'], intervalMs: 1, settleChecks: 0 }, { name: 'a' })).toBe(false);
    expect(inShadowMode(undefined, { name: 'a', shadow: adapter })).toBe(false);
  });
});
