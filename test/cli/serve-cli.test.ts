import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { makeTempDir } from '../helpers/temp-dir.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

function serve(args: string[]): { status: number | null; stderr: string } {
  const temp = makeTempDir();
  try {
    const result = spawnSync(process.execPath, [MAIN, 'serve', '--data-dir', temp.dir, ...args], { encoding: 'utf8', timeout: 20_000 });
    return { status: result.status, stderr: result.stderr };
  } finally {
    temp.remove();
  }
}

describe('mcp-tasks serve start-up checks', () => {
  it('refuses a non-loopback bind without --auth (exit 64) unless --allow-remote-unauthenticated is given', () => {
    const refused = serve(['--host', '0.0.0.0', '--port', '0']);
    expect(refused.status).toBe(64);
    expect(refused.stderr).toMatch(/refusing to listen on 0\.0\.0\.0 without --auth/);
  });

  it('reports invalid settings (runtime limit above the maximum TTL) before serving, as a usage error', () => {
    const invalid = serve(['--port', '0', '--runtime-limit-ms', '7200000', '--max-ttl-ms', '3600000']);
    expect(invalid.status).toBe(64);
    expect(invalid.stderr).toMatch(/runtimeLimitMs \(7200000\) must not exceed maxTtlMs \(3600000\)/);
  });

  it('refuses a TTL policy under which a run to the runtime limit keeps its result less than --min-result-retention-ms', () => {
    const short = serve(['--port', '0', '--runtime-limit-ms', '3600000', '--default-ttl-ms', '3660000']);
    expect(short.status).toBe(64);
    expect(short.stderr).toMatch(/defaultTtlMs \(3660000\) must exceed runtimeLimitMs \(3600000\) by at least minResultRetentionMs \(600000\)/);
    const shorter = serve(['--port', '0', '--runtime-limit-ms', '3600000', '--default-ttl-ms', '3660000', '--min-result-retention-ms', '120000']);
    expect(shorter.stderr).toMatch(/by at least minResultRetentionMs \(120000\): a task that runs to the runtime limit would keep its result only 60000 ms/);
  });

  it('rejects a malformed --auth spec and an unreadable token file', () => {
    expect(serve(['--port', '0', '--auth', 'oauth:x']).stderr).toMatch(/expected tokens:<file>/);
    const missing = serve(['--port', '0', '--auth', 'tokens:/nonexistent/tokens.json']);
    expect(missing.status).toBe(64);
    expect(missing.stderr).toMatch(/cannot read token file/);
  });
});

describe('mcp-tasks serve refuses bad settings before touching the data directory', () => {
  function serveIn(args: string[], env: Record<string, string> = {}) {
    const temp = makeTempDir();
    try {
      const result = spawnSync(process.execPath, [MAIN, 'serve', '--data-dir', temp.dir, ...args], {
        encoding: 'utf8',
        timeout: 20_000,
        env: { ...process.env, ...env },
      });
      return { status: result.status, stderr: result.stderr, wroteStore: existsSync(join(temp.dir, 'tasks.db')) };
    } finally {
      temp.remove();
    }
  }

  it('a non-loopback bind needs a Host allow-list even with authentication (DNS rebinding)', () => {
    const tokens = makeTempDir();
    try {
      const file = join(tokens.dir, 'tokens.json');
      writeFileSync(file, JSON.stringify({ tokens: [{ token: 'a-long-enough-token-1', issuer: 'i', subject: 's', tenant: 't' }] }));
      const result = serveIn(['--host', '0.0.0.0', '--port', '0', '--auth', `tokens:${file}`]);
      expect(result.status).toBe(64);
      expect(result.stderr).toMatch(/needs --allowed-hosts/);
    } finally {
      tokens.remove();
    }
  });

  it('bad port, log level, short secret and missing tool module are usage errors and create no store', () => {
    for (const [args, env, message] of [
      [['--port', '99999'], {}, /http\.port \(flag --port\): Too big/],
      [['--port', '0', '--log-level', 'loud'], {}, /logLevel \(flag --log-level\): Invalid option/],
      [['--port', '0'], { MCP_TASKS_SECRET: 'abc' }, /secret \(env MCP_TASKS_SECRET\): must be at least 16 bytes/],
      [['--port', '0', '--tools', '/nonexistent/tools.js'], {}, /nonexistent/],
    ] as const) {
      const result = serveIn([...args], env);
      expect(result.status, args.join(' ')).toBe(64);
      expect(result.stderr).toMatch(message);
      expect(result.wroteStore).toBe(false);
    }
  });

  it('a busy port is reported before the store is opened', async () => {
    const blocker = createServer();
    await new Promise<void>((resolveListen) => blocker.listen(0, '127.0.0.1', () => resolveListen()));
    try {
      const { port } = blocker.address() as AddressInfo;
      const result = serveIn(['--port', String(port)]);
      expect(result.status).toBe(64);
      expect(result.stderr).toMatch(/already in use/);
      expect(result.wroteStore).toBe(false);
    } finally {
      blocker.close();
    }
  });

  it('a token file listing one token twice, or a token with spaces, is refused', () => {
    const tokens = makeTempDir();
    try {
      const twice = join(tokens.dir, 'twice.json');
      writeFileSync(
        twice,
        JSON.stringify({
          tokens: [
            { token: 'same-token-0123456789', issuer: 'i', subject: 'alice', tenant: 't' },
            { token: 'same-token-0123456789', issuer: 'i', subject: 'bob', tenant: 't' },
          ],
        }),
      );
      expect(serveIn(['--port', '0', '--auth', `tokens:${twice}`]).stderr).toMatch(/listed twice/);
      const spaced = join(tokens.dir, 'spaced.json');
      writeFileSync(spaced, JSON.stringify({ tokens: [{ token: 'has space in it 1234567', issuer: 'i', subject: 's', tenant: 't' }] }));
      expect(serveIn(['--port', '0', '--auth', `tokens:${spaced}`]).stderr).toMatch(/bearer-token characters/);
    } finally {
      tokens.remove();
    }
  });
});
