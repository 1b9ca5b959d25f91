/**
 * Attacks on the isolated executor's one channel per thread (merge 3951bd7; found by a review, each now refused), with real piscina threads
 * loading test/fixtures/hostile-thread-tools.mjs (and isolation-tools.mjs).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { afterAll, describe, expect, it } from 'vitest';

import type { ExecutionHost, ExecutionOutcome } from '../../src/core/executor.js';
import type { JsonValue } from '../../src/core/task.js';
import type { IsolatedExecutor } from '../../src/execution/isolated-executor.js';
import { ensureBuilt } from '../cli/support.js';
import { isolatedExecutors, request } from '../helpers/isolated-executors.js';
import { eventually } from '../helpers/run-notes.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const REVIEW_TOOLS = pathToFileURL(resolve(import.meta.dirname, '../fixtures/hostile-thread-tools.mjs')).href;
const ISOLATION_TOOLS = pathToFileURL(resolve(import.meta.dirname, '../fixtures/isolation-tools.mjs')).href;

type Seen = { what: string; text?: string };

function recordingHost(): ExecutionHost & { seen: Seen[]; written: unknown[]; startedCount: number } {
  const host = {
    seen: [] as Seen[],
    written: [] as unknown[],
    startedCount: 0,
    started: () => {
      host.startedCount += 1;
      host.seen.push({ what: 'started' });
    },
    setStatus: (message: string) => host.seen.push({ what: 'status', text: message }),
    progress: (_done: number, _total: number | undefined, message: string) => host.seen.push({ what: 'progress', text: message }),
    log: () => {},
    getStep: async () => undefined,
    putStep: async (name: string, value: JsonValue) => {
      host.written.push({ step: name, value });
      return value;
    },
    getOwnerState: async () => undefined,
    putOwnerState: async (key: string, value: unknown) => void host.written.push({ key, value }),
    elicit: async () => ({ answers: [] }),
    openOperation: async () => {
      throw new Error('no ledger here');
    },
    settleOperation: async () => undefined,
  };
  return host as unknown as ExecutionHost & { seen: Seen[]; written: unknown[]; startedCount: number };
}

function notes(log: string): Array<Record<string, unknown>> {
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The executor's private bookkeeping, for leak checks. */
function internals(executor: IsolatedExecutor): { listeners: Map<number, unknown>; threads: Map<number, unknown> } {
  const channels = (executor as unknown as { pool: { channels: { listeners: Map<number, unknown>; threads: Map<number, unknown> } } }).pool.channels;
  return { listeners: channels.listeners, threads: channels.threads };
}

describe('one channel per thread under attack (review of issue 25)', () => {
  ensureBuilt();
  const temp = makeTempDir('mcp-tasks-review36-');
  const { executors, start } = isolatedExecutors({ sources: [{ module: REVIEW_TOOLS }, { module: ISOLATION_TOOLS }], abortGraceMs: 300 });
  afterAll(() => temp.remove());

  it("a forged `warm` report naming another thread does not take over that thread's channel: the victim's abort reaches it and the forger cannot speak for the victim's run", async () => {
    const executor = await start();
    const victimLog = join(temp.dir, 'victim.log');
    const forgerLog = join(temp.dir, 'forger.log');
    const victim = recordingHost();
    const cancel = new AbortController();
    const running = executor.execute(request('whoami', { log: victimLog, ms: 60_000 }), victim, cancel.signal);
    await eventually('the victim to report its thread', () => victim.seen.some((seen) => seen.text?.startsWith('thread ')));
    const victimThread = Number((victim.seen.find((seen) => seen.text?.startsWith('thread ')) as Seen).text?.slice('thread '.length));
    // The victim is run 1 of this executor (run ids count up from 1).
    const forger = executor.execute(
      request('forges_warm', { victim: victimThread, run: 1, log: forgerLog, waitMs: 1_500 }),
      recordingHost(),
      new AbortController().signal,
    );
    await eventually('the forger to have spoken', () => victim.seen.length > 2 || victim.written.length > 0 || notes(forgerLog).length > 0, 3_000).catch(
      () => {},
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    cancel.abort('cancelled');
    expect(await running).toEqual({ kind: 'aborted', reason: 'cancelled' });
    await forger;
    // What a sound hand-off would give: the victim stopped on its own signal, nothing forged reached its host, and the
    // forger never saw the victim's abort.
    expect({
      victimSeen: victim.seen.map((seen) => seen.text ?? seen.what),
      victimWritten: victim.written,
      victimNotedAbort: notes(victimLog).some((note) => note.event === 'abort'),
      forgerReceived: notes(forgerLog),
      terminated: executor.terminated,
    }).toEqual({
      victimSeen: ['started', `thread ${victimThread}`],
      victimWritten: [],
      victimNotedAbort: true,
      forgerReceived: [],
      terminated: 0,
    });
  });

  it('a forged `warm` report naming thread 0 does not let a tool speak for a run still waiting for a thread (RUN_THREAD is 0 until a thread takes it)', async () => {
    const executor = await start({ maxThreads: 2, minThreads: 2 });
    const forgerLog = join(temp.dir, 'forger0.log');
    // Run 1 holds one thread, run 2 (the forger) the other; run 3 waits for a thread.
    const holder = recordingHost();
    const holdCancel = new AbortController();
    const holding = executor.execute(request('whoami', { ms: 60_000 }), holder, holdCancel.signal);
    await eventually('the holder to start', () => holder.seen.length > 1);
    const forging = executor.execute(request('forges_warm', { victim: 0, run: 3, log: forgerLog, waitMs: 600 }), recordingHost(), new AbortController().signal);
    const waiter = recordingHost();
    const waiting = executor.execute(request('whoami', {}), waiter, new AbortController().signal);
    await forging;
    holdCancel.abort('cancelled');
    await holding;
    await waiting;
    // The waiting run's host must hear from its own tool only.
    expect(waiter.written).toEqual([]);
    expect(waiter.seen.filter((seen) => seen.text === 'forged by another thread')).toEqual([]);
  });

  it('a tool that posts a `warm` report without a channel on its parentPort (one line, no patching) does not end the host process', async () => {
    const executor = await start({ maxThreads: 1, minThreads: 1 });
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.prependListener('uncaughtException', onUncaught);
    try {
      await executor.execute(request('warm_without_channel', {}), recordingHost(), new AbortController().signal);
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      process.removeListener('uncaughtException', onUncaught);
    }
    expect(uncaught.map(String)).toEqual([]);
  });

  it('a tool that posts a non-object on its thread channel does not end the host process (nothing a tool does in its thread ends the process)', async () => {
    const executor = await start({ maxThreads: 1, minThreads: 1 });
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    // vitest reports uncaught exceptions as errors of the run; catch them here to make the failure an assertion.
    process.prependListener('uncaughtException', onUncaught);
    try {
      const outcome = await executor.execute(request('posts_garbage', { payload: null }), recordingHost(), new AbortController().signal);
      expect(outcome.kind).toBe('returned');
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      process.removeListener('uncaughtException', onUncaught);
    }
    expect(uncaught.map(String)).toEqual([]);
  });

  it('a tool that runs out of memory: what it sent before is handled before the crashed outcome; the thread is replaced and the executor keeps no entry of it', async () => {
    const executor = await start({ maxThreads: 1, minThreads: 1, threadHeapMb: 32 });
    const host = recordingHost();
    const outcome = await executor.execute(request('says_then_ooms', { count: 20 }), host, new AbortController().signal);
    expect(outcome).toMatchObject({ kind: 'crashed' });
    expect(host.seen.map((seen) => seen.text ?? seen.what)).toEqual([
      'started',
      'about to run out of memory',
      ...Array.from({ length: 20 }, (_, k) => `step ${k + 1} (${k + 1}/20)`),
    ]);
    // The replacement thread works, and its channel carries calls.
    const next = recordingHost();
    expect((await executor.execute(request('whoami', {}), next, new AbortController().signal)).kind).toBe('returned');
    const { listeners, threads } = internals(executor);
    expect(listeners.size).toBe(0);
    await eventually('the dead thread channel to be dropped', () => threads.size === 1);
  });

  it("a thread that ran out of memory leaves no 'warm' standing behind, though piscina's workerDestroy names a dead thread -1", async () => {
    const executor = await start({ maxThreads: 1, minThreads: 1, threadHeapMb: 32 });
    expect(await executor.execute(request('says_then_ooms', { count: 1 }), recordingHost(), new AbortController().signal)).toMatchObject({ kind: 'crashed' });
    expect((await executor.execute(request('whoami', {}), recordingHost(), new AbortController().signal)).kind).toBe('returned');
    const standing = (executor as unknown as { pool: { standing: Map<number, string> } }).pool.standing;
    // One thread is alive; the pool still counts the dead one as warm (pick() then never falls back to a failed thread).
    expect([...standing.values()]).toEqual(['warm']);
  });

  it('close() with a run in flight (its owner did not abort it): the run ends, the executor keeps no listener', async () => {
    const executor = await start({ maxThreads: 1, minThreads: 1 });
    const host = recordingHost();
    const running = executor.execute(request('whoami', { ms: 60_000 }), host, new AbortController().signal);
    await eventually('the run to start', () => host.seen.length > 1);
    await executors.splice(0, 1)[0]?.close();
    expect((await running).kind).toBe('crashed');
    expect(internals(executor).listeners.size).toBe(0);
  });

  it('a thread terminated after the abort grace: what the tool sent before it spun is handled before the outcome', async () => {
    const executor = await start({ maxThreads: 1, minThreads: 1, abortGraceMs: 100 });
    const host = recordingHost();
    const cancel = new AbortController();
    host.started = () => {
      host.seen.push({ what: 'started' });
      setTimeout(() => cancel.abort('runtime_limit'), 50);
    };
    expect(await executor.execute(request('says_then_spins', { count: 20 }), host, cancel.signal)).toEqual({ kind: 'aborted', reason: 'runtime_limit' });
    expect(executor.terminated).toBe(1);
    expect(host.seen.map((seen) => seen.text ?? seen.what)).toEqual([
      'started',
      'about to spin',
      ...Array.from({ length: 20 }, (_, k) => `step ${k + 1} (${k + 1}/20)`),
    ]);
  });

  it('context calls after a run ended fail in the thread and reach no host; 600 runs (returned, aborted before and after start, terminated) leave no listener behind', async () => {
    const executor = await start({ maxThreads: 2, minThreads: 2, abortGraceMs: 100 });
    const log = join(temp.dir, 'late.log');
    const lateHost = recordingHost();
    expect((await executor.execute({ ...request('late_call', { log }), taskId: 'task-late' }, lateHost, new AbortController().signal)).kind).toBe('returned');
    await eventually('the late calls to settle', () => notes(log).length === 2);
    expect(lateHost.written).toEqual([]);
    expect(notes(log).every((note) => typeof note.error === 'string')).toBe(true);
    const jobs: Array<Promise<ExecutionOutcome>> = [];
    for (let i = 0; i < 600; i += 1) {
      const controller = new AbortController();
      const host = recordingHost();
      if (i % 3 === 1) controller.abort('cancelled');
      else if (i % 3 === 2) setTimeout(() => controller.abort('cancelled'), i % 7);
      jobs.push(executor.execute(request('sleepy', { ms: i % 3 === 0 ? 0 : 5 }), host, controller.signal));
    }
    await Promise.all(jobs);
    const ignoring = new AbortController();
    const ignoringHost = recordingHost();
    ignoringHost.started = () => void setTimeout(() => ignoring.abort('cancelled'), 10);
    await executor.execute(request('ignores_signal', {}), ignoringHost, ignoring.signal);
    expect(executor.terminated).toBe(1);
    const { listeners, threads } = internals(executor);
    expect(listeners.size).toBe(0);
    await eventually('two thread channels', () => threads.size === 2);
  });
});
