import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ToolInputError } from '../../src/core/tool.js';
import { analyzeLogsTool } from '../../src/tools/analyze-logs/tool.js';
import { logFileSelector } from '../../src/tools/analyze-logs/files.js';
import type { LogScanReport } from '../../src/tools/analyze-logs/scan.js';
import { makeContext, makeTempDir } from './helpers.js';

const SERVICE_LOG = [
  '2024-03-01T10:15:00Z INFO Starting service on port 8080',
  '2024-03-01T10:15:01Z INFO User alice logged in from 10.0.0.1',
  '2024-03-01T10:20:00Z WARN Disk usage at 91% on /dev/sda1',
  '2024-03-01T11:00:00Z INFO User bob logged in from 10.0.0.2',
  '',
  '2024-03-01T11:05:00Z ERROR Connection to db-1 failed after 3 retries',
  '2024-03-01T11:06:00Z ERROR Connection to db-2 failed after 5 retries',
  'java.lang.IllegalStateException: boom',
  '2024-03-01T11:30:00Z INFO User carol logged in from 10.0.0.3',
].join('\n');

const ACCESS_LOG = [
  '10.0.0.1 - - [01/Mar/2024:09:00:00 +0000] "GET /index.html HTTP/1.1" 200 512',
  '10.0.0.2 - - [01/Mar/2024:09:30:00 +0000] "GET /about.html HTTP/1.1" 200 1024',
  '10.0.0.3 - - [01/Mar/2024:11:10:00 +0100] "POST /login HTTP/1.1" 302 0',
].join('\r\n');

const zero = { FATAL: 0, ERROR: 0, WARN: 0, INFO: 0, DEBUG: 0, TRACE: 0, UNKNOWN: 0 };

describe('analyze_logs', () => {
  let root: string;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    ({ dir: root, cleanup } = await makeTempDir('analyze-logs'));
    await mkdir(path.join(root, 'app'));
    await mkdir(path.join(root, 'data'));
    await writeFile(path.join(root, 'app', 'service.log'), `${SERVICE_LOG}\n`);
    await writeFile(path.join(root, 'app', 'service.log.1.gz'), await promisify(gzip)(ACCESS_LOG));
    await writeFile(path.join(root, 'data', 'metrics.csv'), 'time,level\n2024-03-01T10:00:00Z,ERROR\n');
    await writeFile(path.join(root, 'README.md'), '2024-03-01T10:00:00Z ERROR not a log\n');
    await writeFile(path.join(root, 'notes.txt'), '2024-03-01T12:00:00Z ERROR Something broke\n');
  });
  afterEach(() => cleanup());

  async function analyze(args: { path: string; since?: string; top?: number; include?: string }) {
    const context = makeContext([root]);
    const result = await analyzeLogsTool.run({ top: 20, ...args }, context);
    analyzeLogsTool.outputSchema?.parse(result.structuredContent);
    return { result, report: result.structuredContent as unknown as LogScanReport, context };
  }

  it('groups lines into templates and counts severities per file and per hour', async () => {
    const { result, report } = await analyze({ path: root });
    expect(result.isError).toBeUndefined();
    expect(report).toMatchObject({ path: root, files: 2, lines: 11, linesBeforeSince: 0, skippedFiles: 3, escapedSymlinks: 0 });
    expect(report.severities).toEqual({ ...zero, INFO: 4, WARN: 1, ERROR: 2, UNKNOWN: 4 });
    expect(report.templates).toEqual([
      { template: 'INFO User <*> logged in from <*>', count: 3, example: '2024-03-01T10:15:01Z INFO User alice logged in from 10.0.0.1' },
      { template: '<*> - - <*> <*> HTTP/<*>" <*> <*>', count: 3, example: ACCESS_LOG.split('\r\n')[0] },
      { template: 'ERROR Connection to db-<*> failed after <*> retries', count: 2, example: SERVICE_LOG.split('\n')[5] },
      { template: 'INFO Starting service on port <*>', count: 1, example: SERVICE_LOG.split('\n')[0] },
      { template: 'WARN Disk usage at <*> on <*>', count: 1, example: SERVICE_LOG.split('\n')[2] },
      { template: 'java.lang.IllegalStateException: boom', count: 1, example: 'java.lang.IllegalStateException: boom' },
    ]);
    expect(report.templateCount).toBe(6);
    expect(report.perFile).toEqual([
      { path: 'app/service.log', lines: 8, severities: { ...zero, INFO: 4, WARN: 1, ERROR: 2, UNKNOWN: 1 } },
      { path: 'app/service.log.1.gz', lines: 3, severities: { ...zero, UNKNOWN: 3 } },
    ]);
    expect(report.perHour).toEqual({
      '2024-03-01T09:00Z': { lines: 2, severities: { ...zero, UNKNOWN: 2 } },
      '2024-03-01T10:00Z': { lines: 4, severities: { ...zero, INFO: 2, WARN: 1, UNKNOWN: 1 } },
      '2024-03-01T11:00Z': { lines: 4, severities: { ...zero, INFO: 2, ERROR: 2 } },
      unknown: { lines: 1, severities: { ...zero, UNKNOWN: 1 } },
    });
    expect(Object.keys(report.perHour)).toEqual(['2024-03-01T09:00Z', '2024-03-01T10:00Z', '2024-03-01T11:00Z', 'unknown']);
    const text = (result.content[0] as { text: string }).text;
    expect(text).toContain('Scanned 2 log files (3 other files skipped), 11 lines');
    expect(text).toContain('3 × INFO User <*> logged in from <*>');
  });

  it('returns only the top templates', async () => {
    const { report } = await analyze({ path: root, top: 2 });
    expect(report.templates.map((t) => t.count)).toEqual([3, 3]);
    expect(report.templateCount).toBe(6);
  });

  it('scans a single file', async () => {
    const { report } = await analyze({ path: path.join(root, 'app', 'service.log.1.gz') });
    expect(report).toMatchObject({ files: 1, lines: 3, skippedFiles: 0 });
    expect(report.perFile.map((file) => file.path)).toEqual(['service.log.1.gz']);
  });

  it('skips lines before since, keeping untimed lines with the line they follow', async () => {
    const { report } = await analyze({ path: root, since: '2024-03-01T12:00:00+01:00' });
    expect(report.lines).toBe(5);
    expect(report.linesBeforeSince).toBe(6);
    expect(report.severities).toEqual({ ...zero, INFO: 2, ERROR: 2, UNKNOWN: 1 });
    expect(Object.keys(report.perHour)).toEqual(['2024-03-01T11:00Z', 'unknown']);
  });

  it('accepts a date-only since (midnight UTC)', async () => {
    const { report } = await analyze({ path: root, since: '2024-03-02' });
    expect(report.lines).toBe(0);
    expect(report.linesBeforeSince).toBe(11);
  });

  it('rejects an invalid since as a tool input error, before and during the run', async () => {
    await expect(analyzeLogsTool.preflight?.({ path: root, top: 20, since: 'yesterday' }, { roots: [root], deniedPaths: [] })).rejects.toBeInstanceOf(
      ToolInputError,
    );
    await expect(analyze({ path: root, since: '2024-13-45T99:00:00Z' })).rejects.toBeInstanceOf(ToolInputError);
  });

  it('scans files matching include in addition to the log files', async () => {
    const { report } = await analyze({ path: root, include: '*.txt' });
    expect(report).toMatchObject({ files: 3, lines: 12, skippedFiles: 2 });
    expect(report.severities.ERROR).toBe(3);
    const nested = await analyze({ path: root, include: 'data/**' });
    expect(nested.report.perFile.map((file) => file.path)).toContain('data/metrics.csv');
  });

  it('answers a path outside the roots, a relative path or a bad glob with a tool input error in preflight', async () => {
    const preflight = (args: { path: string; include?: string }) =>
      analyzeLogsTool.preflight?.({ top: 20, ...args }, { roots: [path.join(root, 'app')], deniedPaths: [] });
    await expect(preflight({ path: path.join(root, 'data') })).rejects.toBeInstanceOf(ToolInputError);
    await expect(preflight({ path: 'app' })).rejects.toBeInstanceOf(ToolInputError);
    await expect(preflight({ path: path.join(root, 'app'), include: '[' })).rejects.toBeInstanceOf(ToolInputError);
    await expect(preflight({ path: path.join(root, 'app') })).resolves.toBeUndefined();
  });

  it('redacts secrets in templates and examples', async () => {
    const key = 'AKIAIOSFODNN7EXAMPLE';
    const password = 'hunter2hunter2';
    await writeFile(
      path.join(root, 'app', 'secrets.log'),
      `2024-03-01T10:00:00Z INFO using key ${key}\n2024-03-01T10:00:01Z INFO login password=${password} ok\n`,
    );
    const { result } = await analyze({ path: path.join(root, 'app', 'secrets.log') });
    const json = JSON.stringify(result);
    expect(json).not.toContain(key);
    expect(json).not.toContain(password);
    expect(json).toContain('AKIA…');
  });

  it('reports an unreadable file and goes on with the others', async () => {
    await writeFile(path.join(root, 'app', 'broken.log.gz'), 'this is not gzip data\n');
    const { report } = await analyze({ path: root });
    expect(report).toMatchObject({ files: 2, lines: 11, skippedFiles: 4 });
    expect(report.failedFiles).toEqual([{ path: 'app/broken.log.gz', error: expect.stringMatching(/header/) }]);
  });

  it('never mines binary content, whatever the names and globs that selected the file', async () => {
    const random = randomBytes(300 * 1024);
    // Binary behind a log name, reached through a glob, and inside a gzip file (seen after decompression).
    await writeFile(path.join(root, 'app', 'state.log'), Buffer.concat([Buffer.from('SQLite format 3\0'), random]));
    await writeFile(path.join(root, 'data', 'core.dump'), random);
    await writeFile(path.join(root, 'app', 'blob.log.2.gz'), await promisify(gzip)(random));
    // A log that turns binary part-way (NUL padding after a crash): read up to there, then reported.
    const padded = Buffer.concat([Buffer.from(`${'2024-03-01T12:00:00Z INFO before the crash\n'.repeat(7000)}`), Buffer.alloc(64 * 1024)]);
    await writeFile(path.join(root, 'app', 'crashed.log'), padded);
    const { result, report } = await analyze({ path: root, include: '**/*.dump' });
    expect(report).toMatchObject({ files: 2, binaryFiles: 3, skippedFiles: 3 + 3 + 1 });
    expect(report.lines).toBeGreaterThan(11);
    expect(report.lines).toBeLessThanOrEqual(11 + 7000);
    expect(report.perFile.map((file) => file.path)).toEqual(['app/crashed.log', 'app/service.log', 'app/service.log.1.gz']);
    expect(report.failedFiles).toEqual([{ path: 'app/crashed.log', error: expect.stringMatching(/^binary content at byte \d+; not read from there$/) }]);
    expect(JSON.stringify(report.templates)).not.toMatch(/\\u0000|\uFFFD/);
    expect(result.content[0]).toMatchObject({ text: expect.stringContaining('3 files with binary content skipped.') });
  });

  it('keeps reading Latin-1 and UTF-8 text with terminal colours as text', async () => {
    await writeFile(path.join(root, 'app', 'latin1.log'), Buffer.from('2024-03-01T12:00:00Z INFO café prêt à été\n'.repeat(50), 'latin1'));
    await writeFile(path.join(root, 'app', 'colour.log'), '2024-03-01T12:00:00Z \u001b[31mERROR\u001b[0m 日本語 ✓\n'.repeat(50));
    const { report } = await analyze({ path: root });
    expect(report).toMatchObject({ files: 4, binaryFiles: 0, lines: 111 });
  });

  it('reports progress per file', async () => {
    const { context } = await analyze({ path: root });
    expect(context.progressCalls).toEqual([
      [0, 2, 'scanned files'],
      [1, 2, 'scanned files'],
      [2, 2, 'scanned files'],
    ]);
    expect(context.statuses.at(-1)).toBe('scanned files (2/2)');
  });

  it('states in its description exactly which files it reads', () => {
    const { description } = analyzeLogsTool;
    const selected = logFileSelector();
    const read: [string, string][] = [
      ['app.log', '*.log'],
      ['app.log.3', '*.log.N'],
      ['syslog', 'syslog'],
      ['messages.1', 'messages'],
      ['dmesg', 'dmesg'],
      ['app.log.2.gz', 'gzipped'],
      ['trace.gz', 'every other *.gz'],
    ];
    for (const [name, mention] of read) {
      expect(selected(name), name).toBe(true);
      expect(description).toContain(mention);
    }
    for (const data of ['tar', 'csv', 'tsv', 'json', 'sql', 'xml', 'parquet']) {
      expect(selected(`x.${data}.gz`)).toBe(false);
      expect(description).toContain(`*.${data}.gz`);
    }
  });

  it('validates its arguments with the input schema', () => {
    const schema = analyzeLogsTool.inputSchema;
    expect(schema.parse({ path: '/x' })).toEqual({ path: '/x', top: 20 });
    expect(schema.safeParse({ path: '/x', top: 1001 }).success).toBe(false);
    expect(schema.safeParse({ path: '/x', top: 0 }).success).toBe(false);
  });
});
