/**
 * Issue 25: the isolated executor's threads each keep one channel to the host for their whole life (no channel per
 * run). These are the invariants that sharing a channel must keep, with real piscina threads loading
 * test/fixtures/isolation-tools.mjs: a run's messages reach its own host only, and all of them before its outcome; a
 * callback left behind by an ended run reaches no later run of its thread (its context call fails in the thread); a
 * thread that replaces a terminated one brings its own channel, which carries calls and aborts; a tool holding its
 * thread's channel cannot speak for a run on another thread; errors of context calls cross typed.
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { afterAll, describe, expect, it } from 'vitest';

import { TasksError } from '../../src/core/errors.js';
import type { ExecutionHost, ExecutionOutcome } from '../../src/core/executor.js';
import { StoreError } from '../../src/core/store-error.js';
import type { JsonValue } from '../../src/core/task.js';
import type { IsolatedExecutor } from '../../src/execution/isolated-executor.js';
import { ensureBuilt } from '../cli/support.js';
import { isolatedExecutors, request } from '../helpers/isolated-executors.js';
import { eventually, runNotes } from '../helpers/run-notes.js';
import { makeTempDir } from '../helpers/temp-dir.js';

const ISOLATION_TOOLS = pathToFileURL(resolve(import.meta.dirname, '../fixtures/isolation-tools.mjs')).href;

/** What a host saw of its run, in the order it saw it; `after` marks what came once the run's outcome was out. */
type Seen = { what: 'started' } | { what: 'status' | 'progress' | 'log'; text: string; after: boolean };

/** A host that records every message of its run and echoes `{ tag }` for any owner-state key. */
function recordingHost(): ExecutionHost & { seen: Seen[]; ended: boolean } {
  const host = {
    seen: [] as Seen[],
    ended: false,
    started: () => host.seen.push({ what: 'started' }),
    setStatus: (message: string) => host.seen.push({ what: 'status', text: message, after: host.ended }),
    progress: (_done: number, _total: number | undefined, message: string) => host.seen.push({ what: 'progress', text: message, after: host.ended }),
    log: (entry: { fields: Record<string, unknown> }) => host.seen.push({ what: 'log', text: String(entry.fields.tag), after: host.ended }),
    getStep: async () => undefined,
    putStep: async (_name: string, value: JsonValue) => value,
    getOwnerState: async (key: string) => ({ tag: key }),
    putOwnerState: async () => {},
    elicit: async () => ({ answers: [] }),
    openOperation: async () => {
      throw new Error('no ledger here');
    },
    settleOperation: async () => undefined,
  };
  return host as unknown as ExecutionHost & { seen: Seen[]; ended: boolean };
}

/** The text of a returned outcome. */
function text(outcome: ExecutionOutcome): string {
  if (outcome.kind !== 'returned') throw new Error(`the run ended ${JSON.stringify(outcome)}`);
  return ((outcome.result as { content: Array<{ text: string }> }).content[0] as { text: string }).text;
}

describe('one channel per thread (issue 25)', () => {
  ensureBuilt();
  const temp = makeTempDir('mcp-tasks-channels-');
  const { start } = isolatedExecutors({ sources: [{ module: ISOLATION_TOOLS }] });
  afterAll(() => temp.remove());

  /** Run `toolName` with `host`, marking the host ended as soon as the outcome is out. */
  const run = async (
    executor: IsolatedExecutor,
    toolName: string,
    args: Record<string, unknown>,
    host: ReturnType<typeof recordingHost>,
    signal = new AbortController().signal,
  ) => {
    const outcome = await executor.execute(request(toolName, args), host, signal);
    host.ended = true;
    return outcome;
  };

  it("24 runs on 2 threads, each sending 100 messages: every host gets exactly its own run's, in order, all before the outcome; each call's answer reaches its own run", async () => {
    const executor = await start();
    const count = 100;
    const hosts = Array.from({ length: 24 }, () => recordingHost());
    const outcomes = await Promise.all(hosts.map((host, i) => run(executor, 'chatty', { tag: `run-${i}`, count }, host)));
    outcomes.forEach((outcome, i) => {
      const tag = `run-${i}`;
      expect(JSON.parse(text(outcome))).toEqual({ tag, echoed: { tag } });
      const expected: Seen[] = [{ what: 'started' }];
      for (let k = 1; k <= count; k += 1)
        expected.push({ what: 'progress', text: `${tag} (${k}/${count})`, after: false }, { what: 'log', text: tag, after: false });
      expected.push({ what: 'status', text: `${tag} done`, after: false });
      expect((hosts[i] as ReturnType<typeof recordingHost>).seen).toEqual(expected);
    });
  });

  it('a timer an ended run left behind reaches no later run of its thread; its context call fails in the thread instead of waiting forever', async () => {
    const executor = await start({ maxThreads: 1, minThreads: 1 });
    const log = join(temp.dir, 'stray.log');
    expect((await run(executor, 'leaves_chatter', { log, tag: 'first' }, recordingHost())).kind).toBe('returned');
    // The next run holds the same (only) thread while the timer of the first fires (30 ms after it returned).
    const second = recordingHost();
    expect(JSON.parse(text(await run(executor, 'chatty', { tag: 'second', ms: 300 }, second)))).toEqual({ tag: 'second', echoed: { tag: 'second' } });
    expect(second.seen).toEqual([{ what: 'started' }, { what: 'status', text: 'second done', after: false }]);
    await eventually('the stray call to be answered', () => runNotes<{ event: string }>(log).some((note) => note.event === 'stray-call'));
    expect(runNotes<{ event: string; error?: string }>(log).find((note) => note.event === 'stray-call')).toMatchObject({
      error: 'the run that made this call has ended (getOwnerState)',
    });
  });

  it('a thread that replaces a terminated one brings its own channel: calls are answered and an abort reaches the tool (ctx.signal.reason) there', async () => {
    const executor = await start({ maxThreads: 1, minThreads: 1 });
    const ignoring = new AbortController();
    const first = recordingHost();
    first.started = () => void setTimeout(() => ignoring.abort('runtime_limit'), 20);
    expect(await run(executor, 'ignores_signal', {}, first, ignoring.signal)).toEqual({ kind: 'aborted', reason: 'runtime_limit' });
    expect(executor.terminated).toBe(1);
    const log = join(temp.dir, 'replaced.log');
    const cancel = new AbortController();
    const second = recordingHost();
    second.started = () => void setTimeout(() => cancel.abort('cancelled'), 20);
    expect(await run(executor, 'chatty', { log, tag: 'replacement', count: 1, ms: 60_000 }, second, cancel.signal)).toEqual({
      kind: 'aborted',
      reason: 'cancelled',
    });
    // The tool stopped on its signal, with the reason the host sent: its thread was not terminated in turn.
    expect(runNotes<{ event: string; reason?: string }>(log).find((note) => note.event === 'abort')).toMatchObject({ tag: 'replacement', reason: 'cancelled' });
    expect(executor.terminated).toBe(1);
    expect(second.seen.filter((seen) => seen.what === 'progress')).toEqual([{ what: 'progress', text: 'replacement (1/1)', after: false }]);
  });

  it("a tool that takes hold of its thread's channel cannot speak for a run on another thread (run ids count up)", async () => {
    const executor = await start();
    const victim = recordingHost();
    const written: unknown[] = [];
    victim.putOwnerState = async (_key, value) => void written.push(value);
    const cancel = new AbortController();
    const running = run(executor, 'chatty', { tag: 'victim', ms: 60_000 }, victim, cancel.signal);
    await eventually('the victim to start', () => victim.seen.length > 0);
    // The victim holds one thread; the forger gets the other, and speaks as the 5 runs before its own.
    expect(text(await run(executor, 'forges_messages', {}, recordingHost()))).toMatch(/^spoke as runs/);
    cancel.abort('cancelled');
    expect(await running).toEqual({ kind: 'aborted', reason: 'cancelled' });
    expect(victim.seen).toEqual([{ what: 'started' }, { what: 'status', text: 'victim done', after: false }]);
    expect(written).toEqual([]);
  });

  it("a context call's error reaches the tool as the class it was thrown as: a TasksError with its code and data, a StoreError with its code", async () => {
    const executor = await start({ maxThreads: 1, minThreads: 1 });
    const host = recordingHost();
    host.getOwnerState = async () => {
      throw new TasksError(-32602, 'no such key', { key: 'key' });
    };
    host.putOwnerState = async () => {
      throw new StoreError('invalid', 'owner state over its limit');
    };
    expect(JSON.parse(text(await run(executor, 'asks_host', {}, host)))).toEqual([
      { name: 'TasksError', isError: true, code: -32602, data: { key: 'key' }, message: 'no such key' },
      { name: 'StoreError', isError: true, code: 'invalid', message: 'owner state over its limit' },
    ]);
  });

  it("a store error crosses to the tool as what failed, never the driver's detail or the operator's remedy (the run's host logs it whole)", async () => {
    const executor = await start({ maxThreads: 1, minThreads: 1 });
    const host = recordingHost();
    host.getOwnerState = async () => {
      throw new StoreError('fault', 'Task store failed to write: duplicate key value violates unique constraint "tool_state_pkey"', {
        requestorMessage: 'Task store failed to write',
      });
    };
    host.putOwnerState = async () => {
      throw new StoreError('unavailable', 'Task store unavailable: cannot read tool state (connect ECONNREFUSED 10.20.30.40:5432)');
    };
    expect(JSON.parse(text(await run(executor, 'asks_host', {}, host)))).toEqual([
      { name: 'StoreError', isError: true, code: 'fault', message: 'Task store failed to write' },
      { name: 'StoreError', isError: true, code: 'unavailable', message: 'Task store unavailable' },
    ]);
  });
});
