/**
 * Issue 28, `--upstream` at start: a bad spec or a policy rule that names no upstream tool is a usage error (exit 64)
 * reported before anything is written; an upstream that cannot be started is one line naming it and its last words
 * (exit 1), and its process is gone, with what a launcher (`sh -c`) in front of it started; a stdio upstream given
 * this server's data directory is refused (exit 64) unless allowed by name. Both roles; the real server-everything
 * and server-filesystem over stdio.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { goneWithin, stillRunning } from '../helpers/process-alive.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { everythingStdio, filesystemServer, shellSpec, stdioSpec } from '../helpers/upstream-servers.js';
import { ensureBuilt, MAIN } from './support.js';

const temp = makeTempDir();
const SIZES = join(import.meta.dirname, '..', 'fixtures', 'upstream-sizes.mjs');

beforeAll(() => ensureBuilt());
afterAll(() => temp.remove());

function start(role: 'serve' | 'worker', name: string, extra: string[]) {
  const dataDir = join(temp.dir, `${role}-${name}`);
  const args = [MAIN, role, '--data-dir', dataDir, '--no-builtins', '--log-level', 'warn', ...(role === 'serve' ? ['--port', '0'] : []), ...extra];
  const result = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, lines: result.stderr.trim().split('\n'), dataDir };
}

describe.each(['serve', 'worker'] as const)('%s --upstream at start', (role) => {
  it('specs without a name, of an unknown kind or with an unterminated quote: every problem at once, exit 64, nothing written', () => {
    const result = start(role, 'bad-spec', ['--upstream', 'stdio:node server.js', '--upstream', 'x=ftp://host/mcp', '--upstream', 'y=stdio:node "server.js']);
    expect(result.status).toBe(64);
    expect(result.lines[0]).toBe('mcp-tasks: invalid configuration (3 problems):');
    expect(result.lines.slice(1).join('\n')).toMatch(
      /give the upstream a name first[\s\S]*give stdio:<command …> or an http\(s\):\/\/ URL[\s\S]*unterminated double quote/,
    );
    expect(existsSync(join(result.dataDir, 'tasks.db'))).toBe(false);
  });

  it('an upstream that exits at once: one line naming it and its last output, exit 1, nothing written', () => {
    const script = join(temp.dir, 'dies.mjs');
    writeFileSync(script, "console.error('cannot open config /etc/nowhere.json'); process.exit(3);\n");
    const result = start(role, 'dies', ['--upstream', `dies=stdio:'${process.execPath}' '${script}'`]);
    expect(result.status).toBe(1);
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]).toMatch(
      /^mcp-tasks: cannot start upstream dies \(stdio: .*dies\.mjs\): .*; its last output: cannot open config \/etc\/nowhere\.json$/,
    );
    expect(existsSync(join(result.dataDir, 'tasks.db'))).toBe(false);
  });

  it('an upstreamTools rule that names no upstream tool: exit 64 naming it and the tools there are', () => {
    const config = join(temp.dir, `${role}-rules.json`);
    writeFileSync(config, JSON.stringify({ upstreams: [everythingStdio('everything')], upstreamTools: { everything_eccho: { idempotent: true } } }));
    const result = start(role, 'rules', ['--config', config]);
    expect(result.status).toBe(64);
    expect(result.lines.at(-1)).toMatch(/^mcp-tasks: upstreamTools names no upstream tool: everything_eccho \(upstream tools: everything_echo, .*\)$/);
  });

  it('a stdio upstream given a directory holding the data directory: exit 64, one line naming it and the argument, nothing written; allowed by name, or given a sibling, it starts', () => {
    // A rule that names no tool makes a started upstream end in exit 64 too, after its tools were listed: the
    // message tells which check stopped the start.
    const config = join(temp.dir, `${role}-fs-rules.json`);
    writeFileSync(config, JSON.stringify({ upstreamTools: { files_nope: { idempotent: true } } }));
    const files = (directory: string) => ['--config', config, '--upstream', stdioSpec('files', [process.execPath, filesystemServer(), directory])];
    const refused = start(role, 'fs-parent', files(temp.dir));
    expect(refused.status).toBe(64);
    expect(refused.lines).toEqual([
      `mcp-tasks: upstream files: its argument "${temp.dir}" reaches this server's data directory (${refused.dataDir}), which it could read; give it a directory without this server's state, or set upstreamsAllowDataDir: ["files"] (--upstream-allow-data-dir files) if it must`,
    ]);
    expect(existsSync(join(refused.dataDir, 'tasks.db'))).toBe(false);
    // The configuration file is server state too (it may hold the secret): a directory holding it is refused alike.
    const settingsDir = join(temp.dir, `${role}-settings`);
    mkdirSync(settingsDir, { recursive: true });
    const withSecret = join(settingsDir, 'mcp-tasks.json');
    writeFileSync(withSecret, JSON.stringify({ secret: 'config-file-secret-0123456789abcdef' }));
    const configRefused = start(role, 'fs-config', [
      '--config',
      withSecret,
      '--upstream',
      stdioSpec('files', [process.execPath, filesystemServer(), settingsDir]),
    ]);
    expect(configRefused.status).toBe(64);
    expect(configRefused.lines).toEqual([
      expect.stringContaining(`mcp-tasks: upstream files: its argument "${settingsDir}" reaches this server's configuration file (${withSecret})`),
    ]);
    expect(configRefused.lines.join('\n')).not.toContain('config-file-secret');
    // The rest judges the same shared check (cli/upstream-settings.ts) by the upstreams it lets start: once, for serve.
    if (role === 'worker') return;
    // The data directory itself, named relative to the working directory, and a file inside it.
    const itself = start(role, 'fs-itself', files(join(temp.dir, `${role}-fs-itself`, '.')));
    expect(itself.lines[0]).toMatch(/^mcp-tasks: upstream files: its argument ".*" reaches this server's data directory/);
    const allowed = start(role, 'fs-allowed', [...files(temp.dir), '--upstream-allow-data-dir', 'files']);
    expect(allowed.lines.at(-1)).toMatch(/^mcp-tasks: upstreamTools names no upstream tool: files_nope \(upstream tools: .*files_read_text_file/);
    const sibling = join(temp.dir, 'documents');
    mkdirSync(sibling, { recursive: true });
    const beside = start(role, 'fs-sibling', files(sibling));
    expect(beside.lines.at(-1)).toMatch(/^mcp-tasks: upstreamTools names no upstream tool: files_nope /);
    const unknown = start(role, 'fs-unknown', [...files(sibling), '--upstream-allow-data-dir', 'fils']);
    expect(unknown.lines).toEqual(['mcp-tasks: upstreamsAllowDataDir names no stdio upstream: fils (stdio upstreams: files)']);
  });
});

describe('serve --upstream: the start timeout', () => {
  // Lives in the shared upstream connection (src/upstream/connection.ts), which worker uses too: proven once.
  it('an upstream that never answers initialize: exit 1 after upstreamStartTimeoutMs, one line, and its process is gone', async () => {
    const pidFile = join(temp.dir, 'serve-silent.pid');
    const started = Date.now();
    const result = start('serve', 'silent', [
      '--upstream-start-timeout-ms',
      '1500',
      '--upstream',
      stdioSpec('silent', [process.execPath, SIZES, '--silent', '--pid-file', pidFile]),
    ]);
    expect(result.status).toBe(1);
    expect(result.lines).toEqual([
      expect.stringMatching(/^mcp-tasks: cannot start upstream silent \(stdio: .*\): no answer to initialize and tools\/list within 1500 ms$/),
    ]);
    // Not the SDK's 60 s: our timeout, and the few seconds the child is given to end.
    expect(Date.now() - started).toBeLessThan(30_000);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    expect(pid).toBeGreaterThan(0);
    expect(await stillRunning(pid)).toBe(false);
  });

  it('the same through a launcher (sh -c): the server the launcher started is gone too, not only the launcher', async () => {
    const pidFile = join(temp.dir, 'serve-silent-shell.pid');
    const result = start('serve', 'silent-shell', [
      '--upstream-start-timeout-ms',
      '1500',
      '--upstream',
      shellSpec('silent', [process.execPath, SIZES, '--silent', '--pid-file', pidFile]),
    ]);
    expect(result.status).toBe(1);
    expect(result.lines).toEqual([
      expect.stringMatching(/^mcp-tasks: cannot start upstream silent \(stdio: sh -c .*\): no answer to initialize and tools\/list within 1500 ms$/),
    ]);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    expect(pid).toBeGreaterThan(0);
    expect(await goneWithin(pid)).toBe(true);
  });
});
