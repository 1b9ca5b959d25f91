import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { once } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { analyzeLogsTool } from '../../src/tools/analyze-logs/tool.js';
import { auditRepositoryTool } from '../../src/tools/audit-repository/tool.js';
import { forEachLine } from '../../src/tools/lines.js';
import { makeContext, makeTempDir } from './helpers.js';

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

describe('cancellation and cooperative scheduling', () => {
  let root: string;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    ({ dir: root, cleanup } = await makeTempDir('cancel'));
  });
  afterEach(() => cleanup());

  it('stops reading a large file at the next check after an abort', async () => {
    const file = path.join(root, 'big.log');
    await writeLog(file, 200_000);
    const controller = new AbortController();
    const reason = new Error('cancelled by test');
    let delivered = 0;
    const reading = forEachLine(
      file,
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
      file,
      () => {
        if (++delivered === 1) setImmediate(() => (immediateRanAt = delivered));
      },
      { signal: new AbortController().signal },
    );
    expect(delivered).toBe(50_000);
    expect(immediateRanAt).toBeGreaterThan(0);
    expect(immediateRanAt).toBeLessThanOrEqual(10_000);
  });

  it('aborts analyze_logs part-way through a tree and rethrows the abort reason', async () => {
    for (let i = 0; i < 6; i++) await writeLog(path.join(root, `part-${i}.log`), 20_000);
    const reason = new Error('cancelled by test');
    const context = makeContext([root], (done, _total, ctx) => {
      if (done === 2) ctx.controller.abort(reason);
    });
    await expect(analyzeLogsTool.run({ path: root, top: 20 }, context)).rejects.toBe(reason);
    expect(context.progressCalls.map(([done]) => done)).toEqual([0, 1, 2]);
  });

  it('aborts analyze_logs inside a single large file', async () => {
    await writeLog(path.join(root, 'huge.log'), 300_000);
    const reason = new Error('cancelled by test');
    // Aborted on the first event-loop turn after the scan starts; only the scan's own yields let it run.
    const context = makeContext([root], (done, _total, ctx) => {
      if (done === 0) setImmediate(() => ctx.controller.abort(reason));
    });
    await expect(analyzeLogsTool.run({ path: root, top: 20 }, context)).rejects.toBe(reason);
    expect(context.progressCalls.map(([done]) => done)).toEqual([0]);
  });

  it('aborts audit_repository part-way', async () => {
    for (let i = 0; i < 5; i++) await writeFile(path.join(root, `m${i}.ts`), 'export const x = 1;\n');
    const reason = new Error('cancelled by test');
    const context = makeContext([root], (done, _total, ctx) => {
      if (done === 1) ctx.controller.abort(reason);
    });
    await expect(auditRepositoryTool.run({ path: root }, context)).rejects.toBe(reason);
    expect(context.progressCalls.map(([done]) => done)).toEqual([0, 1]);
  });
});
