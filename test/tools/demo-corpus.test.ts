import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LogScanReport } from '../../src/tools/analyze-logs/scan.js';
import { analyzeLogsTool } from '../../src/tools/analyze-logs/tool.js';
import { writeDemoCorpus } from '../../src/tools/demo-corpus.js';
import { makeContext, makeTempDir } from './helpers.js';

/** Relative path → sha256 of every file under `dir`. */
async function fingerprint(dir: string): Promise<Record<string, string>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
  const hashes = await Promise.all(
    files.map(async (file) => [path.relative(dir, file), createHash('sha256').update(await readFile(file)).digest('hex')] as const),
  );
  return Object.fromEntries(hashes.sort((a, b) => (a[0] < b[0] ? -1 : 1)));
}

describe('demo corpus', () => {
  let base: string;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    ({ dir: base, cleanup } = await makeTempDir('corpus'));
  });
  afterEach(() => cleanup());

  it('writes the same bytes for the same seed and different bytes for another seed', async () => {
    const options = { files: 20, lines: 300, gzipRatio: 0.5 };
    const first = await writeDemoCorpus({ ...options, out: path.join(base, 'a'), seed: 7 });
    const second = await writeDemoCorpus({ ...options, out: path.join(base, 'b'), seed: 7 });
    const other = await writeDemoCorpus({ ...options, out: path.join(base, 'c'), seed: 8 });
    expect(first).toEqual(second);
    expect(first.files).toBe(20);
    expect(first.lines).toBeGreaterThanOrEqual(20 * 300);
    const a = await fingerprint(path.join(base, 'a'));
    expect(await fingerprint(path.join(base, 'b'))).toEqual(a);
    expect(await fingerprint(path.join(base, 'c'))).not.toEqual(a);
    expect(Object.keys(a)).toEqual(expect.arrayContaining(['README.md', 'host-00/inventory.csv']));
    expect(Object.keys(a).some((name) => name.startsWith('host-00/nginx/access.log'))).toBe(true);
    expect(Object.keys(a).some((name) => name.endsWith('.gz'))).toBe(true);
    expect(Object.keys(a).some((name) => /\.log\.\d/.test(name))).toBe(true);
    expect(other.files).toBe(20);
  });

  it('rejects nonsensical sizes', async () => {
    await expect(writeDemoCorpus({ out: base, files: -1, lines: 10 })).rejects.toBeInstanceOf(RangeError);
    await expect(writeDemoCorpus({ out: base, files: 1, lines: 10, gzipRatio: 2 })).rejects.toBeInstanceOf(RangeError);
  });

  it('is analysed into the templates of the systems it imitates, skipping its non-log files', async () => {
    const out = path.join(base, 'corpus');
    const written = await writeDemoCorpus({ out, files: 32, lines: 500, seed: 3 });
    const context = makeContext([base]);
    const result = await analyzeLogsTool.run({ path: out, top: 200 }, context);
    const report = result.structuredContent as unknown as LogScanReport;
    expect(report.files).toBe(32);
    expect(report.lines).toBe(written.lines);
    // README.md and one inventory.csv per host directory.
    expect(report.skippedFiles).toBe(1 + 1);
    expect(report.failedFiles).toEqual([]);
    const templates = report.templates.map((t) => t.template);
    for (const expected of [
      '<*> INFO dfs.DataNode$PacketResponder: PacketResponder <*> for block blk_<*> terminating',
      'sshd: Failed password for invalid user <*> from <*> port <*> ssh<*>',
      '- INFO [NIOServerCxn.Factory:<*>/<*>:NIOServerCnxnFactory@<*>] - Accepted socket connection from <*>',
      'CRON: (root) CMD (run-parts <*>',
      'java.lang.IllegalStateException: order <*> has no payment',
    ]) {
      expect(templates).toContain(expected);
    }
    expect(report.severities.ERROR).toBeGreaterThan(0);
    expect(report.severities.WARN).toBeGreaterThan(0);
    expect(report.severities.INFO).toBeGreaterThan(0);
    expect(Object.keys(report.perHour).filter((hour) => hour.startsWith('2024-02-29')).length).toBeGreaterThan(1);
    expect(context.statuses.at(-1)).toBe('scanned files (32/32)');
  });
});
