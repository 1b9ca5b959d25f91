/**
 * check_infrastructure against loopback servers the test starts (issue 17): HTTP up, slow, answering 503 and
 * down; HTTPS with a certificate near expiry (trusted through a CA file in the roots) and one nobody trusts; a
 * TCP port; a configuration file changed between two runs, diffed with its secrets redacted. Nothing leaves
 * loopback. The per-owner snapshot goes through ctx.ownerState (here the test context's; the real store is in
 * test/e2e/check-infrastructure.test.ts).
 */
import { writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createServer as createTcpServer } from 'node:net';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { type AnyToolDefinition, ToolInputError } from '../../src/core/tool.js';
import { TargetPolicy } from '../../src/tools/check-infrastructure/targets.js';
import type { InfrastructureReport } from '../../src/tools/check-infrastructure/tool.js';
import { checkInfrastructureTool } from '../../src/tools/check-infrastructure/tool.js';
import { selfSignedCertificate } from '../helpers/self-signed.js';
import { makeContext, makeTempDir, type RecordingContext } from './helpers.js';

const DAY = 86_400_000;
// Assembled at run time so that no scanner flags this file.
const DB_PASSWORD_1 = ['Zq8', 'Wn2Lx5Rv9'].join('');
const DB_PASSWORD_2 = ['Tk3', 'Mp7Yc1Hd4'].join('');

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

describe('check_infrastructure', () => {
  let root: string;
  let cleanup: () => Promise<void>;
  const closers: (() => Promise<void>)[] = [];
  let tool: AnyToolDefinition;

  async function listen(server: Server | ReturnType<typeof createTcpServer>): Promise<number> {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    closers.push(
      () =>
        new Promise<void>((resolve) => {
          (server as Server).closeAllConnections?.();
          server.close(() => resolve());
        }),
    );
    return (server.address() as AddressInfo).port;
  }
  const http = (handler: Handler) => listen(createHttpServer(handler));

  beforeEach(async () => {
    ({ dir: root, cleanup } = await makeTempDir('check-infra'));
    tool = checkInfrastructureTool(['127.0.0.1']);
  });
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
    await cleanup();
  });

  async function check(args: Record<string, unknown>, context: RecordingContext = makeContext([root])) {
    const result = await tool.run(tool.inputSchema.parse({ detail: 'full', ...args }), context);
    tool.outputSchema?.parse(result.structuredContent);
    return {
      report: result.structuredContent as unknown as InfrastructureReport,
      text: (result.content[0] as { text: string }).text,
      context,
      isError: result.isError === true,
    };
  }

  it('marks its result isError as errorOn says (default: a target is down), so a scheduled run can fail on it; the report is the same', async () => {
    const ok = await http((_q, r) => r.end('ok'));
    const slow = await http((_q, r) => void setTimeout(() => r.end('late'), 300));
    const closed = await http(() => {});
    await closers.pop()?.();
    const healthy = `http://127.0.0.1:${ok}/`;
    const lagging = { url: `http://127.0.0.1:${slow}/`, slowMs: 100 };
    const down = `http://127.0.0.1:${closed}/`;
    const runs = [
      [{ targets: [healthy, down] }, true],
      [{ targets: [healthy, down], errorOn: 'never' }, false],
      [{ targets: [healthy, lagging] }, false], // slow is a problem, not down
      [{ targets: [healthy, lagging], errorOn: 'problem' }, true],
      [{ targets: [healthy], errorOn: 'problem' }, false],
    ] as const;
    for (const [args, failing] of runs) {
      const { isError, report } = await check({ ...args, updateBaseline: false });
      expect(isError, JSON.stringify(args)).toBe(failing);
      expect(report.summary.targets).toBe(args.targets.length);
    }
  });

  it('reports what is down, slow, answering 503, expiring and untrusted, and what is fine, with the raw results', async () => {
    const ok = await http((_q, r) => r.end('ok'));
    const slow = await http((_q, r) => void setTimeout(() => r.end('late'), 400));
    const failing = await http((_q, r) => {
      r.statusCode = 503;
      r.end();
    });
    const closed = await http(() => {});
    await closers.pop()?.();
    const soon = selfSignedCertificate({ notAfter: new Date(Date.now() + 3 * DAY), commonName: 'soon' });
    const expiring = await listen(createHttpsServer({ key: soon.key, cert: soon.cert }, (_q, r) => r.end('tls')));
    await writeFile(path.join(root, 'ca.pem'), soon.cert);
    const stranger = selfSignedCertificate({ notAfter: new Date(Date.now() + 300 * DAY), commonName: 'stranger' });
    const untrusted = await listen(createHttpsServer({ key: stranger.key, cert: stranger.cert }, (_q, r) => r.end('tls')));
    const tcp = await listen(createTcpServer((socket) => socket.end()));

    const { report, text, context } = await check({
      // Only the slow target has a tight bound: on a loaded machine a loopback TLS handshake can take a second.
      slowMs: 10_000,
      targets: [
        `http://127.0.0.1:${ok}/healthz`,
        { url: `http://127.0.0.1:${slow}/`, slowMs: 200, name: 'slow api' },
        `http://127.0.0.1:${failing}/`,
        `http://127.0.0.1:${closed}/`,
        { url: `https://127.0.0.1:${expiring}/`, ca: path.join(root, 'ca.pem') },
        `https://127.0.0.1:${untrusted}/`,
        `tcp://127.0.0.1:${tcp}`,
      ],
    });
    const byName = Object.fromEntries(report.results.map((r) => [r.name, r]));
    expect(byName[`GET http://127.0.0.1:${ok}/healthz`]).toMatchObject({ status: 'ok', httpStatus: 200, problems: [] });
    expect(byName['slow api']).toMatchObject({ status: 'slow', httpStatus: 200, details: [expect.stringMatching(/^\d{3,} ms, slower than 200 ms$/)] });
    expect(byName[`GET http://127.0.0.1:${failing}/`]).toMatchObject({ status: 'down', httpStatus: 503, details: ['HTTP 503'] });
    expect(byName[`GET http://127.0.0.1:${closed}/`]).toMatchObject({ status: 'down', httpStatus: null, error: expect.stringContaining('ECONNREFUSED') });
    const near = byName[`GET https://127.0.0.1:${expiring}/`];
    expect(near).toMatchObject({ status: 'expiring', problems: ['expiring'], tls: { trusted: true, trustError: null, daysLeft: 2, subject: 'CN=soon' } });
    expect(near?.tls?.validTo.slice(0, 10)).toBe(new Date(soon.x509.validTo).toISOString().slice(0, 10));
    expect(byName[`GET https://127.0.0.1:${untrusted}/`]).toMatchObject({
      status: 'untrusted',
      tls: { trusted: false, trustError: expect.stringMatching(/SELF_SIGNED|self.signed/i) },
    });
    expect(byName[`tcp 127.0.0.1:${tcp}`]).toMatchObject({ status: 'ok', latencyMs: expect.any(Number) });
    expect(report.summary).toEqual({ targets: 7, ok: 2, down: 2, untrusted: 1, expiring: 1, changed: 0, slow: 1 });
    expect(text).toMatch(
      /^Checked 7 targets in \d+\.\d s \(baseline "default", no earlier run: this run is the baseline\): 2 down, 1 with an untrusted certificate, 1 with a certificate expiring, 1 slow; 2 ok\./,
    );
    // Worst first: the down section precedes the slow one.
    expect(text.indexOf('Down:')).toBeLessThan(text.indexOf('Slow:'));
    expect(text).toContain(`  DOWN      GET http://127.0.0.1:${failing}/ — HTTP 503`);
    expect(text).toMatch(/ {2}EXPIRING {2}GET https:\/\/127\.0\.0\.1:\d+\/ — certificate expires \d{4}-\d{2}-\d{2}, in 2 days/);
    // Progress per target, from 0 to 7.
    expect(context.progressCalls.map(([done, total]) => [done, total])).toEqual(Array.from({ length: 8 }, (_, i) => [i, 7]));
  });

  it('diffs a configuration file against the last run with its secrets redacted, and shows a changed secret as a changed line', async () => {
    const file = path.join(root, 'app.yaml');
    await writeFile(file, `port: 8080\ndb:\n  password: ${DB_PASSWORD_1}\n  pool: 10\nowner: ops@example.com\n`);
    const context = makeContext([root]);
    const first = await check({ targets: [file] }, context);
    expect(first.report.results[0]).toMatchObject({ status: 'ok', file: { changed: null, note: 'no earlier snapshot: this run is the baseline' } });
    expect(first.report.baseline).toMatchObject({ name: 'default', previousRunAt: null, updated: true });
    // The snapshot holds no secret and no personal data.
    const kept = [...context.state.values()].join('');
    expect(kept).not.toContain(DB_PASSWORD_1);
    expect(kept).not.toContain('ops@example.com');

    await writeFile(file, `port: 9090\ndb:\n  password: ${DB_PASSWORD_2}\n  pool: 10\nowner: ops@example.com\n`);
    const second = await check({ targets: [file] }, context);
    const changed = second.report.results[0];
    expect(changed).toMatchObject({ status: 'changed', newSinceLastRun: true, file: { changed: true, previousDigest: first.report.results[0]?.file?.digest } });
    expect(changed?.file?.diff).toContain('-port: 8080');
    expect(changed?.file?.diff).toContain('+port: 9090');
    // The password changed too: a changed line, never an unchanged context line (issue 26 item 14).
    expect(changed?.file?.diff).toContain('-  password: <redacted>');
    expect(changed?.file?.diff).toContain('+  password: <redacted>   (value changed, redacted)');
    const everything = JSON.stringify(second);
    for (const secret of [DB_PASSWORD_1, DB_PASSWORD_2, DB_PASSWORD_1.slice(4), DB_PASSWORD_2.slice(4)]) expect(everything).not.toContain(secret);
    expect(second.report.baseline.previousRunAt).toBe(first.report.checkedAt);
    expect(second.text).toContain('Changed since the last run:');
    expect(second.text).toContain('      +port: 9090');

    // Only the password changes now: a change without a visible difference.
    await writeFile(file, `port: 9090\ndb:\n  password: ${DB_PASSWORD_1}\n  pool: 10\nowner: ops@example.com\n`);
    const third = await check({ targets: [file] }, context);
    expect(third.report.results[0]?.file).toMatchObject({ changed: true, note: null });
    expect(third.report.results[0]?.file?.diff).toContain('+  password: <redacted>   (value changed, redacted)');
    expect(JSON.stringify(third)).not.toContain(DB_PASSWORD_1);
    // And with updateBaseline false, the next run compares with the same snapshot again.
    const fourth = await check({ targets: [file], updateBaseline: false }, context);
    expect(fourth.report.results[0]?.file?.changed).toBe(false);
    expect(fourth.report.baseline.updated).toBe(false);
  });

  it('keeps a snapshot per baseline name, and reports a missing file as down without losing its snapshot', async () => {
    const file = path.join(root, 'nginx.conf');
    await writeFile(file, 'worker_processes 4;\n');
    const context = makeContext([root]);
    await check({ targets: [file], baseline: 'prod' }, context);
    expect((await check({ targets: [file], baseline: 'staging' }, context)).report.results[0]?.file?.changed).toBeNull();
    expect([...context.state.keys()].sort()).toEqual(['baseline:prod', 'baseline:staging']);
    await writeFile(file, 'worker_processes 8;\n');
    const { rm } = await import('node:fs/promises');
    await rm(file);
    expect((await check({ targets: [file], baseline: 'prod' }, context)).report.results[0]).toMatchObject({
      status: 'down',
      error: expect.stringContaining('does not exist'),
    });
    await writeFile(file, 'worker_processes 8;\n');
    expect((await check({ targets: [file], baseline: 'prod' }, context)).report.results[0]).toMatchObject({ status: 'changed', recovered: false });
  });

  it('checks targets with bounded concurrency and a timeout each', async () => {
    let inFlight = 0;
    let most = 0;
    const port = await http((request, response) => {
      inFlight++;
      most = Math.max(most, inFlight);
      setTimeout(() => {
        inFlight--;
        response.end(request.url);
      }, 100);
    });
    const hang = await http(() => {});
    const targets = [...Array.from({ length: 9 }, (_, i) => `http://127.0.0.1:${port}/${i}`), { url: `http://127.0.0.1:${hang}/`, timeoutMs: 300 }];
    const { report } = await check({ targets, concurrency: 3 });
    expect(most).toBe(3);
    expect(report.results.at(-1)).toMatchObject({ status: 'down', error: 'timed out after 300 ms' });
    expect(report.summary.ok).toBe(9);
  });

  it('stops when cancelled, with the abort reason, leaving the snapshot as it was', async () => {
    const hang = await http(() => {});
    const reason = new Error('cancelled by test');
    const context = makeContext([root], (done, _total, ctx) => {
      if (done === 0) setTimeout(() => ctx.controller.abort(reason), 50);
    });
    const started = Date.now();
    await expect(tool.run(tool.inputSchema.parse({ targets: [`http://127.0.0.1:${hang}/`], timeoutMs: 60_000 }), context)).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(context.state.size).toBe(0);
  });

  it('refuses hosts no --check-target allows and files outside the roots before contacting anything', async () => {
    const preflight = (targets: unknown[]) => tool.preflight?.(tool.inputSchema.parse({ targets }), { roots: [root], deniedPaths: [] });
    await expect(preflight(['tcp://10.0.0.1:5432'])).rejects.toThrow(/matches no --check-target pattern \(127\.0\.0\.1\)/);
    await expect(preflight(['http://[::1]:8080/'])).rejects.toBeInstanceOf(ToolInputError);
    const named = checkInfrastructureTool(['*.internal']);
    await expect(named.preflight?.(named.inputSchema.parse({ targets: ['https://example.com/'] }), { roots: [root], deniedPaths: [] })).rejects.toThrow(
      /matches no --check-target pattern \(\*\.internal\)/,
    );
    // A name may resolve into an allowed range: refused at run time when it does not (localhost comes from
    // /etc/hosts, so no DNS query leaves the machine), without a request.
    const ranged = checkInfrastructureTool(['10.0.0.0/8']);
    const run = await ranged.run(ranged.inputSchema.parse({ targets: ['http://localhost:1/'] }), makeContext([root]));
    expect((run.structuredContent as unknown as InfrastructureReport).results[0]).toMatchObject({
      status: 'down',
      error: 'host not allowed by --check-target (10.0.0.0/8)',
    });
    await expect(preflight(['/etc/passwd'])).rejects.toThrow(/outside the allowed roots/);
    await expect(preflight(['ftp://127.0.0.1/'])).rejects.toThrow(/not an http\(s\):\/\/ URL/);
    await expect(preflight(['http://user:secret@127.0.0.1/'])).rejects.toThrow(/credentials/);
    await expect(preflight(['tcp://127.0.0.1'])).rejects.toThrow(/host:port/);
    await expect(preflight(['http://127.0.0.1:1/', 'http://127.0.0.1:1/'])).rejects.toThrow(/listed twice/);
    await expect(preflight([`http://127.0.0.1:8080/`, path.join(root, 'x.conf')])).resolves.toBeUndefined();
    const none = checkInfrastructureTool([]);
    await expect(none.preflight?.(none.inputSchema.parse({ targets: ['http://127.0.0.1:1/'] }), { roots: [root], deniedPaths: [] })).rejects.toThrow(
      /none given: the server checks no network target/,
    );
  });

  it('matches host patterns by name, wildcard, address, range and port', async () => {
    const policy = new TargetPolicy(['db.internal', '*.example.com', '10.0.0.0/8', '[::1]:8443', '127.0.0.1:*']);
    expect(await policy.allow('db.internal', 5432)).toEqual({ host: 'db.internal', address: null });
    expect(await policy.allow('api.example.com', 443)).not.toBeNull();
    expect(await policy.allow('example.com', 443)).toBeNull();
    expect(await policy.allow('10.1.2.3', 22)).toEqual({ host: '10.1.2.3', address: '10.1.2.3' });
    expect(await policy.allow('11.0.0.1', 22)).toBeNull();
    expect(await policy.allow('::1', 8443)).not.toBeNull();
    expect(await policy.allow('::1', 80)).toBeNull();
    expect(await policy.allow('127.0.0.1', 1)).not.toBeNull();
    // A name allowed only by a range: its addresses must all lie in it (localhost resolves to loopback).
    expect(await new TargetPolicy(['127.0.0.0/8']).allow('localhost', 80)).toMatchObject({ host: 'localhost', address: expect.stringMatching(/^127\./) });
    expect(() => new TargetPolicy(['not a host'])).toThrow(RangeError);
    expect(() => new TargetPolicy(['10.0.0.0/40'])).toThrow(RangeError);
  });
});
