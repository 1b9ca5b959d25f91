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
    files.map(
      async (file) =>
        [
          path.relative(dir, file),
          createHash('sha256')
            .update(await readFile(file))
            .digest('hex'),
        ] as const,
    ),
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
    const result = await analyzeLogsTool.run(analyzeLogsTool.inputSchema.parse({ path: out, top: 200, detail: 'full' }), context);
    const report = result.structuredContent as unknown as LogScanReport;
    expect(report.files).toBe(32);
    expect(report.lines).toBe(written.lines);
    // README.md and one inventory.csv per host directory.
    expect(report.skippedFiles).toBe(1 + 1);
    expect(report.failedFiles).toEqual([]);
    const templates = report.templates.map((t) => t.template);
    // Headers are stripped: templates are mined on messages (the tag is the component).
    for (const expected of [
      'PacketResponder <*> for block blk_<*> terminating',
      'Failed password for invalid user <*> from <*> port <*> ssh<*>',
      'Accepted socket connection from <*>',
      '(root) CMD (run-parts <*>)',
      'Failed to process order <*>',
      'GET <*> HTTP/<*> 2xx',
      'GET <*> HTTP/<*> 5xx',
    ]) {
      expect(templates).toContain(expected);
    }
    // A stack trace is one event under its first line, not templates of its own.
    expect(templates.some((t) => t.includes('IllegalStateException') || t.startsWith('at '))).toBe(false);
    expect(report.events).toBeLessThan(report.lines);
    expect(report.templates.find((t) => t.template === 'Failed password for invalid user <*> from <*> port <*> ssh<*>')).toMatchObject({
      component: 'sshd',
      severity: 'WARN',
      severitySource: 'implied',
    });
    // Every file was last written when its last line was: syslog dates get their year (2024, a leap year) from it.
    expect(Object.keys(report.perHour).every((hour) => hour === 'unknown' || hour.startsWith('2024-02-29'))).toBe(true);
    expect(report.severities.ERROR).toBeGreaterThan(0);
    expect(report.severities.WARN).toBeGreaterThan(0);
    expect(report.severities.INFO).toBeGreaterThan(0);
    expect(Object.keys(report.perHour).filter((hour) => hour.startsWith('2024-02-29')).length).toBeGreaterThan(1);
    expect(context.statuses.at(-1)).toBe('scanned files (32/32)');
  });

  it('holds an incident in its last two hours that the report shows as new and spiking', async () => {
    const out = path.join(base, 'incident');
    await writeDemoCorpus({ out, files: 64, lines: 2000, seed: 1 });
    const result = await analyzeLogsTool.run(analyzeLogsTool.inputSchema.parse({ path: out, detail: 'full' }), makeContext([base]));
    const report = result.structuredContent as unknown as LogScanReport;
    expect(report.trends.new.map((t) => t.template)).toContain('HikariPool-<*> - Connection is not available, request timed out after <*>ms.');
    expect(report.trends.spiking.map((t) => t.template)).toContain('Out of memory: Killed process <*> (java) total-vm:<*>kB, anon-rss:<*>kB');
  });
});
