import { randomBytes } from 'node:crypto';
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { ToolInputError } from '../../src/core/tool.js';
import { logFileSelector } from '../../src/tools/analyze-logs/files.js';
import type { LogScanReport, TemplateReport } from '../../src/tools/analyze-logs/scan.js';
import { analyzeLogsTool } from '../../src/tools/analyze-logs/tool.js';
import { makeContext, makeTempDir } from './helpers.js';

const SERVICE_LOG = [
  '2024-03-01T10:15:00Z INFO Starting service on port 8080',
  '2024-03-01T10:15:01Z INFO Cache warmed in 120 ms',
  '2024-03-01T10:20:00Z WARN Disk usage at 91% on /dev/sda1',
  '2024-03-01T11:00:00Z INFO Cache warmed in 98 ms',
  '',
  '2024-03-01T11:05:00Z ERROR Connection to db-1 failed after 3 retries',
  '2024-03-01T11:06:00Z ERROR Connection to db-2 failed after 5 retries',
  'java.lang.IllegalStateException: boom',
  '\tat com.example.Db.connect(Db.java:42)',
  '2024-03-01T11:30:00Z INFO Cache warmed in 101 ms',
].join('\n');

const ACCESS_LOG = [
  '10.0.0.1 - - [01/Mar/2024:09:00:00 +0000] "GET /index.html HTTP/1.1" 200 512 "-" "curl/8.5.0"',
  '10.0.0.2 - - [01/Mar/2024:09:30:00 +0000] "GET /about.html HTTP/1.1" 200 1024 "-" "Mozilla/5.0 (X11; Linux x86_64)"',
  '10.0.0.3 - - [01/Mar/2024:11:10:00 +0100] "GET /login HTTP/1.1" 503 0 "-" "curl/8.5.0"',
  '10.0.0.4 - alice [01/Mar/2024:11:20:00 +0100] "POST /login HTTP/1.1" 503 0 "-" "curl/8.5.0"',
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

  async function analyze(args: Record<string, unknown>) {
    const context = makeContext([root]);
    // The full structuredContent (issue 27 §2: the default is the summary, tested in analyze-logs-summary.test.ts).
    const result = await analyzeLogsTool.run(analyzeLogsTool.inputSchema.parse({ detail: 'full', ...args }), context);
    analyzeLogsTool.outputSchema?.parse(result.structuredContent);
    return { result, report: result.structuredContent as unknown as LogScanReport, context, text: (result.content[0] as { text: string }).text };
  }

  const brief = (t: TemplateReport) => [t.template, t.severity, t.events];

  it('mines messages without their headers, counts a stack trace as one event, and counts per file and hour', async () => {
    const { result, report } = await analyze({ path: root });
    expect(result.isError).toBeUndefined();
    expect(report).toMatchObject({ path: root, files: 2, lines: 13, events: 11, linesBeforeSince: 0, skippedFiles: 3, escapedSymlinks: 0 });
    expect(report.formats).toEqual({ 'time-level': 1, learned: 1 });
    expect(report.templates.map(brief)).toEqual([
      ['Cache warmed in <*> ms', 'INFO', 3],
      ['Connection to db-<*> failed after <*> retries', 'ERROR', 2],
      ['GET <*> HTTP/<*> 2xx', 'INFO', 2],
      ['Starting service on port <*>', 'INFO', 1],
      ['Disk usage at <*> on <*>', 'WARN', 1],
      ['GET <*> HTTP/<*> 5xx', 'ERROR', 1],
      ['POST <*> HTTP/<*> 5xx', 'ERROR', 1],
    ]);
    const failed = report.templates[1] as TemplateReport;
    // The stack trace belongs to the second connection error: two events, four lines.
    expect(failed).toMatchObject({
      lines: 4,
      severitySource: 'stated',
      firstSeen: '2024-03-01T11:05:00.000Z',
      lastSeen: '2024-03-01T11:06:00.000Z',
      files: 1,
      fileSamples: ['app/service.log'],
      example: SERVICE_LOG.split('\n')[5],
    });
    expect(report.templates[5]).toMatchObject({ severitySource: 'implied', example: ACCESS_LOG.split('\r\n')[2] });
    expect(report.perFile).toEqual([
      { path: 'app/service.log', format: 'time-level', lines: 9, events: 7, severities: { ...zero, INFO: 4, WARN: 1, ERROR: 2 } },
      { path: 'app/service.log.1.gz', format: 'learned', lines: 4, events: 4, severities: { ...zero, INFO: 2, ERROR: 2 } },
    ]);
    expect(report.perHour).toEqual({
      '2024-03-01T09:00Z': { lines: 2, events: 2, severities: { ...zero, INFO: 2 } },
      '2024-03-01T10:00Z': { lines: 5, events: 5, severities: { ...zero, INFO: 2, WARN: 1, ERROR: 2 } },
      '2024-03-01T11:00Z': { lines: 6, events: 4, severities: { ...zero, INFO: 2, ERROR: 2 } },
    });
    expect(report.timeRange).toEqual({ first: '2024-03-01T09:00:00.000Z', last: '2024-03-01T11:30:00.000Z' });
  });

  it('lists errors and warnings first, the most severe first, with their facts in the text report', async () => {
    const { report, text } = await analyze({ path: root });
    expect(report.attention.map(brief)).toEqual([
      ['Connection to db-<*> failed after <*> retries', 'ERROR', 2],
      ['GET <*> HTTP/<*> 5xx', 'ERROR', 1],
      ['POST <*> HTTP/<*> 5xx', 'ERROR', 1],
      ['Disk usage at <*> on <*>', 'WARN', 1],
    ]);
    expect(report.attentionCount).toBe(4);
    const attention = text.indexOf('Errors and warnings first (4 templates):');
    const frequent = text.indexOf('Most frequent templates (7 of 7):');
    expect(attention).toBeGreaterThan(0);
    expect(frequent).toBeGreaterThan(attention);
    expect(text).toContain(
      '  ERROR 2 × Connection to db-<*> failed after <*> retries\n        first 2024-03-01 11:05:00, last 2024-03-01 11:06:00, in 1 file (app/service.log)',
    );
    expect(text).toContain('Scanned 2 log files (3 other files skipped), 13 lines in 11 events under');
    expect(text).toMatch(/Events per hour \(UTC\), 2024-03-01 09:00 to 2024-03-01 11:00, one column per hour/);
    expect(text).toMatch(/ {2}all {9}[▁▂▃▄▅▆▇█ ]{3} {2}max 5/);
  });

  it('shows `top` templates per list in the text as in the structured report, and says how many more there are', async () => {
    const { report, text } = await analyze({ path: root, top: 2 });
    expect(report.templates.map((t) => t.events)).toEqual([3, 2]);
    expect(report.attention).toHaveLength(2);
    expect(report.templateCount).toBe(7);
    expect(text).toContain('Most frequent templates (2 of 7):');
    expect(text).toContain('… 5 more templates (raise "top" to see them)');
    expect(text).toContain('… 2 more error or warning templates');
    const one = await analyze({ path: root, top: 3 });
    expect(one.text).toContain('… 1 more error or warning template (');
  });

  it('scans a single file', async () => {
    const { report } = await analyze({ path: path.join(root, 'app', 'service.log.1.gz') });
    expect(report).toMatchObject({ files: 1, lines: 4, skippedFiles: 0 });
    expect(report.perFile.map((file) => file.path)).toEqual(['service.log.1.gz']);
  });

  it('skips events before since, keeping untimed lines with the line they follow', async () => {
    const { report } = await analyze({ path: root, since: '2024-03-01T12:00:00+01:00' });
    expect(report.lines).toBe(6);
    expect(report.events).toBe(4);
    expect(report.linesBeforeSince).toBe(7);
    expect(report.eventsBeforeSince).toBe(7);
    expect(report.severities).toEqual({ ...zero, INFO: 2, ERROR: 2 });
    expect(Object.keys(report.perHour)).toEqual(['2024-03-01T11:00Z']);
  });

  it('keeps lines of a file before its first timestamp, and lines of files without timestamps, whatever since says', async () => {
    await writeFile(path.join(root, 'app', 'untimed.log'), 'starting up\nready\n2024-03-01T08:00:00Z INFO old\nafter old\n');
    const { report } = await analyze({ path: path.join(root, 'app', 'untimed.log'), since: '2024-03-01T09:00:00Z' });
    // `starting up` and `ready` come before any timestamp; `after old` follows an old one.
    expect(report).toMatchObject({ lines: 2, linesBeforeSince: 2 });
  });

  it('accepts a date-only since (midnight UTC)', async () => {
    const { report } = await analyze({ path: root, since: '2024-03-02' });
    expect(report.lines).toBe(0);
    expect(report.linesBeforeSince).toBe(13);
  });

  it('rejects an invalid since as a tool input error, before and during the run', async () => {
    const args = analyzeLogsTool.inputSchema.parse({ path: root, since: 'yesterday' });
    await expect(analyzeLogsTool.preflight?.(args, { roots: [root], deniedPaths: [] })).rejects.toBeInstanceOf(ToolInputError);
    await expect(analyze({ path: root, since: '2024-13-45T99:00:00Z' })).rejects.toBeInstanceOf(ToolInputError);
  });

  it('scans files matching include in addition to the log files', async () => {
    const { report } = await analyze({ path: root, include: '*.txt' });
    expect(report).toMatchObject({ files: 3, lines: 14, skippedFiles: 2 });
    expect(report.severities.ERROR).toBe(5);
    const nested = await analyze({ path: root, include: 'data/**' });
    expect(nested.report.perFile.map((file) => file.path)).toContain('data/metrics.csv');
  });

  it('answers a path outside the roots, a relative path or a bad glob with a tool input error in preflight', async () => {
    const preflight = (args: { path: string; include?: string }) =>
      analyzeLogsTool.preflight?.(analyzeLogsTool.inputSchema.parse(args), { roots: [path.join(root, 'app')], deniedPaths: [] });
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

  it('redacts e-mail addresses and Luhn-valid card numbers by default, IP addresses on request', async () => {
    const lines = [
      '2024-03-01T10:00:00Z INFO order paid by alice.smith+shop@example.co.uk with 4111 1111 1111 1111 from 192.0.2.10',
      '2024-03-01T10:00:01Z INFO order paid by bob@example.com with 5500-0000-0000-0004 from 2001:db8:0:0:0:0:0:1',
      '2024-03-01T10:00:02Z INFO order paid by carol@example.org with 378282246310005 from 198.51.100.7',
      // Not cards: fails Luhn, an epoch in ms, an HDFS block id.
      '2024-03-01T10:00:03Z INFO ref 4111111111111112 at 1709287200123 for blk_4111111111111111',
    ];
    await writeFile(path.join(root, 'app', 'pii.log'), `${lines.join('\n')}\n`);
    const file = path.join(root, 'app', 'pii.log');
    const byDefault = JSON.stringify((await analyze({ path: file })).result);
    for (const secret of ['alice.smith', 'example.co.uk', 'bob@', 'carol@', '4111 1111', '5500-0000', '378282246310005']) {
      expect(byDefault).not.toContain(secret);
    }
    expect(byDefault).toContain('order paid by <email> with <card> from 192.0.2.10');
    expect(byDefault).toContain('ref 4111111111111112 at 1709287200123 for blk_4111111111111111');
    const withIp = JSON.stringify((await analyze({ path: file, redact: ['email', 'card', 'ip'] })).result);
    for (const ip of ['192.0.2.10', '2001:db8:0:0:0:0:0:1', '198.51.100.7']) expect(withIp).not.toContain(ip);
    expect(withIp).toContain('from <ip>');
    const none = JSON.stringify((await analyze({ path: file, redact: [] })).result);
    expect(none).toContain('bob@example.com');
  });

  it('reports an unreadable file and goes on with the others', async () => {
    await writeFile(path.join(root, 'app', 'broken.log.gz'), 'this is not gzip data\n');
    const { report } = await analyze({ path: root });
    expect(report).toMatchObject({ files: 2, lines: 13, skippedFiles: 4 });
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
    const { report, text } = await analyze({ path: root, include: '**/*.dump' });
    expect(report).toMatchObject({ files: 2, binaryFiles: 3, skippedFiles: 3 + 3 + 1 });
    expect(report.lines).toBeGreaterThan(13);
    expect(report.lines).toBeLessThanOrEqual(13 + 7000);
    expect(report.perFile.map((file) => file.path)).toEqual(['app/crashed.log', 'app/service.log', 'app/service.log.1.gz']);
    expect(report.failedFiles).toEqual([{ path: 'app/crashed.log', error: expect.stringMatching(/^binary content at byte \d+; not read from there$/) }]);
    expect(JSON.stringify(report.templates)).not.toMatch(/\\u0000|\uFFFD/);
    expect(text).toContain('3 files with binary content skipped.');
  });

  it('keeps reading Latin-1 and UTF-8 text with terminal colours as text', async () => {
    await writeFile(path.join(root, 'app', 'latin1.log'), Buffer.from('2024-03-01T12:00:00Z INFO café prêt à été\n'.repeat(50), 'latin1'));
    await writeFile(path.join(root, 'app', 'colour.log'), '2024-03-01T12:00:00Z \u001b[31mERROR\u001b[0m 日本語 ✓\n'.repeat(50));
    const { report } = await analyze({ path: root });
    expect(report).toMatchObject({ files: 4, binaryFiles: 0, lines: 113 });
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

  it('marks templates that are new or spiking in the last 6 hours against the hours before, on the chart too', async () => {
    const lines: string[] = [];
    const at = (hour: number, minute: number) => new Date(Date.UTC(2024, 2, 1, hour, minute)).toISOString();
    for (let hour = 0; hour < 24; hour++) {
      for (let m = 0; m < 10; m++) lines.push(`${at(hour, m)} INFO heartbeat ok`);
      // Two timeouts an hour, then twenty an hour in the last six hours.
      for (let m = 0; m < (hour >= 18 ? 20 : 2); m++) lines.push(`${at(hour, 10 + m)} WARN request timed out after 30 s`);
      if (hour >= 21) lines.push(`${at(hour, 45)} ERROR disk /dev/sdb failing: read error`);
    }
    await writeFile(path.join(root, 'app', 'trend.log'), `${lines.join('\n')}\n`);
    const { report, text } = await analyze({ path: path.join(root, 'app', 'trend.log') });
    expect(report.trends).toMatchObject({
      windowHours: 6,
      from: '2024-03-01T18:00:00.000Z',
      to: '2024-03-01T23:00:00.000Z',
      baselineHours: 18,
      newCount: 1,
      spikingCount: 1,
    });
    expect(report.trends.new.map(brief)).toEqual([['disk <*> failing: read error', 'ERROR', 3]]);
    expect(report.trends.spiking.map(brief)).toEqual([['request timed out after <*> s', 'WARN', 156]]);
    expect(report.trends.spiking[0]).toMatchObject({ recentEvents: 120, spikeFactor: 10, trend: 'spike' });
    // Issue 26 item 12: the spike's example is a line from the spike (the latest hour), not the first one at 00:10.
    expect(report.trends.spiking[0]?.example).toMatch(/^2024-03-01T23:\d\d:00\.000Z WARN request timed out/);
    expect(report.templates.find((t) => t.template === 'heartbeat ok')?.example).toMatch(/^2024-03-01T00:00:00\.000Z/);
    expect(report.templates.find((t) => t.template === 'heartbeat ok')?.trend).toBeNull();
    expect(text).toContain('New or spiking in the last 6 h (from 2024-03-01 18:00:00 UTC), against the 18 h before:');
    expect(text).toContain('  NEW ERROR   3 × disk <*> failing: read error');
    expect(text).toContain('  SPIKE x10   120 in 6 h (156 in all) × request timed out after <*> s');
    // 24 columns; N in the hour of the first disk error (21:00), S in the busiest hour of the spike (18:00).
    expect(text).toMatch(/\n {2}new\/spike {3}( {18})S {2}N\n/);
  });

  it('issue 26 item 12: a gap in the scan (an old file beside a current one) does not turn the earlier rate into ~0: the baseline is the 42 h before the window', async () => {
    const lines: string[] = [];
    const at = (year: number, hour: number, minute: number) => new Date(Date.UTC(year, 2, 1, hour, minute)).toISOString();
    // A year earlier: one burst of the same message, then silence.
    for (let m = 0; m < 30; m++) lines.push(`${at(2023, 12, m)} WARN request timed out after 30 s`);
    // Now: five an hour for two days, the same five an hour in the last six hours (no spike), plus a real one.
    for (let hour = 0; hour < 48; hour++) {
      const day = hour < 24 ? 0 : 1;
      const stamp = (minute: number) => new Date(Date.UTC(2024, 2, 1 + day, hour % 24, minute)).toISOString();
      for (let m = 0; m < 5; m++) lines.push(`${stamp(m)} WARN request timed out after 30 s`);
      for (let m = 0; m < (hour >= 42 ? 10 : 1); m++) lines.push(`${stamp(20 + m)} ERROR queue full, dropped message ${hour}-${m}`);
    }
    await writeFile(path.join(root, 'app', 'gap.log'), `${lines.join('\n')}\n`);
    const { report, text } = await analyze({ path: path.join(root, 'app', 'gap.log') });
    expect(report.trends.baselineHours).toBe(42);
    expect(text).toContain('against the 42 h before:');
    // Steady at five an hour: no spike, whatever the year before holds (the whole span gave x~1,460).
    expect(report.templates.find((t) => t.template.startsWith('request timed out'))?.trend).toBeNull();
    // A real spike is still one: ten an hour against one an hour.
    expect(report.trends.spiking.map((t) => [t.template, t.spikeFactor])).toEqual([['queue full, dropped message <*>', 10]]);
  });

  it('issue 26 item 12: a restart (many new templates within seconds) is one NEW BURST line; its warnings stay listed one by one', async () => {
    const lines: string[] = [];
    const at = (hour: number, minute: number, second = 0) => new Date(Date.UTC(2024, 2, 1, hour, minute, second)).toISOString();
    for (let hour = 0; hour < 24; hour++) for (let m = 0; m < 5; m++) lines.push(`${at(hour, m)} INFO heartbeat ok`);
    // The boot at 22:30: 30 lines of different shapes (a template each) within 6 s, one of them a warning.
    for (let i = 0; i < 30; i++) lines.push(`${at(22, 30, Math.floor(i / 5))} kernel: boot ${'stage '.repeat(i + 1).trim()}`);
    lines.push(`${at(22, 30, 6)} WARN kernel: Failure registering capabilities with the kernel`);
    await writeFile(path.join(root, 'app', 'boot.log'), `${lines.join('\n')}\n`);
    const { report, text } = await analyze({ path: path.join(root, 'app', 'boot.log') });
    expect(report.trends.bursts).toEqual([
      {
        from: '2024-03-01T22:30:00.000Z',
        to: '2024-03-01T22:30:05.000Z',
        templates: 30,
        events: 30,
        // ISO lines name no component (syslog lines do: Linux_2k's reboot says "kernel 71, network 2, syslog 2").
        components: [],
        example: expect.stringContaining('kernel: boot stage'),
      },
    ]);
    expect(report.trends.new.map((t) => [t.template, t.severity])).toEqual([[expect.stringContaining('kernel: Failure registering capabilities'), 'WARN']]);
    expect(text).toContain('  NEW BURST   30 templates (30 events) first seen within 5 s from 2024-03-01 22:30:00: a restart or a deployment?');
    expect(text.match(/NEW /g)).toHaveLength(2);
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
    expect(schema.parse({ path: '/x' })).toEqual({ path: '/x', top: 20, detail: 'summary', redact: ['email', 'card'] });
    expect(schema.safeParse({ path: '/x', detail: 'everything' }).success).toBe(false);
    expect(schema.safeParse({ path: '/x', top: 1001 }).success).toBe(false);
    expect(schema.safeParse({ path: '/x', top: 0 }).success).toBe(false);
    expect(schema.safeParse({ path: '/x', redact: ['phone'] }).success).toBe(false);
  });
});

describe('analyze_logs dates', () => {
  let root: string;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    ({ dir: root, cleanup } = await makeTempDir('log-dates'));
  });
  afterEach(() => cleanup());

  async function hours(file: string, lines: string[], mtime: Date, since?: string): Promise<LogScanReport> {
    const full = path.join(root, file);
    await writeFile(full, `${lines.join('\n')}\n`);
    await utimes(full, mtime, mtime);
    const result = await analyzeLogsTool.run(
      analyzeLogsTool.inputSchema.parse({ path: full, detail: 'full', ...(since ? { since } : {}) }),
      makeContext([root]),
    );
    return result.structuredContent as unknown as LogScanReport;
  }

  it('puts a night of syslog around 29 February in its leap year, never on 1 March of another year', async () => {
    const lines = [
      'Feb 28 23:59:58 web sshd[1]: Accepted publickey for alice',
      'Feb 29 00:00:01 web sshd[1]: Accepted publickey for bob',
      'Feb 29 23:59:59 web sshd[1]: Accepted publickey for carol',
      'Mar  1 00:00:02 web sshd[1]: Accepted publickey for dave',
    ];
    // Read in 2026 (the file was last written on 1 March 2024).
    const report = await hours('syslog', lines, new Date('2024-03-01T00:00:03Z'));
    expect(Object.keys(report.perHour)).toEqual(['2024-02-28T23:00Z', '2024-02-29T00:00Z', '2024-02-29T23:00Z', '2024-03-01T00:00Z']);
    // A file last modified later: still the latest leap year before it, never an impossible date.
    const later = await hours('syslog.1', lines.slice(1, 3), new Date('2026-12-01T00:00:00Z'));
    expect(Object.keys(later.perHour)).toEqual(['2024-02-29T00:00Z', '2024-02-29T23:00Z']);
  });

  it('moves to the next year across New Year, in file order', async () => {
    const report = await hours(
      'messages',
      ['Dec 31 23:59:00 host app: late', 'Dec 31 23:59:59 host app: later', 'Jan  1 00:00:01 host app: early', 'Jan  2 08:00:00 host app: next'],
      new Date('2025-01-02T08:00:01Z'),
    );
    expect(Object.keys(report.perHour)).toEqual(['2024-12-31T23:00Z', '2025-01-01T00:00Z', '2025-01-02T08:00Z']);
  });

  it('takes the year from a date inside a message (Linux ftpd) over the mtime, so an old log is not placed this year', async () => {
    const lines = [
      'Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0',
      'Jun 17 07:07:00 combo ftpd[29504]: connection from 24.54.76.216 () at Fri Jun 17 07:07:00 2005',
    ];
    const report = await hours('old.log', lines, new Date('2026-12-01T00:00:00Z'), '2020-01-01');
    // Both lines are from 2005, so since 2020 skips them.
    expect(report).toMatchObject({ lines: 0, linesBeforeSince: 2 });
    const all = await hours('old2.log', lines, new Date('2026-12-01T00:00:00Z'));
    expect(Object.keys(all.perHour)).toEqual(['2005-06-14T15:00Z', '2005-06-17T07:00Z']);
  });

  it('parses epoch seconds where a header has them (HPC)', async () => {
    const report = await hours(
      'hpc.log',
      ['134681 node-246 unix.hw state_change.unavailable 1077804742 1 Component State Change: Component alt0 is in the unavailable state'],
      new Date(),
    );
    expect(Object.keys(report.perHour)).toEqual(['2004-02-26T14:00Z']);
    expect(report.templates[0]?.template).toBe('Component State Change: Component alt<*> is in the unavailable state');
  });
});
