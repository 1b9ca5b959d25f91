import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { open, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { TemplateMiner } from '../../src/tools/analyze-logs/miner.js';
import { analyzeLogsTool } from '../../src/tools/analyze-logs/tool.js';
import { auditRepositoryTool } from '../../src/tools/audit-repository/tool.js';
import { forEachLine } from '../../src/tools/lines.js';
import { CLOCK_CHECK_CHARACTERS, CLOCK_CHECK_LINES, MAX_SLICE_MS } from '../../src/tools/yield.js';
import { highCardinalityLines, makeContext, makeTempDir } from './helpers.js';

/** Writes `lines` log lines without building the file in memory. */
async function writeLog(file: string, lines: number): Promise<void> {
  const out = createWriteStream(file);
  for (let i = 0; i < lines; i++) {
    if (!out.write(`2024-03-01T10:${String(i % 60).padStart(2, '0')}:00Z INFO request ${i} served in ${i % 97} ms\n`)) {
      await once(out, 'drain');
    }
  }
  out.end();
  await once(out, 'finish');
}

/**
 * Counts the work done between two turns of the event loop, as seen by a self-renewing `setImmediate`: a long
 * scan holds the server for as long as it runs between turns, so the most work between two turns is what the
 * tests bound. Work is counted, never timed, so that a slow or busy machine cannot fail them.
 */
function turnMeter() {
  let running = true;
  let lines = 0;
  let comparisons = 0;
  const most = { lines: 0, comparisons: 0 };
  const turn = () => {
    most.lines = Math.max(most.lines, lines);
    most.comparisons = Math.max(most.comparisons, comparisons);
    lines = 0;
    comparisons = 0;
    if (running) setImmediate(turn);
  };
  setImmediate(turn);
  return {
    count(lineCount: number, comparisonCount = 0) {
      lines += lineCount;
      comparisons += comparisonCount;
    },
    /** Stops the meter and returns the most work seen between two turns (the last stretch included). */
    stop() {
      running = false;
      turn();
      return most;
    },
  };
}

/** Milliseconds of fake time every line "takes" below: a slice fills up after a few lines. */
const SLOW_LINE_MS = 2;

describe('cancellation and cooperative scheduling', () => {
  let root: string;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    ({ dir: root, cleanup } = await makeTempDir('cancel'));
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    vi.useRealTimers();
    await cleanup();
  });

  it('stops reading a large file at the next check after an abort', async () => {
    const file = path.join(root, 'big.log');
    await writeLog(file, 200_000);
    const controller = new AbortController();
    const reason = new Error('cancelled by test');
    let delivered = 0;
    const reading = forEachLine(
      await open(file),
      () => {
        if (++delivered === 25_000) controller.abort(reason);
      },
      { signal: controller.signal },
    );
    await expect(reading).rejects.toBe(reason);
    // The signal is checked every 10,000 lines and also ends the stream at the next chunk: the abort at line
    // 25,000 stops the read by line 30,000 at the latest, long before the end of the file.
    expect(delivered).toBeGreaterThanOrEqual(25_000);
    expect(delivered).toBeLessThanOrEqual(30_000);
  });

  it('yields to the event loop while reading', async () => {
    const file = path.join(root, 'big.log');
    await writeLog(file, 50_000);
    let delivered = 0;
    let immediateRanAt = -1;
    await forEachLine(
      await open(file),
      () => {
        if (++delivered === 1) setImmediate(() => (immediateRanAt = delivered));
      },
      { signal: new AbortController().signal },
    );
    expect(delivered).toBe(50_000);
    expect(immediateRanAt).toBeGreaterThan(0);
    expect(immediateRanAt).toBeLessThanOrEqual(10_000);
  });

  /** Reads `file` with every line taking SLOW_LINE_MS of fake time; the most lines read between two turns. */
  async function mostSlowLinesPerTurn(file: string): Promise<number> {
    // Only the clock the reader measures slices with is fake; setImmediate and I/O stay real.
    vi.useFakeTimers({ toFake: ['performance'] });
    const meter = turnMeter();
    await forEachLine(
      await open(file),
      () => {
        vi.advanceTimersByTime(SLOW_LINE_MS);
        meter.count(1);
      },
      { signal: new AbortController().signal },
    );
    return meter.stop().lines;
  }

  it('yields by elapsed time as well as by line count when lines are slow', async () => {
    const file = path.join(root, 'big.log');
    await writeLog(file, 5000);
    // The clock is read every CLOCK_CHECK_LINES lines, and that many slow lines exceed the slice.
    expect(CLOCK_CHECK_LINES * SLOW_LINE_MS).toBeGreaterThanOrEqual(MAX_SLICE_MS);
    expect(await mostSlowLinesPerTurn(file)).toBeLessThanOrEqual(CLOCK_CHECK_LINES);
  });

  it('reads the clock by characters as well as by lines, so that a few long lines cannot fill a slice many times over', async () => {
    const file = path.join(root, 'long.log');
    const line = `2024-03-01T10:00:00Z INFO ${'x'.repeat(16_000)}\n`;
    await writeFile(file, line.repeat(200));
    // By lines alone the clock would be read every 16 lines; by characters it is read every 3 of these lines.
    const linesPerClockRead = Math.ceil(CLOCK_CHECK_CHARACTERS / line.length);
    expect(linesPerClockRead).toBeLessThan(CLOCK_CHECK_LINES);
    expect(await mostSlowLinesPerTurn(file)).toBeLessThanOrEqual(Math.ceil(MAX_SLICE_MS / SLOW_LINE_MS) + linesPerClockRead);
  });

  it('keeps the work of analyze_logs between two event-loop turns bounded on high-cardinality input', async () => {
    await writeFile(path.join(root, 'random.log'), `${highCardinalityLines(20_000).join('\n')}\n`);
    vi.useFakeTimers({ toFake: ['performance'] });
    const meter = turnMeter();
    const add = TemplateMiner.prototype.add;
    vi.spyOn(TemplateMiner.prototype, 'add').mockImplementation(function (this: TemplateMiner, ...args) {
      vi.advanceTimersByTime(SLOW_LINE_MS);
      const before = this.comparisons;
      const cluster = add.apply(this, args);
      meter.count(1, this.comparisons - before);
      return cluster;
    });
    const result = await analyzeLogsTool.run(analyzeLogsTool.inputSchema.parse({ path: root }), makeContext([root]));
    const most = meter.stop();
    expect(result.structuredContent).toMatchObject({ lines: 20_000 });
    expect(most.lines).toBeLessThanOrEqual(CLOCK_CHECK_LINES);
    // 100: the miner's default maxClustersPerLeaf, the most groups one message is compared with.
    expect(most.comparisons).toBeLessThanOrEqual(CLOCK_CHECK_LINES * 100);
  });

  it('aborts analyze_logs part-way through a tree and rethrows the abort reason', async () => {
    for (let i = 0; i < 6; i++) await writeLog(path.join(root, `part-${i}.log`), 20_000);
    const reason = new Error('cancelled by test');
    const context = makeContext([root], (done, _total, ctx) => {
      if (done === 2) ctx.controller.abort(reason);
    });
    await expect(analyzeLogsTool.run(analyzeLogsTool.inputSchema.parse({ path: root }), context)).rejects.toBe(reason);
    expect(context.progressCalls.map(([done]) => done)).toEqual([0, 1, 2]);
  });

  it('aborts analyze_logs inside a single large file', async () => {
    await writeLog(path.join(root, 'huge.log'), 300_000);
    const reason = new Error('cancelled by test');
    // Aborted on the first event-loop turn after the scan starts; only the scan's own yields let it run.
    const context = makeContext([root], (done, _total, ctx) => {
      if (done === 0) setImmediate(() => ctx.controller.abort(reason));
    });
    await expect(analyzeLogsTool.run(analyzeLogsTool.inputSchema.parse({ path: root }), context)).rejects.toBe(reason);
    expect(context.progressCalls.map(([done]) => done)).toEqual([0]);
  });

  it('aborts audit_repository part-way', async () => {
    for (let i = 0; i < 5; i++) await writeFile(path.join(root, `m${i}.ts`), 'export const x = 1;\n');
    const reason = new Error('cancelled by test');
    const context = makeContext([root], (done, _total, ctx) => {
      if (done === 1) ctx.controller.abort(reason);
    });
    await expect(auditRepositoryTool.run({ path: root, detail: 'full' }, context)).rejects.toBe(reason);
    expect(context.progressCalls.map(([done]) => done)).toEqual([0, 1]);
  });
});
