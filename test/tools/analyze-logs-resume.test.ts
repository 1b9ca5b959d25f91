/**
 * Resumable scans (issue 17): analyze_logs journals its progress in parts and a re-run merges them and goes on
 * from the last one, without opening completed files again. Here the journal is an in-memory stand-in for the
 * task store's steps (the same first-write-wins contract, values stored as JSON); test/e2e/analyze-resume.test.ts
 * does the same with a real server killed with SIGKILL.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { locateLoghub, missingDataHelp } from '../../bench/lib/loghub.mjs';
import type { JsonValue } from '../../src/core/task.js';
import { type LogScanReport, scanLogs, type ScanOptions } from '../../src/tools/analyze-logs/scan.js';
import { writeDemoCorpus } from '../../src/tools/demo-corpus.js';
import { Confinement, resolveConfined } from '../../src/tools/roots.js';
import { makeTempDir } from './helpers.js';

/** A journal with the step contract of the task store: a journaled value is returned, `fn` runs otherwise. */
class Journal {
  readonly values = new Map<string, string>();
  written = 0;
  /** Called after each write (to crash part-way). */
  afterWrite: (count: number) => void = () => {};

  step = async <T extends JsonValue>(name: string, fn: () => T | Promise<T>): Promise<T> => {
    const stored = this.values.get(name);
    if (stored !== undefined) return JSON.parse(stored) as T;
    const value = await fn();
    this.values.set(name, JSON.stringify(value));
    this.afterWrite(++this.written);
    return value;
  };
}

describe('analyze_logs resumes after a crash', () => {
  let root: string;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    ({ dir: root, cleanup } = await makeTempDir('resume'));
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await cleanup();
  });

  async function scan(journal: Journal, signal: AbortSignal, extra: Partial<ScanOptions> = {}): Promise<{ report: LogScanReport; progress: number[][] }> {
    const { target, confinement } = await resolveConfined(root, { roots: [root], deniedPaths: [] });
    const progress: number[][] = [];
    const report = await scanLogs({
      target,
      confinement,
      since: null,
      top: 1000,
      include: null,
      redact: [],
      signal,
      step: journal.step,
      onProgress: (done, total) => progress.push([done, total]),
      ...extra,
    });
    return { report, progress };
  }

  /** What must not depend on whether the scan ran in one go. */
  function essentials(report: LogScanReport) {
    const events = new Map<string, number>();
    for (const t of report.templates) events.set(t.template, (events.get(t.template) ?? 0) + t.events);
    return {
      files: report.files,
      lines: report.lines,
      events: report.events,
      severities: report.severities,
      perHour: report.perHour,
      perFile: report.perFile,
      formats: report.formats,
      timeRange: report.timeRange,
      templates: [...events].sort(),
      // Each file once per template, however the templates merged and the parts were cut (issue 26 item 11).
      templateFiles: report.templates.map((t) => `${t.template} :: ${t.files}`).sort(),
    };
  }

  /** Opens per file path during a call. */
  function countOpens(): Map<string, number> {
    const opens = new Map<string, number>();
    const open = Confinement.prototype.openForReading;
    vi.spyOn(Confinement.prototype, 'openForReading').mockImplementation(function (this: Confinement, file: string) {
      opens.set(path.relative(root, file), (opens.get(path.relative(root, file)) ?? 0) + 1);
      return open.call(this, file);
    });
    return opens;
  }

  it('merges the journaled parts and reads only the files not done, with progress going on from their count', async () => {
    await writeDemoCorpus({ out: root, files: 24, lines: 800, seed: 5, gzipRatio: 0.3 });
    const whole = await scan(new Journal(), new AbortController().signal);

    const journal = new Journal();
    const crash = new AbortController();
    // A part after every file: the crash comes after the tenth part, i.e. ten files done.
    journal.afterWrite = (count) => {
      if (count === 1 + 10) crash.abort(new Error('kill -9'));
    };
    await expect(scan(journal, crash.signal, { partMs: 0 })).rejects.toThrow('kill -9');
    const opens = countOpens();
    const resumed = await scan(journal, new AbortController().signal, { partMs: 0 });

    expect(resumed.report.resumedParts).toBe(10);
    expect(essentials(resumed.report)).toEqual(essentials(whole.report));
    // The ten completed files were not opened again; each of the others once.
    const files = Object.keys(await fingerprintFiles(whole.report));
    const done = files.slice(0, 10);
    for (const file of done) expect(opens.get(file), file).toBeUndefined();
    for (const file of files.slice(10)) expect(opens.get(file), file).toBe(1);
    expect(resumed.progress[0]).toEqual([10, 24]);
    expect(resumed.progress.at(-1)).toEqual([24, 24]);
    expect(resumed.progress.map(([d]) => d)).toEqual(Array.from({ length: 15 }, (_, i) => 10 + i));
  });

  it('one file is one file: every template of a real single-file scan (loghub OpenSSH, read in place) is in exactly 1 file', async () => {
    const loghub = locateLoghub();
    if (!loghub.dir) throw new Error(missingDataHelp(loghub.missing ?? '../shared/data/loghub'));
    const file = path.join(loghub.dir, 'OpenSSH', 'OpenSSH_2k.log');
    const { target, confinement } = await resolveConfined(file, { roots: [path.dirname(file)], deniedPaths: [] });
    const report = await scanLogs({
      target,
      confinement,
      since: null,
      top: 1000,
      include: null,
      redact: [],
      signal: new AbortController().signal,
      step: new Journal().step,
      onProgress: () => {},
    });
    expect(report.files).toBe(1);
    expect(report.templates.length).toBeGreaterThan(5);
    expect(report.templates.filter((t) => t.files !== 1).map((t) => `${t.template}: ${t.files}`)).toEqual([]);
  });

  it('resumes inside a large plain file at the journaled byte offset, and inside a gzip file by skipping what was read', async () => {
    const lines = Array.from({ length: 30_000 }, (_, i) => {
      const at = new Date(Date.UTC(2024, 2, 1) + i * 1000).toISOString();
      return i % 1000 === 999
        ? `${at} ERROR job ${i} failed\njava.lang.IllegalStateException: job ${i}\n\tat x.Y.run(Y.java:${i % 90})`
        : `${at} INFO job ${i} done in ${i % 97} ms`;
    });
    await mkdir(path.join(root, 'big'));
    await writeFile(path.join(root, 'big', 'plain.log'), `${lines.join('\n')}\n`);
    await writeFile(path.join(root, 'big', 'packed.log.gz'), await promisify(gzip)(`${lines.join('\n')}\n`));
    const whole = await scan(new Journal(), new AbortController().signal);

    const journal = new Journal();
    // Parts every 256 kB; files are read in name order: the gzip file (1.4 MB unpacked), then the plain one.
    const options = { partBytes: 256 * 1024 };
    let crash = new AbortController();
    journal.afterWrite = (count) => {
      // The first run dies inside the gzip file; the second, after its resume mark and four parts, in the plain one.
      if (count === 1 + 3 || count === 1 + 3 + 1 + 4) crash.abort(new Error('kill -9'));
    };
    await expect(scan(journal, crash.signal, options)).rejects.toThrow('kill -9');
    const last = () =>
      [...journal.values.values()]
        .map((value) => JSON.parse(value))
        .filter((value) => value.kind === 'part')
        .at(-1).next;
    expect(last()).toMatchObject({ path: 'big/packed.log.gz', offset: expect.any(Number) });
    expect(last().offset).toBeGreaterThan(0);

    crash = new AbortController();
    let opens = countOpens();
    await expect(scan(journal, crash.signal, options)).rejects.toThrow('kill -9');
    expect(last()).toMatchObject({ path: 'big/plain.log' });
    expect(last().offset).toBeGreaterThan(0);
    // The gzip file cannot be read from an offset: it is decompressed again, up to where it stopped, unmined.
    expect(Object.fromEntries(opens)).toEqual({ 'big/packed.log.gz': 1, 'big/plain.log': 1 });

    vi.restoreAllMocks();
    opens = countOpens();
    const resumed = await scan(journal, new AbortController().signal, options);
    expect(Object.fromEntries(opens)).toEqual({ 'big/plain.log': 1 });
    expect(resumed.report.resumedParts).toBe(3 + 4);
    expect(essentials(resumed.report)).toEqual(essentials(whole.report));
    // Stack traces cut by no part: each error is one event of three lines.
    expect(resumed.report.templates.find((t) => t.template === 'job <*> failed')).toMatchObject({ events: 60, lines: 180 });
  });

  it('an inline call (no task) has nothing to resume and journals nothing it reads back', async () => {
    await writeFile(path.join(root, 'a.log'), '2024-03-01T00:00:00Z INFO one\n');
    const journal = new Journal();
    const first = await scan(journal, new AbortController().signal);
    expect(first.report.resumedParts).toBe(0);
    // The only write marks where the run started.
    expect([...journal.values.values()]).toEqual(['{"kind":"resumed"}']);
  });
});

/** Files in the order the scan listed them (perFile is in walk order), as a record for readability. */
async function fingerprintFiles(report: LogScanReport): Promise<Record<string, true>> {
  return Object.fromEntries(report.perFile.map((file) => [file.path, true]));
}
