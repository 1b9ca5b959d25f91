import { describe, expect, it } from 'vitest';

import { type Logger, silentLogger } from '../../src/core/logger.js';
import { coalesceOutageLogs, flushOutageLogs } from '../../src/core/outage-log.js';
import { StoreError } from '../../src/core/store-error.js';

// A task store outage makes every request, context call and batch of a process fail with the same cause; the log
// gets the first line whole and a count, not one stack per failure (measured: 5,777 lines in a 10 s outage).

interface Line {
  level: string;
  object: Record<string, unknown>;
  message: string | undefined;
  bindings: Record<string, unknown>;
}

/** A recording logger (children record their bindings) and a clock and timers the test moves by hand. */
function harness(windowMs = 10_000) {
  const lines: Line[] = [];
  const recorder = (bindings: Record<string, unknown>): Logger => {
    const at = (level: string) => (object: object, message?: string) => lines.push({ level, object: object as Record<string, unknown>, message, bindings });
    return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (more) => recorder({ ...bindings, ...more }) };
  };
  let clock = 1_000;
  const timers: Array<{ at: number; fn: () => void }> = [];
  const logger = coalesceOutageLogs(recorder({}), {
    windowMs,
    now: () => clock,
    setTimer: (fn, ms) => timers.push({ at: clock + ms, fn }),
  });
  const advance = (ms: number) => {
    clock += ms;
    for (const timer of timers.splice(0)) {
      if (timer.at <= clock) timer.fn();
      else timers.push(timer);
    }
  };
  return { lines, logger, advance };
}

const unavailable = (detail = 'ECONNREFUSED 127.0.0.1:5432') => new StoreError('unavailable', `Task store unavailable: cannot connect (${detail})`);

describe('coalesceOutageLogs: the lines of a task store outage', () => {
  it('the first is written whole; repeats in the window are counted and summarised once when it ends; the next failure opens a new window', () => {
    const { lines, logger, advance } = harness();
    for (let i = 0; i < 500; i++) logger.error({ err: unavailable(), method: 'putStep' }, "a tool's context operation failed in the task store");
    expect(lines).toHaveLength(1);
    expect(lines[0]?.object).toMatchObject({ method: 'putStep', outageLogWindowMs: 10_000 });
    expect(lines[0]?.object.err).toBeInstanceOf(StoreError);

    advance(9_999);
    expect(lines).toHaveLength(1);
    logger.error({ err: unavailable('timeout') }, "a tool's context operation failed in the task store");
    advance(1);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({
      level: 'error',
      object: {
        repeats: 500,
        windowMs: 10_000,
        causes: { 'Task store unavailable: cannot connect (ECONNREFUSED 127.0.0.1:5432)': 499, 'Task store unavailable: cannot connect (timeout)': 1 },
      },
      message: "a tool's context operation failed in the task store — 500 more like it not logged",
    });
    expect(lines[1]?.object.err).toBeUndefined();

    logger.error({ err: unavailable() }, "a tool's context operation failed in the task store");
    expect(lines).toHaveLength(3);
    expect(lines[2]?.object.err).toBeInstanceOf(StoreError);
    // A window with no repeat ends without a summary.
    advance(10_000);
    expect(lines).toHaveLength(3);
  });

  it("children share the windows; the summary is the process's, not the opening child's (its repeats came from others)", () => {
    const { lines, logger, advance } = harness();
    const store = logger.child({ component: 'postgres-task-store' });
    const run = logger.child({ taskId: 'abc…' }).child({ tool: 'x' });
    store.error({ err: unavailable() }, 'task store failed to connect');
    run.error({ err: unavailable() }, 'task store failed to connect');
    store.child({ more: 1 }).error({ err: unavailable() }, 'task store failed to connect');
    expect(lines).toHaveLength(1);
    expect(lines[0]?.bindings).toEqual({ component: 'postgres-task-store' });
    advance(10_000);
    expect(lines[1]?.object).toMatchObject({ repeats: 2 });
    expect(lines[1]?.bindings).toEqual({});
  });

  it('the summary counts each distinct cause (five named, the rest together): a different failure amid the outage shows', () => {
    const { lines, logger, advance } = harness();
    logger.error({ err: unavailable('ECONNREFUSED') }, 'task store failed');
    for (let i = 0; i < 3; i++) logger.error({ err: unavailable('ECONNREFUSED') }, 'task store failed');
    logger.error({ err: unavailable('53300 too many connections') }, 'task store failed');
    for (let i = 0; i < 6; i++) logger.error({ err: unavailable(`other ${i}`) }, 'task store failed');
    advance(10_000);
    const summary = lines[1]?.object as { repeats: number; causes: Record<string, number>; otherCauses: number };
    expect(summary.repeats).toBe(10);
    expect(summary.causes).toMatchObject({
      'Task store unavailable: cannot connect (ECONNREFUSED)': 3,
      'Task store unavailable: cannot connect (53300 too many connections)': 1,
    });
    expect(Object.keys(summary.causes)).toHaveLength(5);
    expect(summary.otherCauses).toBe(3);
  });

  it('control: other lines are written each time — other messages, levels, store error codes, errors of other kinds', () => {
    const { lines, logger } = harness();
    logger.error({ err: unavailable() }, 'task store failed');
    logger.error({ err: unavailable() }, 'task store failed to write');
    logger.warn({ err: unavailable() }, 'task store failed');
    for (let i = 0; i < 3; i++) {
      // A fault is coalesced per cause: three distinct ones under one message are each written.
      logger.error({ err: new StoreError('fault', `Task store failed: disk full (${i})`) }, 'task store failed');
      logger.error({ err: new StoreError('schema_mismatch', 'newer schema') }, 'task store failed');
      logger.error({ err: new Error('connect ECONNREFUSED') }, 'task store failed');
      logger.error({ method: 'putStep' }, 'task store failed');
      logger.info({ err: unavailable() }, 'task store failed');
      logger.debug({ err: unavailable() }, 'task store failed');
    }
    expect(lines).toHaveLength(3 + 3 * 6);
  });

  it('a repeated fault (a stopped store, a full disk) is written once per cause and counted; another cause is written whole', () => {
    const { lines, logger, advance } = harness();
    const stopped = () => new StoreError('fault', 'Task store stopped: an fsync of its write-ahead log failed (EIO); the server process must be restarted');
    for (let i = 0; i < 200; i++) logger.error({ err: stopped(), operations: 3 }, 'task store stopped: a commit could not be made durable');
    logger.error(
      { err: new StoreError('fault', 'Task store failed to commit: database or disk is full') },
      'task store stopped: a commit could not be made durable',
    );
    expect(lines).toHaveLength(2);
    expect(lines.map((line) => (line.object.err as Error).message)).toEqual([
      'Task store stopped: an fsync of its write-ahead log failed (EIO); the server process must be restarted',
      'Task store failed to commit: database or disk is full',
    ]);
    advance(10_000);
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({
      level: 'error',
      object: { repeats: 199, causes: { 'Task store stopped: an fsync of its write-ahead log failed (EIO); the server process must be restarted': 199 } },
      message: 'task store stopped: a commit could not be made durable — 199 more like it not logged',
    });
  });

  it('flushOutageLogs writes the summary of every open window now (shutdown), from any child, and closes them', () => {
    const { lines, logger, advance } = harness();
    const child = logger.child({ component: 'worker' });
    for (let i = 0; i < 4; i++) child.error({ err: unavailable() }, 'task store failed to connect');
    for (let i = 0; i < 2; i++) logger.warn({ err: unavailable() }, 'lease renewal failed');
    logger.error({ err: unavailable() }, 'a window with no repeat');
    expect(lines).toHaveLength(3);
    flushOutageLogs(child);
    expect(lines.slice(3).map((line) => [line.level, line.message, line.object.repeats, line.bindings])).toEqual([
      ['error', 'task store failed to connect — 3 more like it not logged', 3, {}],
      ['warn', 'lease renewal failed — 1 more like it not logged', 1, {}],
    ]);
    // Closed: the next failure opens a new window and is written whole; the flushed window's timer does not end the
    // new one early — its repeats are counted for a whole window of its own.
    advance(5_000);
    child.error({ err: unavailable() }, 'task store failed to connect');
    expect(lines).toHaveLength(6);
    expect(lines[5]?.object.err).toBeInstanceOf(StoreError);
    child.error({ err: unavailable() }, 'task store failed to connect');
    advance(5_000);
    expect(lines).toHaveLength(6);
    advance(5_000);
    expect(lines[6]).toMatchObject({ message: 'task store failed to connect — 1 more like it not logged', object: { repeats: 1, windowMs: 10_000 } });
    // Control: flushing a logger that was never wrapped does nothing and does not throw.
    expect(() => flushOutageLogs(silentLogger)).not.toThrow();
  });

  it('wrapping twice is a no-op (one set of windows)', () => {
    const { lines, logger } = harness();
    const again = coalesceOutageLogs(logger);
    expect(again).toBe(logger);
    again.error({ err: unavailable() }, 'task store failed');
    logger.error({ err: unavailable() }, 'task store failed');
    expect(lines).toHaveLength(1);
  });
});
